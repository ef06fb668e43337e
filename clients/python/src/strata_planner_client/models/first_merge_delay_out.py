from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="FirstMergeDelayOut")


@_attrs_define
class FirstMergeDelayOut:
    """
    Attributes:
        p50 (float | None):
        p90 (float | None):
        max_ (float | None):
        count (int):
    """

    p50: float | None
    p90: float | None
    max_: float | None
    count: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        p50: float | None
        p50 = self.p50

        p90: float | None
        p90 = self.p90

        max_: float | None
        max_ = self.max_

        count = self.count

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "p50": p50,
                "p90": p90,
                "max": max_,
                "count": count,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_p50(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        p50 = _parse_p50(d.pop("p50"))

        def _parse_p90(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        p90 = _parse_p90(d.pop("p90"))

        def _parse_max_(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        max_ = _parse_max_(d.pop("max"))

        count = d.pop("count")

        first_merge_delay_out = cls(
            p50=p50,
            p90=p90,
            max_=max_,
            count=count,
        )

        first_merge_delay_out.additional_properties = d
        return first_merge_delay_out

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
