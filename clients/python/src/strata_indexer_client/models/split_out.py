from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.row_group_out import RowGroupOut
    from ..models.split_out_column_stats import SplitOutColumnStats


T = TypeVar("T", bound="SplitOut")


@_attrs_define
class SplitOut:
    """
    Attributes:
        split_id (str):
        index_uid (str):
        source_id (str):
        partition_id (str):
        doc_mapping_uid (str):
        sort_schema (str):
        window_start (int):
        window_duration_secs (int):
        time_range_start (int | None):
        time_range_end (int | None):
        num_rows (int):
        size_bytes (int):
        uri (str):
        state (str):
        num_merge_ops (int):
        generation (int):
        root_split_ids (list[str]):
        row_groups (list[RowGroupOut]):
        column_stats (SplitOutColumnStats):
    """

    split_id: str
    index_uid: str
    source_id: str
    partition_id: str
    doc_mapping_uid: str
    sort_schema: str
    window_start: int
    window_duration_secs: int
    time_range_start: int | None
    time_range_end: int | None
    num_rows: int
    size_bytes: int
    uri: str
    state: str
    num_merge_ops: int
    generation: int
    root_split_ids: list[str]
    row_groups: list[RowGroupOut]
    column_stats: SplitOutColumnStats
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        index_uid = self.index_uid

        source_id = self.source_id

        partition_id = self.partition_id

        doc_mapping_uid = self.doc_mapping_uid

        sort_schema = self.sort_schema

        window_start = self.window_start

        window_duration_secs = self.window_duration_secs

        time_range_start: int | None
        time_range_start = self.time_range_start

        time_range_end: int | None
        time_range_end = self.time_range_end

        num_rows = self.num_rows

        size_bytes = self.size_bytes

        uri = self.uri

        state = self.state

        num_merge_ops = self.num_merge_ops

        generation = self.generation

        root_split_ids = self.root_split_ids

        row_groups = []
        for row_groups_item_data in self.row_groups:
            row_groups_item = row_groups_item_data.to_dict()
            row_groups.append(row_groups_item)

        column_stats = self.column_stats.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "split_id": split_id,
                "index_uid": index_uid,
                "source_id": source_id,
                "partition_id": partition_id,
                "doc_mapping_uid": doc_mapping_uid,
                "sort_schema": sort_schema,
                "window_start": window_start,
                "window_duration_secs": window_duration_secs,
                "time_range_start": time_range_start,
                "time_range_end": time_range_end,
                "num_rows": num_rows,
                "size_bytes": size_bytes,
                "uri": uri,
                "state": state,
                "num_merge_ops": num_merge_ops,
                "generation": generation,
                "root_split_ids": root_split_ids,
                "row_groups": row_groups,
                "column_stats": column_stats,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.row_group_out import RowGroupOut
        from ..models.split_out_column_stats import SplitOutColumnStats

        d = dict(src_dict)
        split_id = d.pop("split_id")

        index_uid = d.pop("index_uid")

        source_id = d.pop("source_id")

        partition_id = d.pop("partition_id")

        doc_mapping_uid = d.pop("doc_mapping_uid")

        sort_schema = d.pop("sort_schema")

        window_start = d.pop("window_start")

        window_duration_secs = d.pop("window_duration_secs")

        def _parse_time_range_start(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        time_range_start = _parse_time_range_start(d.pop("time_range_start"))

        def _parse_time_range_end(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        time_range_end = _parse_time_range_end(d.pop("time_range_end"))

        num_rows = d.pop("num_rows")

        size_bytes = d.pop("size_bytes")

        uri = d.pop("uri")

        state = d.pop("state")

        num_merge_ops = d.pop("num_merge_ops")

        generation = d.pop("generation")

        root_split_ids = cast(list[str], d.pop("root_split_ids"))

        row_groups = []
        _row_groups = d.pop("row_groups")
        for row_groups_item_data in _row_groups:
            row_groups_item = RowGroupOut.from_dict(row_groups_item_data)

            row_groups.append(row_groups_item)

        column_stats = SplitOutColumnStats.from_dict(d.pop("column_stats"))

        split_out = cls(
            split_id=split_id,
            index_uid=index_uid,
            source_id=source_id,
            partition_id=partition_id,
            doc_mapping_uid=doc_mapping_uid,
            sort_schema=sort_schema,
            window_start=window_start,
            window_duration_secs=window_duration_secs,
            time_range_start=time_range_start,
            time_range_end=time_range_end,
            num_rows=num_rows,
            size_bytes=size_bytes,
            uri=uri,
            state=state,
            num_merge_ops=num_merge_ops,
            generation=generation,
            root_split_ids=root_split_ids,
            row_groups=row_groups,
            column_stats=column_stats,
        )

        split_out.additional_properties = d
        return split_out

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
