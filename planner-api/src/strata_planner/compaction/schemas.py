"""Request and response bodies of the compaction API: planning, the worker poll protocol, job status."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from strata_core.domain.column_stats import ValueType
from strata_core.domain.index_config import ParquetConfig
from strata_core.domain.wire_types import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    Int64,
    Int64OrUint64,
    NonNegativeInt64,
    Ulid,
)
from strata_frame.jobqueue.schemas import JobUpdate, LeasedJobOut, PollFields, UpdateResult


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanRequest(_Strict):
    start: Int64 | datetime | None = Field(None, alias="from",
                                           description="first window start (epoch seconds or RFC 3339)")
    end: Int64 | datetime | None = Field(None, alias="to", description="windows starting before this")
    final: bool = Field(False, description="treat every window as closed: merge what remains toward the target size")
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PlannedOperation(BaseModel):
    window_start: int
    partition_id: str
    source_id: str
    kind: str
    level: int
    split_ids: list[str]
    num_rows: int
    size_bytes: int


class PlanResponse(BaseModel):
    index_id: str
    dry_run: bool
    windows_examined: int
    operations: list[PlannedOperation]
    skipped: dict[str, str] = Field(description="split_id -> reason it is not merged; mature splits are only "
                                                "counted, in skipped_counts")
    skipped_counts: dict[str, int]
    created_job_ids: list[str] = []
    operations_not_created: int = 0


class OutputRowGroup(_Strict):
    row_offset: NonNegativeInt64
    num_rows: NonNegativeInt64
    byte_offset: NonNegativeInt64
    byte_length: NonNegativeInt64


# The docstring is this schema's description in the published OpenAPI document, which the generated client under
# clients/ carries word for word: it keeps the module's old name (now strata_core.domain.column_stats) so the
# contract does not change with the code's layout.
class OutputColumnStats(_Strict):
    """Typed min/max of one column (strata_shared.domain.column_stats), each within its type's range."""

    type: ValueType
    min: Int64OrUint64 | float | str | None = None
    max: Int64OrUint64 | float | str | None = None
    null_count: NonNegativeInt64
    regex: str | None = None

    @model_validator(mode="after")
    def _values_fit_type(self) -> OutputColumnStats:
        for value in (self.min, self.max):
            if value is not None and not _fits(value, self.type):
                raise ValueError(f"min and max of a {self.type} column must be {self.type} values")
        return self


def _fits(value: int | float | str, value_type: ValueType) -> bool:
    if value_type == "string":
        return isinstance(value, str)
    if value_type == "f64":
        return isinstance(value, int | float)
    low, high = (INT64_MIN, INT64_MAX) if value_type == "i64" else (0, UINT64_MAX)
    return value_type in ("i64", "u64") and isinstance(value, int) and low <= value <= high


class OutputSplit(_Strict):
    """Split metadata as the merge computed it (the same fields as a split listing)."""

    split_id: Ulid
    uri: str
    num_rows: NonNegativeInt64
    size_bytes: NonNegativeInt64
    window_start: Int64
    time_range_start: Int64 | None
    time_range_end: Int64 | None
    row_groups: list[OutputRowGroup]
    column_stats: dict[Annotated[str, StringConstraints(min_length=1, max_length=128)], OutputColumnStats]


class StatusUpdate(JobUpdate):
    outputs: list[OutputSplit] = []
    unchanged: bool = Field(False, description="on a rewrite's success: the delete's condition matched no row of "
                                               "the split, nothing was written (no outputs) and the split stays "
                                               "published as it is")


class PollRequest(PollFields):
    updates: list[StatusUpdate] = []


class AssignedInput(BaseModel):
    split_id: str
    uri: str
    num_rows: int
    size_bytes: int
    num_merge_ops: int
    generation: int
    root_split_ids: list[str]


class Assignment(BaseModel):
    job_id: str
    fencing_token: int
    lease_expires_at: datetime
    lease_secs: float
    index_uid: str
    source_id: str
    partition_id: str
    doc_mapping_uid: str
    sort_schema: str
    window_start: int
    window_duration_secs: int
    timestamp_field: str
    timestamp_is_seconds: bool
    target_split_num_rows: int
    target_split_size_bytes: int
    parquet: ParquetConfig
    output_uri_prefix: str
    spark_operation_tag: str
    inputs: list[AssignedInput]
    # A rewrite (kind `rewrite`, one input): the delete it applies and that delete's predicate (the JSON form of
    # `strata_core.query.predicate_json`); the rows where it is TRUE are left out.
    kind: str = "level"
    delete_id: str | None = None
    delete_predicate: str | None = None


class PollResponse(BaseModel):
    assignments: list[Assignment]
    updates: list[UpdateResult]
    lease_secs: float


class JobOut(LeasedJobOut):
    source_id: str
    window_start: int
    window_duration_secs: int
    kind: str
    level: int
    spark_operation_tag: str | None
    input_split_ids: list[str]
    input_rows: int
    input_bytes: int
    output_split_ids: list[str]
    output_bytes: int | None
    assigned_at: datetime | None
    duration_secs: float | None

    @classmethod
    def of(cls, job: Any) -> JobOut:
        duration = None
        if job.first_assigned_at and job.finished_at:
            duration = (job.finished_at - job.first_assigned_at).total_seconds()
        return cls(
            **cls.lease_fields(job), source_id=job.source_id, window_start=job.window_start,
            window_duration_secs=job.window_duration_secs, kind=job.kind, level=job.level,
            spark_operation_tag=job.spark_operation_tag, input_split_ids=sorted(job.input_split_ids),
            input_rows=job.input_rows, input_bytes=job.input_bytes, output_split_ids=list(job.output_split_ids or []),
            output_bytes=job.output_bytes, assigned_at=job.assigned_at, duration_secs=duration,
        )


class JobPage(BaseModel):
    jobs: list[JobOut]
    next_cursor: str | None = None


class WindowOut(BaseModel):
    window_start: int
    window_duration_secs: int
    splits: int
    rows: int
    bytes: int
    levels: dict[str, int]
    live_jobs: int
    marked_for_deletion: int
    closed: bool
    last_compacted_at: datetime | None
    # Retention: whether the window's end is older than the index's retention period (the next pass drops it),
    # and when a pass (or an operator) last dropped it.
    expired: bool = False
    dropped_at: datetime | None = None
    # Compaction debt of the window: its splits the merge policy would still merge (GET /v1/indexes/{id}/debt).
    splits_waiting: int = 0
    bytes_waiting: int = 0
    oldest_waiting_split_age_secs: float | None = None
    final: bool = Field(False, description="closed, and no merge is left to do in it")


class WindowPage(BaseModel):
    index_id: str
    windows: list[WindowOut]
    compaction_paused_at: datetime | None = Field(None, description="set while compaction of the index is paused")
    retention_period_secs: int | None = Field(None, description="the index's retention period; none: kept")
    retention_cutoff: int | None = Field(None, description="windows ending at or before this (epoch seconds) are "
                                                           "expired: the next retention pass drops them")


class RetentionApplyRequest(_Strict):
    dry_run: bool = Field(False, description="only list what would be dropped")


class DroppedWindowOut(BaseModel):
    window_start: int
    window_duration_secs: int
    splits: int
    rows: int
    bytes: int
    cancelled_job_ids: list[str] = Field(description="live compaction jobs cancelled first (would be, on a dry run)")


class RetentionReport(BaseModel):
    index_id: str
    cutoff: int = Field(description="windows ending at or before this (epoch seconds) are dropped")
    dry_run: bool
    windows: list[DroppedWindowOut]
    splits: int
    rows: int
    bytes: int


class LevelDebtOut(BaseModel):
    splits: int
    bytes: int


class FirstMergeDelayOut(BaseModel):
    p50: float | None
    p90: float | None
    max: float | None
    count: int


class CompactionDebtOut(BaseModel):
    splits_waiting: int = Field(description="published splits the merge policy would still merge: not mature, "
                                            "sorted, window not before compaction_start_time, and not the splits a "
                                            "final window keeps; claimed by a live job or not")
    bytes_waiting: int
    levels: dict[str, LevelDebtOut] = Field(description="the waiting splits by merge level")
    oldest_waiting_split_age_secs: float | None
    closed_windows_not_final: int = Field(description="closed windows where the merge policy still merges: two "
                                                      "waiting splits of one compaction scope that fit together "
                                                      "within the target size")
    oldest_closed_window_not_final_age_secs: float | None = Field(
        description="since the oldest of them closed (window end + late_data_acceptance_secs)")
    jobs_unassigned: int
    jobs_in_progress: int
    merges_per_sec: float = Field(description="successful merges of the index over the last 60 s")
    rows_merged_per_sec: float
    first_merge_delay_secs: FirstMergeDelayOut = Field(
        description="from a split's creation to its first merge, over the never-merged inputs of merges finished "
                    "in the last 10 minutes")


class IndexingDebtOut(BaseModel):
    files_waiting: int = Field(description="published files without a published artifact snapshot")
    oldest_waiting_secs: float | None
    jobs_in_progress: int


class DebtOut(BaseModel):
    index_id: str
    measured_at: datetime
    published_splits: int
    compaction: CompactionDebtOut
    indexing: IndexingDebtOut


class DebtSampleOut(BaseModel):
    sampled_at: datetime
    splits_waiting: int
    bytes_waiting: int
    closed_windows_not_final: int
    oldest_waiting_split_age_secs: float | None
    indexing_files_waiting: int


class DebtHistory(BaseModel):
    index_id: str
    samples: list[DebtSampleOut] = Field(description="oldest first, one per sampling interval (10 s)")
