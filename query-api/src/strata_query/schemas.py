"""Bodies of the query API: requests, plans with per-stage counts, async plan status, results; and the plan and
an asynchronous plan's record as these bodies show them (built only here, where they leave the service)."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strata_core.domain.wire_types import INT64_MAX
from strata_core.object_store_metrics import ObjectRequestsBody
from strata_core.query.predicate import describe
from strata_frame.web.problems import Problem
from strata_query.execution.engine_choice import EngineChoice
from strata_query.planning.plan import FilePart, QueryPlan
from strata_query.registry import AsyncPlan

_FILE_PART_FIELDS = tuple(f.name for f in fields(FilePart))


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


class ObjectRequestsOut(ObjectRequestsBody):
    """Object-store requests as S3 bills them, and the bytes they moved."""


class FilePartOut(BaseModel):
    split_id: str
    partition_id: str
    uri: str
    row_groups: list[int]
    row_group_rows: list[int]
    byte_ranges: list[list[tuple[int, int]]] = Field(description="per kept row group: (offset, length) per column")
    ranged_gets: list[list[tuple[int, int]]] = Field(
        description="per kept row group: (offset, length) of each ranged GET a scan makes, the column chunks "
                    "coalesced as the Parquet reader does")
    columns: list[str]
    bytes: int
    rows: int
    pruned_with: Literal["artifacts", "parquet_statistics"]
    pending_deletes: list[str] = Field(
        default_factory=list, description="deletes accepted but not yet rewritten into this file: the scan hides "
                                          "the rows they match (`predicate IS NOT TRUE`)")


class PendingDeleteOut(BaseModel):
    delete_id: str
    predicate: str = Field(description="the delete's condition; the plan adds its negation to the files named")
    files: int


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
    object_requests: ObjectRequestsOut = Field(
        description="the requests the local engine makes to scan the plan with nothing in its RAM tier: a HEAD "
                    "per file (it is opened once) and the ranged GETs of `files[].ranged_gets`; the Spark engine "
                    "makes these and reads each file's footer too (one GET more per file)")
    planning_ms: float
    engine: EngineOut | None = Field(None, description="the engine that runs (or would run) the plan, and why")
    pending_deletes: list[PendingDeleteOut] = Field(
        default_factory=list, description="row-level deletes in force on files of the plan, applied per file")


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
    object_requests: ObjectRequestsOut = Field(
        description="the object-store requests this run made, planning included (footers and artifacts not "
                    "cached yet), on either engine (Spark's executors count theirs and send them with the end of "
                    "the result; a result not read to its end reports none of theirs); none on a result-cache "
                    "hit")
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


def plan_out(plan: QueryPlan, engine: EngineChoice | None) -> PlanOut:
    """The plan as the API shows it, with the engine chosen for it (None: not chosen, as when planned outside the
    service)."""
    time_range = plan.time_range
    return PlanOut(
        index_id=plan.index_id, index_uid=plan.index_uid, tenant=plan.tenant, sql=plan.sql, predicate=plan.predicate,
        columns=plan.columns,
        time_range=TimeRangeOut(
            column=time_range.column, unit=time_range.unit, intervals=list(time_range.intervals),
            includes_null_timestamps=time_range.includes_null_timestamps, source=time_range.source,
            default_lookback_secs=time_range.default_lookback_secs),
        stages=[StageOut(**asdict(s)) for s in plan.stages],
        # Shallow: asdict would deep-copy every byte range, and the model copies what it keeps anyway.
        files=[FilePartOut(**{name: getattr(f, name) for name in _FILE_PART_FIELDS}) for f in plan.files],
        total_files=plan.total_files, total_row_groups=plan.total_row_groups, total_bytes=plan.total_bytes,
        total_rows=plan.total_rows, object_requests=ObjectRequestsOut(**plan.object_requests().as_dict()),
        planning_ms=plan.planning_ms,
        pending_deletes=[PendingDeleteOut(delete_id=delete_id, predicate=describe(predicate),
                                          files=sum(delete_id in f.pending_deletes for f in plan.files))
                         for delete_id, predicate in plan.pending_deletes.items()],
        engine=None if engine is None else EngineOut(
            engine=None if engine.engine is None else engine.engine.name, reason=engine.reason))


def plan_status(entry: AsyncPlan) -> PlanStatus:
    return PlanStatus(plan_id=entry.plan_id, status=entry.status, plan=entry.plan, error=entry.problem)
