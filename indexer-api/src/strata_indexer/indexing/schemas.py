"""Request and response bodies of indexing: the worker poll protocol, job status, lag, artifact registration."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from strata_core.domain.artifact_refs import ArtifactRef
from strata_core.domain.index_config import ArtifactConfig
from strata_core.domain.wire_types import NonNegativeInt64, PositiveInt32
from strata_frame.jobqueue.schemas import JobUpdate, LeasedJobOut, PollFields, UpdateResult


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ArtifactIn(_Strict):
    artifact_type: str = Field(min_length=1, max_length=16)
    column: str = Field("", max_length=128, description='"" for zone maps and full-text')
    format_version: PositiveInt32
    uri: str = Field(min_length=1, max_length=4096)
    size_bytes: NonNegativeInt64
    content_hash: str = Field(min_length=1, max_length=80, description='"sha256:<hex>" of the compressed payload')

    def to_ref(self, uri: str | None = None) -> ArtifactRef:
        return ArtifactRef(artifact_type=self.artifact_type, column=self.column, format_version=self.format_version,
                           uri=uri or self.uri, size_bytes=self.size_bytes, content_hash=self.content_hash)


class IndexingUpdate(JobUpdate):
    artifacts: list[ArtifactIn] = []
    skipped: list[dict[str, Any]] = []


class IndexingPollRequest(PollFields):
    updates: list[IndexingUpdate] = []


class IndexingAssignment(BaseModel):
    job_id: str
    fencing_token: int
    lease_expires_at: datetime
    lease_secs: float
    split_id: str
    index_uid: str
    partition_id: str
    uri: str
    # Decides where the build runs: a tiny file in the worker's local process, a larger one on Spark.
    size_bytes: int
    artifact_prefix: str
    artifacts: ArtifactConfig
    field_types: dict[str, str]
    zstd_level: int
    spark_operation_tag: str


class IndexingPollResponse(BaseModel):
    assignments: list[IndexingAssignment]
    updates: list[UpdateResult]
    lease_secs: float


class IndexingJobOut(LeasedJobOut):
    split_id: str
    reason: str
    artifact_count: int | None
    artifact_bytes: int | None
    skipped: list[dict[str, Any]]
    updated_at: datetime

    @classmethod
    def of(cls, job: Any) -> IndexingJobOut:
        return cls(**cls.lease_fields(job), split_id=job.split_id, reason=job.reason,
                   artifact_count=job.artifact_count, artifact_bytes=job.artifact_bytes, skipped=job.skipped or [],
                   updated_at=job.updated_at)


class IndexingJobPage(BaseModel):
    jobs: list[IndexingJobOut]
    next_cursor: str | None


class IndexLag(BaseModel):
    index_id: str
    index_uid: str
    files_waiting: int = Field(description="published files without a published artifact snapshot")
    oldest_waiting_secs: float | None = Field(description="age of the oldest of them since it was published")


class IndexingLagResponse(BaseModel):
    indexes: list[IndexLag]


class ArtifactOut(BaseModel):
    artifact_id: str
    artifact_type: str
    column: str
    format_version: int
    uri: str
    size_bytes: int
    content_hash: str
    registered_by: str
    created_at: datetime
    in_published_snapshot: bool


class SnapshotOut(BaseModel):
    published: bool
    manifest_uri: str | None
    published_at: datetime | None
    artifact_count: int


class SplitArtifacts(BaseModel):
    split_id: str
    snapshot: SnapshotOut
    artifacts: list[ArtifactOut]


class RegisterArtifactsRequest(_Strict):
    artifacts: list[ArtifactIn] = Field(min_length=1, max_length=256)
    publish: bool = Field(True, description="publish a snapshot of the file's registered artifacts afterwards")


class RegisterArtifactsResponse(SplitArtifacts):
    created: list[str] = Field(description="artifact_ids newly registered (the rest were already there)")


class JanitorReportOut(BaseModel):
    registered: list[str] = Field(description="valid artifact objects that were not registered, now registered")
    deleted: list[str] = Field(description="invalid, partial or orphaned objects past the grace period")
    missing: list[str] = Field(description="registered artifacts whose object was gone: unregistered")
    reindexed: list[str] = Field(description="files queued for indexing again because an artifact was missing")
