"""ORM models of row-level deletes (migration 0014): the requests, and the splits each one covers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, DateTime, ForeignKey, Index, String, Text, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from strata_metastore.models import Base


class DeleteRow(Base):
    __tablename__ = "deletes"

    delete_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"))
    # None: every partition (an admin's delete); a tenant's delete is bound to its own.
    partition_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    where_sql: Mapped[str] = mapped_column(Text)
    # The accepted predicate in negation normal form (`predicate_json`): what scans and rewrites apply.
    predicate: Mapped[dict[str, Any]] = mapped_column(JSONB)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    requested_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # The index's plan generation when the delete was accepted: it covers what was published up to there.
    cutoff_generation: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    accepted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        CheckConstraint("status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')",
                        name="delete_status"),
        Index("ix_deletes_index_uid", "index_uid", "delete_id"),
    )


class DeleteSplitRow(Base):
    """One split a delete covers. pending -> rewriting (a rewrite job claimed it) -> rewritten (the job
    published its replacement); or merged: the split left without this delete's rewrite, either replaced by the
    rewrite of an older delete (the coverage moved to its outputs: rows with `inherited_from` set) or dropped by
    retention (no new split); or cancelled: the delete was cancelled before any of its rewrites published
    (migration 0015); or unchanged: the rewrite found no row the delete matches there, and the split stays
    published as it was (migration 0016)."""

    __tablename__ = "delete_splits"

    delete_id: Mapped[str] = mapped_column(ForeignKey("deletes.delete_id", ondelete="CASCADE"), primary_key=True)
    # No foreign key: the receipt outlives the split row, which the garbage collector deletes after the grace.
    split_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    index_uid: Mapped[str] = mapped_column(String(96))
    state: Mapped[str] = mapped_column(String(16))
    job_id: Mapped[str | None] = mapped_column(String(26), nullable=True)
    rows_before: Mapped[int] = mapped_column(BigInteger)
    rows_removed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    new_split_ids: Mapped[list[str]] = mapped_column(ARRAY(String(26)), default=list, server_default="{}")
    inherited_from: Mapped[str | None] = mapped_column(String(26), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        CheckConstraint("state IN ('pending', 'rewriting', 'rewritten', 'merged', 'cancelled', 'unchanged')",
                        name="delete_split_state"),
        Index("ix_delete_splits_in_force", "split_id", postgresql_where=text("state IN ('pending', 'rewriting')")),
    )
