from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="QueryConfig")


@_attrs_define
class QueryConfig:
    """
    Attributes:
        default_lookback_secs (int | Unset):  Default: 3600.
    """

    default_lookback_secs: int | Unset = 3600

    def to_dict(self) -> dict[str, Any]:
        default_lookback_secs = self.default_lookback_secs

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if default_lookback_secs is not UNSET:
            field_dict["default_lookback_secs"] = default_lookback_secs

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        default_lookback_secs = d.pop("default_lookback_secs", UNSET)

        query_config = cls(
            default_lookback_secs=default_lookback_secs,
        )

        return query_config
