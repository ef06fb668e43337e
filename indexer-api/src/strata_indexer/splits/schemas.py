"""Request and response bodies for split registration and listing."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from strata_core.domain.split import SplitMetadata
from strata_core.domain.wire_types import Int64, Name, NonNegativeInt64, Ulid


class SplitToRegister(BaseModel):
    model_config = ConfigDict(extra="forbid")

    split_id: Ulid = Field(description="ULID chosen by the writer; registration is idempotent by it")
    uri: str = Field(min_length=1, max_length=4096, description="URI under the storage root, or a root-relative path")
    num_rows: NonNegativeInt64 = Field(description="checked against the footer")
    partition_id: Name = "default"
    source_id: Name = "external"
    window_start: Int64 | None = Field(None, description="checked against the footer's timestamps when given")
    sort_schema: str | None = Field(None, description="the order the writer sorted by; checked against the footer")


class RegisterSplitsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    splits: list[SplitToRegister] = Field(min_length=1)


class RegisterSplitsResponse(BaseModel):
    registered: list[str]
    unchanged: list[str]


class ColumnStatsOut(BaseModel):
    type: str
    min: Any
    max: Any
    null_count: int
    regex: str | None


class RowGroupOut(BaseModel):
    row_offset: int
    num_rows: int
    byte_offset: int
    byte_length: int


class SplitOut(BaseModel):
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
    column_stats: dict[str, ColumnStatsOut]

    @classmethod
    def of(cls, split: SplitMetadata) -> SplitOut:
        return cls(
            split_id=split.split_id, index_uid=split.index_uid, source_id=split.source_id,
            partition_id=split.partition_id, doc_mapping_uid=split.doc_mapping_uid, sort_schema=split.sort_schema,
            window_start=split.window_start, window_duration_secs=split.window_duration_secs,
            time_range_start=split.time_range_start, time_range_end=split.time_range_end,
            num_rows=split.num_rows, size_bytes=split.size_bytes, uri=split.uri, state=str(split.state),
            num_merge_ops=split.num_merge_ops, generation=split.generation, root_split_ids=split.root_split_ids,
            row_groups=[RowGroupOut(**rg.to_json()) for rg in split.row_groups],
            column_stats={name: ColumnStatsOut(**s.to_json()) for name, s in split.column_stats.items()},
        )


class SplitPage(BaseModel):
    splits: list[SplitOut]
    next_cursor: str | None = None
