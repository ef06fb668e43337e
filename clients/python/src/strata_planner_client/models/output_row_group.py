from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="OutputRowGroup")


@_attrs_define
class OutputRowGroup:
    """
    Attributes:
        row_offset (int):
        num_rows (int):
        byte_offset (int):
        byte_length (int):
    """

    row_offset: int
    num_rows: int
    byte_offset: int
    byte_length: int

    def to_dict(self) -> dict[str, Any]:
        row_offset = self.row_offset

        num_rows = self.num_rows

        byte_offset = self.byte_offset

        byte_length = self.byte_length

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "row_offset": row_offset,
                "num_rows": num_rows,
                "byte_offset": byte_offset,
                "byte_length": byte_length,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        row_offset = d.pop("row_offset")

        num_rows = d.pop("num_rows")

        byte_offset = d.pop("byte_offset")

        byte_length = d.pop("byte_length")

        output_row_group = cls(
            row_offset=row_offset,
            num_rows=num_rows,
            byte_offset=byte_offset,
            byte_length=byte_length,
        )

        return output_row_group
