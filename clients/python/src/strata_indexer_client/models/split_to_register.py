from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SplitToRegister")


@_attrs_define
class SplitToRegister:
    """
    Attributes:
        split_id (str): ULID chosen by the writer; registration is idempotent by it
        uri (str): URI under the storage root, or a root-relative path
        num_rows (int): checked against the footer
        partition_id (str | Unset):  Default: 'default'.
        source_id (str | Unset):  Default: 'external'.
        window_start (int | None | Unset): checked against the footer's timestamps when given
        sort_schema (None | str | Unset): the order the writer sorted by; checked against the footer
    """

    split_id: str
    uri: str
    num_rows: int
    partition_id: str | Unset = "default"
    source_id: str | Unset = "external"
    window_start: int | None | Unset = UNSET
    sort_schema: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        uri = self.uri

        num_rows = self.num_rows

        partition_id = self.partition_id

        source_id = self.source_id

        window_start: int | None | Unset
        if isinstance(self.window_start, Unset):
            window_start = UNSET
        else:
            window_start = self.window_start

        sort_schema: None | str | Unset
        if isinstance(self.sort_schema, Unset):
            sort_schema = UNSET
        else:
            sort_schema = self.sort_schema

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "split_id": split_id,
                "uri": uri,
                "num_rows": num_rows,
            }
        )
        if partition_id is not UNSET:
            field_dict["partition_id"] = partition_id
        if source_id is not UNSET:
            field_dict["source_id"] = source_id
        if window_start is not UNSET:
            field_dict["window_start"] = window_start
        if sort_schema is not UNSET:
            field_dict["sort_schema"] = sort_schema

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        split_id = d.pop("split_id")

        uri = d.pop("uri")

        num_rows = d.pop("num_rows")

        partition_id = d.pop("partition_id", UNSET)

        source_id = d.pop("source_id", UNSET)

        def _parse_window_start(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        window_start = _parse_window_start(d.pop("window_start", UNSET))

        def _parse_sort_schema(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sort_schema = _parse_sort_schema(d.pop("sort_schema", UNSET))

        split_to_register = cls(
            split_id=split_id,
            uri=uri,
            num_rows=num_rows,
            partition_id=partition_id,
            source_id=source_id,
            window_start=window_start,
            sort_schema=sort_schema,
        )

        return split_to_register
