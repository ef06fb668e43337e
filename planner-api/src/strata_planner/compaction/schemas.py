"""Request and response bodies of the compaction API: planning, the worker poll protocol, job status."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from strata_shared.domain.index_config import ParquetConfig
from strata_shared.scheduling.schemas import JobUpdate, LeasedJobOut, PollFields, UpdateResult


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanRequest(_Strict):
    start: int | datetime | None = Field(None, alias="from",
                                         description="first window start (epoch seconds or RFC 3339)")
    end: int | datetime | None = Field(None, alias="to", description="windows starting before this")
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


class OutputSplit(_Strict):
    """Split metadata as the merge computed it (the same fields as a split listing)."""

    split_id: str
    uri: str
    num_rows: int = Field(ge=0)
    size_bytes: int = Field(ge=0)
    window_start: int
    time_range_start: int | None
    time_range_end: int | None
    row_groups: list[dict[str, int]]
    column_stats: dict[str, dict[str, Any]]


class StatusUpdate(JobUpdate):
    outputs: list[OutputSplit] = []


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


class WindowPage(BaseModel):
    index_id: str
    windows: list[WindowOut]
