from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.indexing_job_out_failure_log_item import IndexingJobOutFailureLogItem
    from ..models.indexing_job_out_skipped_item import IndexingJobOutSkippedItem


T = TypeVar("T", bound="IndexingJobOut")


@_attrs_define
class IndexingJobOut:
    """
    Attributes:
        job_id (str):
        index_uid (str):
        partition_id (str):
        status (str):
        stage (None | str):
        progress (float):
        fencing_token (int | None):
        worker_id (None | str):
        lease_expires_at (datetime.datetime | None):
        failures (int):
        last_error (None | str):
        failure_log (list[IndexingJobOutFailureLogItem]):
        created_at (datetime.datetime):
        first_assigned_at (datetime.datetime | None):
        finished_at (datetime.datetime | None):
        split_id (str):
        reason (str):
        artifact_count (int | None):
        artifact_bytes (int | None):
        skipped (list[IndexingJobOutSkippedItem]):
        updated_at (datetime.datetime):
    """

    job_id: str
    index_uid: str
    partition_id: str
    status: str
    stage: None | str
    progress: float
    fencing_token: int | None
    worker_id: None | str
    lease_expires_at: datetime.datetime | None
    failures: int
    last_error: None | str
    failure_log: list[IndexingJobOutFailureLogItem]
    created_at: datetime.datetime
    first_assigned_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    split_id: str
    reason: str
    artifact_count: int | None
    artifact_bytes: int | None
    skipped: list[IndexingJobOutSkippedItem]
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        index_uid = self.index_uid

        partition_id = self.partition_id

        status = self.status

        stage: None | str
        stage = self.stage

        progress = self.progress

        fencing_token: int | None
        fencing_token = self.fencing_token

        worker_id: None | str
        worker_id = self.worker_id

        lease_expires_at: None | str
        if isinstance(self.lease_expires_at, datetime.datetime):
            lease_expires_at = self.lease_expires_at.isoformat()
        else:
            lease_expires_at = self.lease_expires_at

        failures = self.failures

        last_error: None | str
        last_error = self.last_error

        failure_log = []
        for failure_log_item_data in self.failure_log:
            failure_log_item = failure_log_item_data.to_dict()
            failure_log.append(failure_log_item)

        created_at = self.created_at.isoformat()

        first_assigned_at: None | str
        if isinstance(self.first_assigned_at, datetime.datetime):
            first_assigned_at = self.first_assigned_at.isoformat()
        else:
            first_assigned_at = self.first_assigned_at

        finished_at: None | str
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        split_id = self.split_id

        reason = self.reason

        artifact_count: int | None
        artifact_count = self.artifact_count

        artifact_bytes: int | None
        artifact_bytes = self.artifact_bytes

        skipped = []
        for skipped_item_data in self.skipped:
            skipped_item = skipped_item_data.to_dict()
            skipped.append(skipped_item)

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "index_uid": index_uid,
                "partition_id": partition_id,
                "status": status,
                "stage": stage,
                "progress": progress,
                "fencing_token": fencing_token,
                "worker_id": worker_id,
                "lease_expires_at": lease_expires_at,
                "failures": failures,
                "last_error": last_error,
                "failure_log": failure_log,
                "created_at": created_at,
                "first_assigned_at": first_assigned_at,
                "finished_at": finished_at,
                "split_id": split_id,
                "reason": reason,
                "artifact_count": artifact_count,
                "artifact_bytes": artifact_bytes,
                "skipped": skipped,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.indexing_job_out_failure_log_item import (
            IndexingJobOutFailureLogItem,
        )
        from ..models.indexing_job_out_skipped_item import IndexingJobOutSkippedItem

        d = dict(src_dict)
        job_id = d.pop("job_id")

        index_uid = d.pop("index_uid")

        partition_id = d.pop("partition_id")

        status = d.pop("status")

        def _parse_stage(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        stage = _parse_stage(d.pop("stage"))

        progress = d.pop("progress")

        def _parse_fencing_token(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        fencing_token = _parse_fencing_token(d.pop("fencing_token"))

        def _parse_worker_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        worker_id = _parse_worker_id(d.pop("worker_id"))

        def _parse_lease_expires_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                lease_expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return lease_expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        lease_expires_at = _parse_lease_expires_at(d.pop("lease_expires_at"))

        failures = d.pop("failures")

        def _parse_last_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        failure_log = []
        _failure_log = d.pop("failure_log")
        for failure_log_item_data in _failure_log:
            failure_log_item = IndexingJobOutFailureLogItem.from_dict(
                failure_log_item_data
            )

            failure_log.append(failure_log_item)

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_first_assigned_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                first_assigned_at_type_0 = datetime.datetime.fromisoformat(data)

                return first_assigned_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        first_assigned_at = _parse_first_assigned_at(d.pop("first_assigned_at"))

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        split_id = d.pop("split_id")

        reason = d.pop("reason")

        def _parse_artifact_count(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        artifact_count = _parse_artifact_count(d.pop("artifact_count"))

        def _parse_artifact_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        artifact_bytes = _parse_artifact_bytes(d.pop("artifact_bytes"))

        skipped = []
        _skipped = d.pop("skipped")
        for skipped_item_data in _skipped:
            skipped_item = IndexingJobOutSkippedItem.from_dict(skipped_item_data)

            skipped.append(skipped_item)

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        indexing_job_out = cls(
            job_id=job_id,
            index_uid=index_uid,
            partition_id=partition_id,
            status=status,
            stage=stage,
            progress=progress,
            fencing_token=fencing_token,
            worker_id=worker_id,
            lease_expires_at=lease_expires_at,
            failures=failures,
            last_error=last_error,
            failure_log=failure_log,
            created_at=created_at,
            first_assigned_at=first_assigned_at,
            finished_at=finished_at,
            split_id=split_id,
            reason=reason,
            artifact_count=artifact_count,
            artifact_bytes=artifact_bytes,
            skipped=skipped,
            updated_at=updated_at,
        )

        indexing_job_out.additional_properties = d
        return indexing_job_out

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
