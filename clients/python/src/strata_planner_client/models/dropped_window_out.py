from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="DroppedWindowOut")


@_attrs_define
class DroppedWindowOut:
    """
    Attributes:
        window_start (int):
        window_duration_secs (int):
        splits (int):
        rows (int):
        bytes_ (int):
        cancelled_job_ids (list[str]): live compaction jobs cancelled first (would be, on a dry run)
    """

    window_start: int
    window_duration_secs: int
    splits: int
    rows: int
    bytes_: int
    cancelled_job_ids: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        window_start = self.window_start

        window_duration_secs = self.window_duration_secs

        splits = self.splits

        rows = self.rows

        bytes_ = self.bytes_

        cancelled_job_ids = self.cancelled_job_ids

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "window_start": window_start,
                "window_duration_secs": window_duration_secs,
                "splits": splits,
                "rows": rows,
                "bytes": bytes_,
                "cancelled_job_ids": cancelled_job_ids,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        window_start = d.pop("window_start")

        window_duration_secs = d.pop("window_duration_secs")

        splits = d.pop("splits")

        rows = d.pop("rows")

        bytes_ = d.pop("bytes")

        cancelled_job_ids = cast(list[str], d.pop("cancelled_job_ids"))

        dropped_window_out = cls(
            window_start=window_start,
            window_duration_secs=window_duration_secs,
            splits=splits,
            rows=rows,
            bytes_=bytes_,
            cancelled_job_ids=cancelled_job_ids,
        )

        dropped_window_out.additional_properties = d
        return dropped_window_out

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
