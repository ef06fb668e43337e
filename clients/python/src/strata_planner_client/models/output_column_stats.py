from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.output_column_stats_type import OutputColumnStatsType
from ..types import UNSET, Unset

T = TypeVar("T", bound="OutputColumnStats")


@_attrs_define
class OutputColumnStats:
    """Typed min/max of one column (strata_shared.domain.column_stats), each within its type's range.

    Attributes:
        type_ (OutputColumnStatsType):
        null_count (int):
        min_ (float | int | None | str | Unset):
        max_ (float | int | None | str | Unset):
        regex (None | str | Unset):
    """

    type_: OutputColumnStatsType
    null_count: int
    min_: float | int | None | str | Unset = UNSET
    max_: float | int | None | str | Unset = UNSET
    regex: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_.value

        null_count = self.null_count

        min_: float | int | None | str | Unset
        if isinstance(self.min_, Unset):
            min_ = UNSET
        else:
            min_ = self.min_

        max_: float | int | None | str | Unset
        if isinstance(self.max_, Unset):
            max_ = UNSET
        else:
            max_ = self.max_

        regex: None | str | Unset
        if isinstance(self.regex, Unset):
            regex = UNSET
        else:
            regex = self.regex

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "type": type_,
                "null_count": null_count,
            }
        )
        if min_ is not UNSET:
            field_dict["min"] = min_
        if max_ is not UNSET:
            field_dict["max"] = max_
        if regex is not UNSET:
            field_dict["regex"] = regex

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        type_ = OutputColumnStatsType(d.pop("type"))

        null_count = d.pop("null_count")

        def _parse_min_(data: object) -> float | int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | int | None | str | Unset, data)

        min_ = _parse_min_(d.pop("min", UNSET))

        def _parse_max_(data: object) -> float | int | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | int | None | str | Unset, data)

        max_ = _parse_max_(d.pop("max", UNSET))

        def _parse_regex(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        regex = _parse_regex(d.pop("regex", UNSET))

        output_column_stats = cls(
            type_=type_,
            null_count=null_count,
            min_=min_,
            max_=max_,
            regex=regex,
        )

        return output_column_stats
