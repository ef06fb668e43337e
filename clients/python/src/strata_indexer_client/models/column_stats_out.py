from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ColumnStatsOut")


@_attrs_define
class ColumnStatsOut:
    """
    Attributes:
        type_ (str):
        min_ (Any):
        max_ (Any):
        null_count (int):
        regex (None | str):
    """

    type_: str
    min_: Any
    max_: Any
    null_count: int
    regex: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_

        min_ = self.min_

        max_ = self.max_

        null_count = self.null_count

        regex: None | str
        regex = self.regex

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
                "min": min_,
                "max": max_,
                "null_count": null_count,
                "regex": regex,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        type_ = d.pop("type")

        min_ = d.pop("min")

        max_ = d.pop("max")

        null_count = d.pop("null_count")

        def _parse_regex(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        regex = _parse_regex(d.pop("regex"))

        column_stats_out = cls(
            type_=type_,
            min_=min_,
            max_=max_,
            null_count=null_count,
            regex=regex,
        )

        column_stats_out.additional_properties = d
        return column_stats_out

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
