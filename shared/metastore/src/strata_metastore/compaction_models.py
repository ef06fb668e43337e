"""ORM models of compaction: jobs, their claimed inputs, and per-window planning state."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from strata_metastore.job_columns import LeasedJobColumns, fencing_token_seq, job_status_enum
from strata_metastore.models import Base

__all__ = ["CompactionDebtSampleRow", "CompactionJobInputRow", "CompactionJobRow", "CompactionWindowRow",
           "fencing_token_seq", "job_status_enum"]

class CompactionJobRow(LeasedJobColumns, Base):
    __tablename__ = "compaction_jobs"

    job_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"))
    source_id: Mapped[str] = mapped_column(String(128))
    partition_id: Mapped[str] = mapped_column(String(128))
    doc_mapping_uid: Mapped[str] = mapped_column(String(32))
    sort_schema: Mapped[str] = mapped_column(Text)
    window_duration_secs: Mapped[int] = mapped_column(Integer)
    window_start: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))
    level: Mapped[int] = mapped_column(Integer)
    # Kept on the job for its history: input split rows are deleted by the garbage collector after the grace.
    input_split_ids: Mapped[list[str]] = mapped_column(ARRAY(String(26)), default=list)
    input_rows: Mapped[int] = mapped_column(BigInteger)
    input_bytes: Mapped[int] = mapped_column(BigInteger)
    output_split_ids: Mapped[list[str]] = mapped_column(ARRAY(String(26)), default=list)
    output_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)

    __table_args__ = (
        # The scheduler's queue: unassigned jobs in priority order, and in-progress jobs by lease expiry.
        Index("ix_compaction_jobs_queue", "status", "level", "failures", "lease_expires_at"),
        Index("ix_compaction_jobs_index_window", "index_uid", "window_start"),
        # Recent merges of one index (the debt's merge rate and first-merge delays): jobs are kept for their
        # history, so without it those reads would walk every job the index ever had.
        Index("ix_compaction_jobs_index_finished", "index_uid", "finished_at",
              postgresql_where=text("status = 'success'")),
    )


class CompactionJobInputRow(Base):
    """A job's claim on one input split. `live` is true while the job is unassigned or in progress."""

    __tablename__ = "compaction_job_inputs"

    job_id: Mapped[str] = mapped_column(ForeignKey("compaction_jobs.job_id", ondelete="CASCADE"), primary_key=True)
    split_id: Mapped[str] = mapped_column(ForeignKey("splits.split_id", ondelete="CASCADE"), primary_key=True)
    live: Mapped[bool] = mapped_column(Boolean)

    __table_args__ = (
        # A split is in at most one live job: the database refuses a second claim, whatever the planner thought.
        Index("uq_compaction_job_inputs_live_split", "split_id", unique=True, postgresql_where=text("live")),
        # Every claim on a split, ended ones too: deleting a split (GC) cascades here (migration 0018).
        Index("ix_compaction_job_inputs_split", "split_id"),
    )


class CompactionWindowRow(Base):
    """Planning state of one window of one index: the planner looks only at dirty or newly closed windows."""

    __tablename__ = "compaction_windows"

    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"), primary_key=True)
    window_duration_secs: Mapped[int] = mapped_column(Integer, primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    # Set when a split lands in the window or a job over it ends; cleared by a planner pass.
    dirty: Mapped[bool] = mapped_column(Boolean, default=True)
    final_planned: Mapped[bool] = mapped_column(Boolean, default=False)
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    planned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_compacted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # When retention (or an operator) last dropped the window: its splits were marked for deletion then.
    dropped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        Index("ix_compaction_windows_dirty", "index_uid", postgresql_where=text("dirty")),
    )


class CompactionDebtSampleRow(Base):
    """One sample of an index's compaction and indexing debt, for the console's chart. Keyed by a sampling bucket
    so that several replicas refreshing their metrics write one row per bucket (the first wins); trimmed to the
    last hour."""

    __tablename__ = "compaction_debt_samples"

    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"), primary_key=True)
    sampled_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), primary_key=True)
    splits_waiting: Mapped[int] = mapped_column(BigInteger)
    bytes_waiting: Mapped[int] = mapped_column(BigInteger)
    closed_windows_not_final: Mapped[int] = mapped_column(Integer)
    oldest_waiting_split_age_secs: Mapped[float | None] = mapped_column(Double, nullable=True)
    indexing_files_waiting: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (
        # The trim deletes by age across indexes.
        Index("ix_compaction_debt_samples_sampled_at", "sampled_at"),
    )
