from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PlannedOperation")


@_attrs_define
class PlannedOperation:
    """
    Attributes:
        window_start (int):
        partition_id (str):
        source_id (str):
        kind (str):
        level (int):
        split_ids (list[str]):
        num_rows (int):
        size_bytes (int):
    """

    window_start: int
    partition_id: str
    source_id: str
    kind: str
    level: int
    split_ids: list[str]
    num_rows: int
    size_bytes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        window_start = self.window_start

        partition_id = self.partition_id

        source_id = self.source_id

        kind = self.kind

        level = self.level

        split_ids = self.split_ids

        num_rows = self.num_rows

        size_bytes = self.size_bytes

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "window_start": window_start,
                "partition_id": partition_id,
                "source_id": source_id,
                "kind": kind,
                "level": level,
                "split_ids": split_ids,
                "num_rows": num_rows,
                "size_bytes": size_bytes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        window_start = d.pop("window_start")

        partition_id = d.pop("partition_id")

        source_id = d.pop("source_id")

        kind = d.pop("kind")

        level = d.pop("level")

        split_ids = cast(list[str], d.pop("split_ids"))

        num_rows = d.pop("num_rows")

        size_bytes = d.pop("size_bytes")

        planned_operation = cls(
            window_start=window_start,
            partition_id=partition_id,
            source_id=source_id,
            kind=kind,
            level=level,
            split_ids=split_ids,
            num_rows=num_rows,
            size_bytes=size_bytes,
        )

        planned_operation.additional_properties = d
        return planned_operation

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
