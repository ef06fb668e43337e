"""Bodies of the query API: requests, plans with per-stage counts, async plan status."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sql: str = Field(min_length=1, max_length=100_000,
                     description="one SELECT over one index, named as the table")
    timeout_secs: float | None = Field(None, gt=0, description="at most the server's limit")


class TimeRangeOut(BaseModel):
    column: str
    unit: Literal["seconds", "microseconds"]
    intervals: list[tuple[int | None, int | None]] = Field(description="inclusive [lo, hi]; null is unbounded")
    includes_null_timestamps: bool
    source: Literal["where", "default_lookback"]
    default_lookback_secs: int | None = None


class StageOut(BaseModel):
    stage: str
    files_before: int
    files_after: int
    row_groups_before: int
    row_groups_after: int
    bytes_before: int
    bytes_after: int


class FilePartOut(BaseModel):
    split_id: str
    partition_id: str
    uri: str
    row_groups: list[int]
    row_group_rows: list[int]
    byte_ranges: list[list[tuple[int, int]]] = Field(description="per kept row group: (offset, length) per column")
    columns: list[str]
    bytes: int
    rows: int
    pruned_with: Literal["artifacts", "parquet_statistics"]


class PlanOut(BaseModel):
    index_id: str
    index_uid: str
    tenant: str | None
    sql: str
    predicate: str
    columns: list[str]
    time_range: TimeRangeOut
    stages: list[StageOut]
    files: list[FilePartOut]
    total_files: int
    total_row_groups: int
    total_bytes: int
    total_rows: int
    planning_ms: float


class PlanStatus(BaseModel):
    plan_id: str
    status: Literal["submitted", "completed", "failed", "cancelled"]
    plan: PlanOut | None = None
    error: dict | None = None
