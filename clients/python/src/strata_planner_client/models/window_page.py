from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.window_out import WindowOut


T = TypeVar("T", bound="WindowPage")


@_attrs_define
class WindowPage:
    """
    Attributes:
        index_id (str):
        windows (list[WindowOut]):
        compaction_paused_at (datetime.datetime | None | Unset): set while compaction of the index is paused
        retention_period_secs (int | None | Unset): the index's retention period; none: kept
        retention_cutoff (int | None | Unset): windows ending at or before this (epoch seconds) are expired: the next
            retention pass drops them
    """

    index_id: str
    windows: list[WindowOut]
    compaction_paused_at: datetime.datetime | None | Unset = UNSET
    retention_period_secs: int | None | Unset = UNSET
    retention_cutoff: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        index_id = self.index_id

        windows = []
        for windows_item_data in self.windows:
            windows_item = windows_item_data.to_dict()
            windows.append(windows_item)

        compaction_paused_at: None | str | Unset
        if isinstance(self.compaction_paused_at, Unset):
            compaction_paused_at = UNSET
        elif isinstance(self.compaction_paused_at, datetime.datetime):
            compaction_paused_at = self.compaction_paused_at.isoformat()
        else:
            compaction_paused_at = self.compaction_paused_at

        retention_period_secs: int | None | Unset
        if isinstance(self.retention_period_secs, Unset):
            retention_period_secs = UNSET
        else:
            retention_period_secs = self.retention_period_secs

        retention_cutoff: int | None | Unset
        if isinstance(self.retention_cutoff, Unset):
            retention_cutoff = UNSET
        else:
            retention_cutoff = self.retention_cutoff

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index_id": index_id,
                "windows": windows,
            }
        )
        if compaction_paused_at is not UNSET:
            field_dict["compaction_paused_at"] = compaction_paused_at
        if retention_period_secs is not UNSET:
            field_dict["retention_period_secs"] = retention_period_secs
        if retention_cutoff is not UNSET:
            field_dict["retention_cutoff"] = retention_cutoff

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.window_out import WindowOut

        d = dict(src_dict)
        index_id = d.pop("index_id")

        windows = []
        _windows = d.pop("windows")
        for windows_item_data in _windows:
            windows_item = WindowOut.from_dict(windows_item_data)

            windows.append(windows_item)

        def _parse_compaction_paused_at(
            data: object,
        ) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                compaction_paused_at_type_0 = datetime.datetime.fromisoformat(data)

                return compaction_paused_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        compaction_paused_at = _parse_compaction_paused_at(
            d.pop("compaction_paused_at", UNSET)
        )

        def _parse_retention_period_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        retention_period_secs = _parse_retention_period_secs(
            d.pop("retention_period_secs", UNSET)
        )

        def _parse_retention_cutoff(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        retention_cutoff = _parse_retention_cutoff(d.pop("retention_cutoff", UNSET))

        window_page = cls(
            index_id=index_id,
            windows=windows,
            compaction_paused_at=compaction_paused_at,
            retention_period_secs=retention_period_secs,
            retention_cutoff=retention_cutoff,
        )

        window_page.additional_properties = d
        return window_page

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
