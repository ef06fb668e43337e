from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.window_out_levels import WindowOutLevels


T = TypeVar("T", bound="WindowOut")


@_attrs_define
class WindowOut:
    """
    Attributes:
        window_start (int):
        window_duration_secs (int):
        splits (int):
        rows (int):
        bytes_ (int):
        levels (WindowOutLevels):
        live_jobs (int):
        marked_for_deletion (int):
        closed (bool):
        last_compacted_at (datetime.datetime | None):
        expired (bool | Unset):  Default: False.
        dropped_at (datetime.datetime | None | Unset):
        splits_waiting (int | Unset):  Default: 0.
        bytes_waiting (int | Unset):  Default: 0.
        oldest_waiting_split_age_secs (float | None | Unset):
        final (bool | Unset): closed, and no merge is left to do in it Default: False.
    """

    window_start: int
    window_duration_secs: int
    splits: int
    rows: int
    bytes_: int
    levels: WindowOutLevels
    live_jobs: int
    marked_for_deletion: int
    closed: bool
    last_compacted_at: datetime.datetime | None
    expired: bool | Unset = False
    dropped_at: datetime.datetime | None | Unset = UNSET
    splits_waiting: int | Unset = 0
    bytes_waiting: int | Unset = 0
    oldest_waiting_split_age_secs: float | None | Unset = UNSET
    final: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        window_start = self.window_start

        window_duration_secs = self.window_duration_secs

        splits = self.splits

        rows = self.rows

        bytes_ = self.bytes_

        levels = self.levels.to_dict()

        live_jobs = self.live_jobs

        marked_for_deletion = self.marked_for_deletion

        closed = self.closed

        last_compacted_at: None | str
        if isinstance(self.last_compacted_at, datetime.datetime):
            last_compacted_at = self.last_compacted_at.isoformat()
        else:
            last_compacted_at = self.last_compacted_at

        expired = self.expired

        dropped_at: None | str | Unset
        if isinstance(self.dropped_at, Unset):
            dropped_at = UNSET
        elif isinstance(self.dropped_at, datetime.datetime):
            dropped_at = self.dropped_at.isoformat()
        else:
            dropped_at = self.dropped_at

        splits_waiting = self.splits_waiting

        bytes_waiting = self.bytes_waiting

        oldest_waiting_split_age_secs: float | None | Unset
        if isinstance(self.oldest_waiting_split_age_secs, Unset):
            oldest_waiting_split_age_secs = UNSET
        else:
            oldest_waiting_split_age_secs = self.oldest_waiting_split_age_secs

        final = self.final

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "window_start": window_start,
                "window_duration_secs": window_duration_secs,
                "splits": splits,
                "rows": rows,
                "bytes": bytes_,
                "levels": levels,
                "live_jobs": live_jobs,
                "marked_for_deletion": marked_for_deletion,
                "closed": closed,
                "last_compacted_at": last_compacted_at,
            }
        )
        if expired is not UNSET:
            field_dict["expired"] = expired
        if dropped_at is not UNSET:
            field_dict["dropped_at"] = dropped_at
        if splits_waiting is not UNSET:
            field_dict["splits_waiting"] = splits_waiting
        if bytes_waiting is not UNSET:
            field_dict["bytes_waiting"] = bytes_waiting
        if oldest_waiting_split_age_secs is not UNSET:
            field_dict["oldest_waiting_split_age_secs"] = oldest_waiting_split_age_secs
        if final is not UNSET:
            field_dict["final"] = final

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.window_out_levels import WindowOutLevels

        d = dict(src_dict)
        window_start = d.pop("window_start")

        window_duration_secs = d.pop("window_duration_secs")

        splits = d.pop("splits")

        rows = d.pop("rows")

        bytes_ = d.pop("bytes")

        levels = WindowOutLevels.from_dict(d.pop("levels"))

        live_jobs = d.pop("live_jobs")

        marked_for_deletion = d.pop("marked_for_deletion")

        closed = d.pop("closed")

        def _parse_last_compacted_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_compacted_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_compacted_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        last_compacted_at = _parse_last_compacted_at(d.pop("last_compacted_at"))

        expired = d.pop("expired", UNSET)

        def _parse_dropped_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                dropped_at_type_0 = datetime.datetime.fromisoformat(data)

                return dropped_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        dropped_at = _parse_dropped_at(d.pop("dropped_at", UNSET))

        splits_waiting = d.pop("splits_waiting", UNSET)

        bytes_waiting = d.pop("bytes_waiting", UNSET)

        def _parse_oldest_waiting_split_age_secs(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        oldest_waiting_split_age_secs = _parse_oldest_waiting_split_age_secs(
            d.pop("oldest_waiting_split_age_secs", UNSET)
        )

        final = d.pop("final", UNSET)

        window_out = cls(
            window_start=window_start,
            window_duration_secs=window_duration_secs,
            splits=splits,
            rows=rows,
            bytes_=bytes_,
            levels=levels,
            live_jobs=live_jobs,
            marked_for_deletion=marked_for_deletion,
            closed=closed,
            last_compacted_at=last_compacted_at,
            expired=expired,
            dropped_at=dropped_at,
            splits_waiting=splits_waiting,
            bytes_waiting=bytes_waiting,
            oldest_waiting_split_age_secs=oldest_waiting_split_age_secs,
            final=final,
        )

        window_out.additional_properties = d
        return window_out

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
