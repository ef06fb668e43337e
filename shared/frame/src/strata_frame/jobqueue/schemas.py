"""Wire bodies every job queue's worker protocol shares; a queue adds what its jobs report or receive."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strata_core.domain.wire_types import Int64, Ulid
from strata_core.object_store_metrics import ObjectRequestsBody


class JobUpdate(BaseModel):
    """One fenced status write of a worker: progress, a failure, a success carrying the queue's result, or the job
    given back unfinished (`released`: a worker shutting down; back to the queue, no failure counted)."""

    model_config = ConfigDict(extra="forbid")

    job_id: Ulid
    fencing_token: Int64
    status: Literal["in_progress", "success", "failure", "released"]
    stage: str | None = Field(None, max_length=32)
    progress: float | None = Field(None, ge=0, le=1)
    spark_operation_tag: str | None = Field(None, max_length=128)
    error: str | None = Field(None, max_length=4000)
    object_requests: ObjectRequestsBody | None = Field(
        None, description="on a success or failure: what the job cost the object store, counted where it ran; "
                          "the API adds it to its /metrics (`strata_object_store_requests_total`)")


class PollFields(BaseModel):
    """Who polls and how many new jobs it can take; a queue's poll request adds its typed `updates`."""

    model_config = ConfigDict(extra="forbid")

    worker_id: str = Field(min_length=1, max_length=128)
    capacity: int = Field(ge=0, le=1024, description="free slots for new jobs")


class UpdateResult(BaseModel):
    job_id: str
    accepted: bool
    reason: str | None = None
    lease_expires_at: datetime | None = None


class LeasedJobOut(BaseModel):
    """What every queue shows of a job: its index and tenant, status, lease and failure history; a queue's job
    body adds what its jobs hold."""

    job_id: str
    index_uid: str
    partition_id: str
    status: str
    stage: str | None
    progress: float
    fencing_token: int | None
    worker_id: str | None
    lease_expires_at: datetime | None
    failures: int
    last_error: str | None
    failure_log: list[dict[str, Any]]
    created_at: datetime
    first_assigned_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, job: Any) -> LeasedJobOut:
        """The body of one job row: `lease_fields(job)` and the queue's own."""
        raise NotImplementedError

    @staticmethod
    def lease_fields(job: Any) -> dict[str, Any]:
        """The fields above, read from a job row of any queue (`metastore.job_columns.LeasedJobColumns`)."""
        return {"job_id": job.job_id, "index_uid": job.index_uid, "partition_id": job.partition_id,
                "status": str(job.status), "stage": job.stage, "progress": job.progress,
                "fencing_token": job.fencing_token, "worker_id": job.worker_id,
                "lease_expires_at": job.lease_expires_at, "failures": job.failures, "last_error": job.last_error,
                "failure_log": job.failure_log, "created_at": job.created_at,
                "first_assigned_at": job.first_assigned_at, "finished_at": job.finished_at}


class PauseState(BaseModel):
    """Whether one queue is paused for one index, and the running jobs a pause cancelled."""

    index_id: str
    queue: str
    paused: bool
    paused_at: datetime | None
    cancelled_job_ids: list[str] = Field(default_factory=list)


class BulkRetryResult(BaseModel):
    """A bulk retry: jobs back in the queue, and jobs cancelled because their inputs changed."""

    index_id: str
    queue: str
    retried: list[str]
    cancelled: list[str]
