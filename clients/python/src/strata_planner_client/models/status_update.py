from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.status_update_status import StatusUpdateStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.output_split import OutputSplit


T = TypeVar("T", bound="StatusUpdate")


@_attrs_define
class StatusUpdate:
    """
    Attributes:
        job_id (str):
        fencing_token (int):
        status (StatusUpdateStatus):
        stage (None | str | Unset):
        progress (float | None | Unset):
        spark_operation_tag (None | str | Unset):
        error (None | str | Unset):
        outputs (list[OutputSplit] | Unset):
    """

    job_id: str
    fencing_token: int
    status: StatusUpdateStatus
    stage: None | str | Unset = UNSET
    progress: float | None | Unset = UNSET
    spark_operation_tag: None | str | Unset = UNSET
    error: None | str | Unset = UNSET
    outputs: list[OutputSplit] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        fencing_token = self.fencing_token

        status = self.status.value

        stage: None | str | Unset
        if isinstance(self.stage, Unset):
            stage = UNSET
        else:
            stage = self.stage

        progress: float | None | Unset
        if isinstance(self.progress, Unset):
            progress = UNSET
        else:
            progress = self.progress

        spark_operation_tag: None | str | Unset
        if isinstance(self.spark_operation_tag, Unset):
            spark_operation_tag = UNSET
        else:
            spark_operation_tag = self.spark_operation_tag

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        outputs: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.outputs, Unset):
            outputs = []
            for outputs_item_data in self.outputs:
                outputs_item = outputs_item_data.to_dict()
                outputs.append(outputs_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "job_id": job_id,
                "fencing_token": fencing_token,
                "status": status,
            }
        )
        if stage is not UNSET:
            field_dict["stage"] = stage
        if progress is not UNSET:
            field_dict["progress"] = progress
        if spark_operation_tag is not UNSET:
            field_dict["spark_operation_tag"] = spark_operation_tag
        if error is not UNSET:
            field_dict["error"] = error
        if outputs is not UNSET:
            field_dict["outputs"] = outputs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.output_split import OutputSplit

        d = dict(src_dict)
        job_id = d.pop("job_id")

        fencing_token = d.pop("fencing_token")

        status = StatusUpdateStatus(d.pop("status"))

        def _parse_stage(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stage = _parse_stage(d.pop("stage", UNSET))

        def _parse_progress(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        progress = _parse_progress(d.pop("progress", UNSET))

        def _parse_spark_operation_tag(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        spark_operation_tag = _parse_spark_operation_tag(
            d.pop("spark_operation_tag", UNSET)
        )

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        _outputs = d.pop("outputs", UNSET)
        outputs: list[OutputSplit] | Unset = UNSET
        if _outputs is not UNSET:
            outputs = []
            for outputs_item_data in _outputs:
                outputs_item = OutputSplit.from_dict(outputs_item_data)

                outputs.append(outputs_item)

        status_update = cls(
            job_id=job_id,
            fencing_token=fencing_token,
            status=status,
            stage=stage,
            progress=progress,
            spark_operation_tag=spark_operation_tag,
            error=error,
            outputs=outputs,
        )

        return status_update
