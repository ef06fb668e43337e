"""ORM models of index artifacts: per-file indexing jobs, registered artifacts, and per-file snapshots."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from strata_metastore.job_columns import LeasedJobColumns
from strata_metastore.models import Base


class IndexingJobRow(LeasedJobColumns, Base):
    """One file's artifact build. Leases, tokens and failures work exactly as for compaction jobs."""

    __tablename__ = "indexing_jobs"

    job_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    split_id: Mapped[str] = mapped_column(ForeignKey("splits.split_id", ondelete="CASCADE"))
    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"))
    # The tenant, for per-tenant concurrency limits.
    partition_id: Mapped[str] = mapped_column(String(128))
    # Why the job exists: "published" (a new file) or "repair" (the janitor found an artifact missing).
    reason: Mapped[str] = mapped_column(String(16))
    artifact_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    artifact_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Configured artifacts the build did not produce, each with its reason (e.g. too many distinct values).
    skipped: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, default=list)

    __table_args__ = (
        # One worker per file: at most one live job per split, whoever enqueues it.
        Index("uq_indexing_jobs_live_split", "split_id", unique=True,
              postgresql_where=text("status IN ('unassigned', 'in_progress')")),
        # The queue, oldest first: the indexing lag is the age of its head.
        Index("ix_indexing_jobs_queue", "status", "created_at"),
        # The queue in the order polls lease it (`INDEXING_ASSIGNMENT_ORDER`): its head without a sort (0019).
        Index("ix_indexing_jobs_assignment", "status", "failures", "created_at", "job_id"),
        Index("ix_indexing_jobs_index", "index_uid", "job_id"),
        # Every job of a split, finished ones too: deleting a split (GC) cascades here (migration 0018).
        Index("ix_indexing_jobs_split", "split_id"),
    )


class ArtifactRow(Base):
    """A stored, checked artifact object. Visible to queries only through a published snapshot."""

    __tablename__ = "index_artifacts"

    artifact_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    split_id: Mapped[str] = mapped_column(ForeignKey("splits.split_id", ondelete="CASCADE"))
    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"))
    artifact_type: Mapped[str] = mapped_column(String(16))
    # "" for artifacts over several columns (zone maps, full-text).
    column_name: Mapped[str] = mapped_column(String(128))
    format_version: Mapped[int] = mapped_column(Integer)
    uri: Mapped[str] = mapped_column(Text)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    content_hash: Mapped[str] = mapped_column(String(80))
    # "job:<job_id>", "api" or "janitor".
    registered_by: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        UniqueConstraint("split_id", "artifact_type", "column_name", "format_version",
                         name="uq_index_artifacts_identity"),
        Index("ix_index_artifacts_uri", "uri", unique=True),
    )


class ArtifactSnapshotRow(Base):
    """A file's artifact set as one unit: queries read a file's artifacts only while `published` is true, and the
    manifest (a JSON object at a predictable path) lists exactly the artifacts of the published set."""

    __tablename__ = "artifact_snapshots"

    split_id: Mapped[str] = mapped_column(ForeignKey("splits.split_id", ondelete="CASCADE"), primary_key=True)
    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"))
    manifest_uri: Mapped[str] = mapped_column(Text)
    published: Mapped[bool] = mapped_column(Boolean)
    # artifact_ids of the published set, in manifest order.
    artifact_ids: Mapped[list[str]] = mapped_column(JSONB, default=list)
    published_by: Mapped[str] = mapped_column(String(64))
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    __table_args__ = (
        Index("ix_artifact_snapshots_index", "index_uid", "published"),
    )
