from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="RowGroupOut")


@_attrs_define
class RowGroupOut:
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
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        row_offset = self.row_offset

        num_rows = self.num_rows

        byte_offset = self.byte_offset

        byte_length = self.byte_length

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
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

        row_group_out = cls(
            row_offset=row_offset,
            num_rows=num_rows,
            byte_offset=byte_offset,
            byte_length=byte_length,
        )

        row_group_out.additional_properties = d
        return row_group_out

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
