"""Bodies of the query API: requests, plans with per-stage counts, async plan status."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strata_shared.domain.wire_types import INT64_MAX
from strata_shared.web.problems import Problem


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sql: str = Field(min_length=1, max_length=100_000,
                     description="one SELECT over one index, named as the table")
    timeout_secs: float | None = Field(None, gt=0, description="at most the server's limit")
    engine: Literal["local", "spark"] | None = Field(
        None, description="run on this engine instead of the one the plan's size selects: `local` is query-api's "
                          "in-process engine (DuckDB), `spark` the Spark Connect server")
    max_rows: int | None = Field(None, ge=1, le=INT64_MAX,
                                 description="cut the result after this many rows (at most the server's cap); a cut "
                                             "is reported, never silent")


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


class EngineOut(BaseModel):
    engine: Literal["local", "spark"] | None = Field(description="null when no engine here can run the plan")
    reason: str


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
    engine: EngineOut | None = Field(None, description="the engine that runs (or would run) the plan, and why")


class PlanStatus(BaseModel):
    plan_id: str
    status: Literal["submitted", "completed", "failed", "cancelled"]
    plan: PlanOut | None = None
    error: Problem | None = Field(None, description="why a failed plan failed, as the problem a synchronous "
                                                   "EXPLAIN would have answered")


class ResultColumn(BaseModel):
    name: str
    type: str = Field(description="the Arrow type of the column")


class ResultSummary(BaseModel):
    rows: int
    truncated: bool = Field(description="whether the row cap cut the result")
    row_cap: int
    engine: Literal["local", "spark"]
    files_scanned: int
    row_groups_scanned: int
    bytes_scanned: int
    planning_ms: float
    elapsed_ms: float
    result_cache: Literal["hit", "miss", "bypass"] = Field(
        description="`hit`: answered from the result kept from an earlier run of the same query over the same "
                    "published files (nothing was read: the counts above describe that run); `miss`: run now; "
                    "`bypass`: run now because the request's Cache-Control said `no-cache` or `no-store`")


class QueryResult(BaseModel):
    """A result as one JSON document (`Accept: application/json`, the default). NDJSON and Arrow carry the same
    rows without the envelope."""

    query_id: str
    columns: list[ResultColumn]
    rows: list[dict[str, Any]]
    summary: ResultSummary = Field(description="written after the last row")
