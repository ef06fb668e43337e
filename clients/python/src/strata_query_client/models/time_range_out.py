from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.time_range_out_source import TimeRangeOutSource
from ..models.time_range_out_unit import TimeRangeOutUnit
from ..types import UNSET, Unset

T = TypeVar("T", bound="TimeRangeOut")


@_attrs_define
class TimeRangeOut:
    """
    Attributes:
        column (str):
        unit (TimeRangeOutUnit):
        intervals (list[list[int | None]]): inclusive [lo, hi]; null is unbounded
        includes_null_timestamps (bool):
        source (TimeRangeOutSource):
        default_lookback_secs (int | None | Unset):
    """

    column: str
    unit: TimeRangeOutUnit
    intervals: list[list[int | None]]
    includes_null_timestamps: bool
    source: TimeRangeOutSource
    default_lookback_secs: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        column = self.column

        unit = self.unit.value

        intervals = []
        for intervals_item_data in self.intervals:
            intervals_item = []
            for intervals_item_item_data in intervals_item_data:
                intervals_item_item: int | None
                intervals_item_item = intervals_item_item_data
                intervals_item.append(intervals_item_item)

            intervals.append(intervals_item)

        includes_null_timestamps = self.includes_null_timestamps

        source = self.source.value

        default_lookback_secs: int | None | Unset
        if isinstance(self.default_lookback_secs, Unset):
            default_lookback_secs = UNSET
        else:
            default_lookback_secs = self.default_lookback_secs

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "column": column,
                "unit": unit,
                "intervals": intervals,
                "includes_null_timestamps": includes_null_timestamps,
                "source": source,
            }
        )
        if default_lookback_secs is not UNSET:
            field_dict["default_lookback_secs"] = default_lookback_secs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        column = d.pop("column")

        unit = TimeRangeOutUnit(d.pop("unit"))

        intervals = []
        _intervals = d.pop("intervals")
        for intervals_item_data in _intervals:
            intervals_item = []
            _intervals_item = intervals_item_data
            for intervals_item_item_data in _intervals_item:

                def _parse_intervals_item_item(data: object) -> int | None:
                    if data is None:
                        return data
                    return cast(int | None, data)

                intervals_item_item = _parse_intervals_item_item(
                    intervals_item_item_data
                )

                intervals_item.append(intervals_item_item)

            intervals.append(intervals_item)

        includes_null_timestamps = d.pop("includes_null_timestamps")

        source = TimeRangeOutSource(d.pop("source"))

        def _parse_default_lookback_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        default_lookback_secs = _parse_default_lookback_secs(
            d.pop("default_lookback_secs", UNSET)
        )

        time_range_out = cls(
            column=column,
            unit=unit,
            intervals=intervals,
            includes_null_timestamps=includes_null_timestamps,
            source=source,
            default_lookback_secs=default_lookback_secs,
        )

        time_range_out.additional_properties = d
        return time_range_out

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
