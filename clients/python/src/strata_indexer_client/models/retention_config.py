from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RetentionConfig")


@_attrs_define
class RetentionConfig:
    """Drop every window whose end is older than `period_secs` (its rows are all older, TW-1), checked every
    `interval_secs` by planner-api; the files go through the usual marked_for_deletion -> grace -> GC path.

        Attributes:
            period_secs (int): keep windows ending within this period
            interval_secs (int | Unset): how often the pass runs Default: 3600.
    """

    period_secs: int
    interval_secs: int | Unset = 3600

    def to_dict(self) -> dict[str, Any]:
        period_secs = self.period_secs

        interval_secs = self.interval_secs

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "period_secs": period_secs,
            }
        )
        if interval_secs is not UNSET:
            field_dict["interval_secs"] = interval_secs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        period_secs = d.pop("period_secs")

        interval_secs = d.pop("interval_secs", UNSET)

        retention_config = cls(
            period_secs=period_secs,
            interval_secs=interval_secs,
        )

        return retention_config
