from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.file_part_out_pruned_with import FilePartOutPrunedWith

T = TypeVar("T", bound="FilePartOut")


@_attrs_define
class FilePartOut:
    """
    Attributes:
        split_id (str):
        partition_id (str):
        uri (str):
        row_groups (list[int]):
        row_group_rows (list[int]):
        byte_ranges (list[list[list[int]]]): per kept row group: (offset, length) per column
        columns (list[str]):
        bytes_ (int):
        rows (int):
        pruned_with (FilePartOutPrunedWith):
    """

    split_id: str
    partition_id: str
    uri: str
    row_groups: list[int]
    row_group_rows: list[int]
    byte_ranges: list[list[list[int]]]
    columns: list[str]
    bytes_: int
    rows: int
    pruned_with: FilePartOutPrunedWith
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        partition_id = self.partition_id

        uri = self.uri

        row_groups = self.row_groups

        row_group_rows = self.row_group_rows

        byte_ranges = []
        for byte_ranges_item_data in self.byte_ranges:
            byte_ranges_item = []
            for byte_ranges_item_item_data in byte_ranges_item_data:
                byte_ranges_item_item = []
                for byte_ranges_item_item_item_data in byte_ranges_item_item_data:
                    byte_ranges_item_item_item: int
                    byte_ranges_item_item_item = byte_ranges_item_item_item_data
                    byte_ranges_item_item.append(byte_ranges_item_item_item)

                byte_ranges_item.append(byte_ranges_item_item)

            byte_ranges.append(byte_ranges_item)

        columns = self.columns

        bytes_ = self.bytes_

        rows = self.rows

        pruned_with = self.pruned_with.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "split_id": split_id,
                "partition_id": partition_id,
                "uri": uri,
                "row_groups": row_groups,
                "row_group_rows": row_group_rows,
                "byte_ranges": byte_ranges,
                "columns": columns,
                "bytes": bytes_,
                "rows": rows,
                "pruned_with": pruned_with,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        split_id = d.pop("split_id")

        partition_id = d.pop("partition_id")

        uri = d.pop("uri")

        row_groups = cast(list[int], d.pop("row_groups"))

        row_group_rows = cast(list[int], d.pop("row_group_rows"))

        byte_ranges = []
        _byte_ranges = d.pop("byte_ranges")
        for byte_ranges_item_data in _byte_ranges:
            byte_ranges_item = []
            _byte_ranges_item = byte_ranges_item_data
            for byte_ranges_item_item_data in _byte_ranges_item:
                byte_ranges_item_item = []
                _byte_ranges_item_item = byte_ranges_item_item_data
                for byte_ranges_item_item_item_data in _byte_ranges_item_item:

                    def _parse_byte_ranges_item_item_item(data: object) -> int:
                        return cast(int, data)

                    byte_ranges_item_item_item = _parse_byte_ranges_item_item_item(
                        byte_ranges_item_item_item_data
                    )

                    byte_ranges_item_item.append(byte_ranges_item_item_item)

                byte_ranges_item.append(byte_ranges_item_item)

            byte_ranges.append(byte_ranges_item)

        columns = cast(list[str], d.pop("columns"))

        bytes_ = d.pop("bytes")

        rows = d.pop("rows")

        pruned_with = FilePartOutPrunedWith(d.pop("pruned_with"))

        file_part_out = cls(
            split_id=split_id,
            partition_id=partition_id,
            uri=uri,
            row_groups=row_groups,
            row_group_rows=row_group_rows,
            byte_ranges=byte_ranges,
            columns=columns,
            bytes_=bytes_,
            rows=rows,
            pruned_with=pruned_with,
        )

        file_part_out.additional_properties = d
        return file_part_out

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
