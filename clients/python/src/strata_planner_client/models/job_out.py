from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.job_out_failure_log_item import JobOutFailureLogItem


T = TypeVar("T", bound="JobOut")


@_attrs_define
class JobOut:
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
        failure_log (list[JobOutFailureLogItem]):
        created_at (datetime.datetime):
        first_assigned_at (datetime.datetime | None):
        finished_at (datetime.datetime | None):
        source_id (str):
        window_start (int):
        window_duration_secs (int):
        kind (str):
        level (int):
        spark_operation_tag (None | str):
        input_split_ids (list[str]):
        input_rows (int):
        input_bytes (int):
        output_split_ids (list[str]):
        output_bytes (int | None):
        assigned_at (datetime.datetime | None):
        duration_secs (float | None):
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
    failure_log: list[JobOutFailureLogItem]
    created_at: datetime.datetime
    first_assigned_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    source_id: str
    window_start: int
    window_duration_secs: int
    kind: str
    level: int
    spark_operation_tag: None | str
    input_split_ids: list[str]
    input_rows: int
    input_bytes: int
    output_split_ids: list[str]
    output_bytes: int | None
    assigned_at: datetime.datetime | None
    duration_secs: float | None
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

        source_id = self.source_id

        window_start = self.window_start

        window_duration_secs = self.window_duration_secs

        kind = self.kind

        level = self.level

        spark_operation_tag: None | str
        spark_operation_tag = self.spark_operation_tag

        input_split_ids = self.input_split_ids

        input_rows = self.input_rows

        input_bytes = self.input_bytes

        output_split_ids = self.output_split_ids

        output_bytes: int | None
        output_bytes = self.output_bytes

        assigned_at: None | str
        if isinstance(self.assigned_at, datetime.datetime):
            assigned_at = self.assigned_at.isoformat()
        else:
            assigned_at = self.assigned_at

        duration_secs: float | None
        duration_secs = self.duration_secs

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
                "source_id": source_id,
                "window_start": window_start,
                "window_duration_secs": window_duration_secs,
                "kind": kind,
                "level": level,
                "spark_operation_tag": spark_operation_tag,
                "input_split_ids": input_split_ids,
                "input_rows": input_rows,
                "input_bytes": input_bytes,
                "output_split_ids": output_split_ids,
                "output_bytes": output_bytes,
                "assigned_at": assigned_at,
                "duration_secs": duration_secs,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_out_failure_log_item import JobOutFailureLogItem

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
            failure_log_item = JobOutFailureLogItem.from_dict(failure_log_item_data)

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

        source_id = d.pop("source_id")

        window_start = d.pop("window_start")

        window_duration_secs = d.pop("window_duration_secs")

        kind = d.pop("kind")

        level = d.pop("level")

        def _parse_spark_operation_tag(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        spark_operation_tag = _parse_spark_operation_tag(d.pop("spark_operation_tag"))

        input_split_ids = cast(list[str], d.pop("input_split_ids"))

        input_rows = d.pop("input_rows")

        input_bytes = d.pop("input_bytes")

        output_split_ids = cast(list[str], d.pop("output_split_ids"))

        def _parse_output_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        output_bytes = _parse_output_bytes(d.pop("output_bytes"))

        def _parse_assigned_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                assigned_at_type_0 = datetime.datetime.fromisoformat(data)

                return assigned_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        assigned_at = _parse_assigned_at(d.pop("assigned_at"))

        def _parse_duration_secs(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        duration_secs = _parse_duration_secs(d.pop("duration_secs"))

        job_out = cls(
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
            source_id=source_id,
            window_start=window_start,
            window_duration_secs=window_duration_secs,
            kind=kind,
            level=level,
            spark_operation_tag=spark_operation_tag,
            input_split_ids=input_split_ids,
            input_rows=input_rows,
            input_bytes=input_bytes,
            output_split_ids=output_split_ids,
            output_bytes=output_bytes,
            assigned_at=assigned_at,
            duration_secs=duration_secs,
        )

        job_out.additional_properties = d
        return job_out

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
