from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.output_row_group import OutputRowGroup
    from ..models.output_split_column_stats import OutputSplitColumnStats


T = TypeVar("T", bound="OutputSplit")


@_attrs_define
class OutputSplit:
    """Split metadata as the merge computed it (the same fields as a split listing).

    Attributes:
        split_id (str):
        uri (str):
        num_rows (int):
        size_bytes (int):
        window_start (int):
        time_range_start (int | None):
        time_range_end (int | None):
        row_groups (list[OutputRowGroup]):
        column_stats (OutputSplitColumnStats):
    """

    split_id: str
    uri: str
    num_rows: int
    size_bytes: int
    window_start: int
    time_range_start: int | None
    time_range_end: int | None
    row_groups: list[OutputRowGroup]
    column_stats: OutputSplitColumnStats

    def to_dict(self) -> dict[str, Any]:
        split_id = self.split_id

        uri = self.uri

        num_rows = self.num_rows

        size_bytes = self.size_bytes

        window_start = self.window_start

        time_range_start: int | None
        time_range_start = self.time_range_start

        time_range_end: int | None
        time_range_end = self.time_range_end

        row_groups = []
        for row_groups_item_data in self.row_groups:
            row_groups_item = row_groups_item_data.to_dict()
            row_groups.append(row_groups_item)

        column_stats = self.column_stats.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "split_id": split_id,
                "uri": uri,
                "num_rows": num_rows,
                "size_bytes": size_bytes,
                "window_start": window_start,
                "time_range_start": time_range_start,
                "time_range_end": time_range_end,
                "row_groups": row_groups,
                "column_stats": column_stats,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.output_row_group import OutputRowGroup
        from ..models.output_split_column_stats import OutputSplitColumnStats

        d = dict(src_dict)
        split_id = d.pop("split_id")

        uri = d.pop("uri")

        num_rows = d.pop("num_rows")

        size_bytes = d.pop("size_bytes")

        window_start = d.pop("window_start")

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

        row_groups = []
        _row_groups = d.pop("row_groups")
        for row_groups_item_data in _row_groups:
            row_groups_item = OutputRowGroup.from_dict(row_groups_item_data)

            row_groups.append(row_groups_item)

        column_stats = OutputSplitColumnStats.from_dict(d.pop("column_stats"))

        output_split = cls(
            split_id=split_id,
            uri=uri,
            num_rows=num_rows,
            size_bytes=size_bytes,
            window_start=window_start,
            time_range_start=time_range_start,
            time_range_end=time_range_end,
            row_groups=row_groups,
            column_stats=column_stats,
        )

        return output_split
