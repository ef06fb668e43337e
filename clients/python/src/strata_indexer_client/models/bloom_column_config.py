from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="BloomColumnConfig")


@_attrs_define
class BloomColumnConfig:
    """
    Attributes:
        column (str):
        false_positive_rate (float | Unset):  Default: 0.01.
    """

    column: str
    false_positive_rate: float | Unset = 0.01

    def to_dict(self) -> dict[str, Any]:
        column = self.column

        false_positive_rate = self.false_positive_rate

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "column": column,
            }
        )
        if false_positive_rate is not UNSET:
            field_dict["false_positive_rate"] = false_positive_rate

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        column = d.pop("column")

        false_positive_rate = d.pop("false_positive_rate", UNSET)

        bloom_column_config = cls(
            column=column,
            false_positive_rate=false_positive_rate,
        )

        return bloom_column_config
