from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="IngestedSplit")


@_attrs_define
class IngestedSplit:
    """
    Attributes:
        split_id (str):
        window_start (int):
        num_rows (int): Rows of the whole split, which may hold rows of other requests committed with this one (group
            commit).
        rows_of_request (int): Rows of this request in the split.
        size_bytes (int):
        uri (str):
    """

    split_id: str
    window_start: int
    num_rows: int
    rows_of_request: int
    size_bytes: int
    uri: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        window_start = self.window_start

        num_rows = self.num_rows

        rows_of_request = self.rows_of_request

        size_bytes = self.size_bytes

        uri = self.uri

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "split_id": split_id,
                "window_start": window_start,
                "num_rows": num_rows,
                "rows_of_request": rows_of_request,
                "size_bytes": size_bytes,
                "uri": uri,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        split_id = d.pop("split_id")

        window_start = d.pop("window_start")

        num_rows = d.pop("num_rows")

        rows_of_request = d.pop("rows_of_request")

        size_bytes = d.pop("size_bytes")

        uri = d.pop("uri")

        ingested_split = cls(
            split_id=split_id,
            window_start=window_start,
            num_rows=num_rows,
            rows_of_request=rows_of_request,
            size_bytes=size_bytes,
            uri=uri,
        )

        ingested_split.additional_properties = d
        return ingested_split

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
