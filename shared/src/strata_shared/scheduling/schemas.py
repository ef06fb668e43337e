"""Wire bodies every job queue's worker protocol shares; a queue adds what its jobs report or receive."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from strata_shared.domain.wire_types import Int64, Ulid


class JobUpdate(BaseModel):
    """One fenced status write of a worker: progress, a failure, or a success carrying the queue's result."""

    model_config = ConfigDict(extra="forbid")

    job_id: Ulid
    fencing_token: Int64
    status: Literal["in_progress", "success", "failure"]
    stage: str | None = Field(None, max_length=32)
    progress: float | None = Field(None, ge=0, le=1)
    spark_operation_tag: str | None = Field(None, max_length=128)
    error: str | None = Field(None, max_length=4000)


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
