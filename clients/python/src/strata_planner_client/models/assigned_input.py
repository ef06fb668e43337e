from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="AssignedInput")


@_attrs_define
class AssignedInput:
    """
    Attributes:
        split_id (str):
        uri (str):
        num_rows (int):
        size_bytes (int):
        num_merge_ops (int):
        generation (int):
        root_split_ids (list[str]):
    """

    split_id: str
    uri: str
    num_rows: int
    size_bytes: int
    num_merge_ops: int
    generation: int
    root_split_ids: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        uri = self.uri

        num_rows = self.num_rows

        size_bytes = self.size_bytes

        num_merge_ops = self.num_merge_ops

        generation = self.generation

        root_split_ids = self.root_split_ids

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "split_id": split_id,
                "uri": uri,
                "num_rows": num_rows,
                "size_bytes": size_bytes,
                "num_merge_ops": num_merge_ops,
                "generation": generation,
                "root_split_ids": root_split_ids,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        split_id = d.pop("split_id")

        uri = d.pop("uri")

        num_rows = d.pop("num_rows")

        size_bytes = d.pop("size_bytes")

        num_merge_ops = d.pop("num_merge_ops")

        generation = d.pop("generation")

        root_split_ids = cast(list[str], d.pop("root_split_ids"))

        assigned_input = cls(
            split_id=split_id,
            uri=uri,
            num_rows=num_rows,
            size_bytes=size_bytes,
            num_merge_ops=num_merge_ops,
            generation=generation,
            root_split_ids=root_split_ids,
        )

        assigned_input.additional_properties = d
        return assigned_input

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
