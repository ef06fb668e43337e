from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.dropped_window_out import DroppedWindowOut


T = TypeVar("T", bound="RetentionReport")


@_attrs_define
class RetentionReport:
    """
    Attributes:
        index_id (str):
        cutoff (int): windows ending at or before this (epoch seconds) are dropped
        dry_run (bool):
        windows (list[DroppedWindowOut]):
        splits (int):
        rows (int):
        bytes_ (int):
    """

    index_id: str
    cutoff: int
    dry_run: bool
    windows: list[DroppedWindowOut]
    splits: int
    rows: int
    bytes_: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        cutoff = self.cutoff

        dry_run = self.dry_run

        windows = []
        for windows_item_data in self.windows:
            windows_item = windows_item_data.to_dict()
            windows.append(windows_item)

        splits = self.splits

        rows = self.rows

        bytes_ = self.bytes_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "cutoff": cutoff,
                "dry_run": dry_run,
                "windows": windows,
                "splits": splits,
                "rows": rows,
                "bytes": bytes_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.dropped_window_out import DroppedWindowOut

        d = dict(src_dict)
        index_id = d.pop("index_id")

        cutoff = d.pop("cutoff")

        dry_run = d.pop("dry_run")

        windows = []
        _windows = d.pop("windows")
        for windows_item_data in _windows:
            windows_item = DroppedWindowOut.from_dict(windows_item_data)

            windows.append(windows_item)

        splits = d.pop("splits")

        rows = d.pop("rows")

        bytes_ = d.pop("bytes")

        retention_report = cls(
            index_id=index_id,
            cutoff=cutoff,
            dry_run=dry_run,
            windows=windows,
            splits=splits,
            rows=rows,
            bytes_=bytes_,
        )

        retention_report.additional_properties = d
        return retention_report

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
