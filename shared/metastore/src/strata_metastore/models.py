"""ORM models of the metastore. Column comments say what the planner and query paths rely on."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Computed,
    DateTime,
    Double,
    Enum,
    ForeignKey,
    Index,
    Integer,
    Numeric,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from strata_core.domain.split import SplitState

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    pass


Base.metadata.naming_convention = NAMING_CONVENTION

split_state_enum = Enum(SplitState, name="split_state", values_callable=lambda e: [m.value for m in e])
value_type_enum = Enum("string", "i64", "u64", "f64", "null", name="column_value_type")


class IndexRow(Base):
    """One incarnation of an index: deleting and re-creating a name yields a new index_uid."""

    __tablename__ = "indexes"

    index_uid: Mapped[str] = mapped_column(String(96), primary_key=True)
    index_id: Mapped[str] = mapped_column(String(64))
    incarnation: Mapped[str] = mapped_column(String(26))
    config: Mapped[dict[str, Any]] = mapped_column(JSONB)
    doc_mapping_uid: Mapped[str] = mapped_column(String(32))
    # Raised on every update: optimistic concurrency for writers holding an older config.
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Operator state, not configuration (a PUT of the settings keeps it): while set, the queue named hands out
    # none of the index's jobs, and compaction plans none (migration 0005).
    compaction_paused_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    indexing_paused_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        # A name is taken by at most one live incarnation.
        Index("uq_indexes_live_index_id", "index_id", unique=True, postgresql_where=text("deleted_at IS NULL")),
    )


class SplitRow(Base):
    __tablename__ = "splits"

    split_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"))
    source_id: Mapped[str] = mapped_column(String(128))
    partition_id: Mapped[str] = mapped_column(String(128))
    doc_mapping_uid: Mapped[str] = mapped_column(String(32))
    sort_schema: Mapped[str] = mapped_column(Text)
    window_start: Mapped[int] = mapped_column(BigInteger)
    window_duration_secs: Mapped[int] = mapped_column(Integer)
    time_range_start: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    time_range_end: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    num_rows: Mapped[int] = mapped_column(BigInteger)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    uri: Mapped[str] = mapped_column(Text, unique=True)
    # [{row_offset, num_rows, byte_offset, byte_length}, ...] in file order.
    row_groups: Mapped[list[dict[str, int]]] = mapped_column(JSONB)
    # Computed by PostgreSQL when the row is written (migration 0009), for the planner's counts.
    num_row_groups: Mapped[int] = mapped_column(
        Integer, Computed("coalesce(jsonb_array_length(row_groups), 0)", persisted=True))
    row_group_bytes: Mapped[int] = mapped_column(
        BigInteger, Computed("strata_row_group_bytes(row_groups, size_bytes)", persisted=True))
    num_merge_ops: Mapped[int] = mapped_column(Integer, default=0)
    generation: Mapped[int] = mapped_column(Integer, default=0)
    root_split_ids: Mapped[list[str]] = mapped_column(ARRAY(String(26)), default=list)
    # Direct lineage: the splits a merge consumed to produce this one (empty for ingested splits).
    parent_split_ids: Mapped[list[str]] = mapped_column(ARRAY(String(26)), default=list, server_default="{}")
    state: Mapped[SplitState] = mapped_column(split_state_enum)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    published_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    marked_for_deletion_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (
        # "splits of index X, state Z, window range Y", and listing pages ordered by (window_start, split_id).
        Index("ix_splits_index_state_window", "index_uid", "state", "window_start", "split_id"),
        Index("ix_splits_index_window", "index_uid", "window_start", "split_id"),
        # Compaction debt counts the published splits not yet mature, which are the recent ones (the age part of
        # maturity as a range on created_at): found without walking an index's million mature splits.
        Index("ix_splits_published_created", "index_uid", "created_at",
              postgresql_where=text("state = 'published'")),
        # Migration 0018: the published splits of the queried windows, with every column a plan's candidate
        # statement and its counts read (an index-only scan, whatever else the table holds), and the replaced
        # splits GC pages through in mark order (the due ones only, not the table nor those within the grace).
        Index("ix_splits_published_window", "index_uid", "window_start", "split_id",
              postgresql_include=["partition_id", "time_range_start", "time_range_end", "num_rows", "size_bytes",
                                  "num_row_groups", "row_group_bytes"],
              postgresql_where=text("state = 'published'")),
        Index("ix_splits_marked_for_deletion", "marked_for_deletion_at", "split_id",
              postgresql_where=text("state = 'marked_for_deletion'")),
        CheckConstraint("window_duration_secs IN (60,120,180,240,300,360,600,720,900,1200,1800,3600)",
                        name="tw2_window_duration"),
        CheckConstraint("window_start % window_duration_secs = 0", name="window_aligned"),
        # TW-1 enforced by the database too: no split row can claim times outside its window.
        CheckConstraint(
            "time_range_start IS NULL OR (time_range_start >= window_start "
            "AND time_range_end < window_start + window_duration_secs)",
            name="tw1_one_window",
        ),
        # "splits overlapping time range T": a GiST range index answers && directly.
        Index(
            "ix_splits_time_range",
            text("int8range(time_range_start, time_range_end, '[]')"),
            postgresql_using="gist",
        ),
    )


class SplitColumnStatsRow(Base):
    """Typed min/max per column (docs/architecture.md, "Split statistics"): exactly one pair of typed columns is set."""

    __tablename__ = "split_column_stats"

    split_id: Mapped[str] = mapped_column(ForeignKey("splits.split_id", ondelete="CASCADE"), primary_key=True)
    column_name: Mapped[str] = mapped_column(String(128), primary_key=True)
    value_type: Mapped[str] = mapped_column(value_type_enum)
    min_string: Mapped[str | None] = mapped_column(Text, nullable=True)
    max_string: Mapped[str | None] = mapped_column(Text, nullable=True)
    min_i64: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    max_i64: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    min_u64: Mapped[Decimal | None] = mapped_column(Numeric(20, 0), nullable=True)
    max_u64: Mapped[Decimal | None] = mapped_column(Numeric(20, 0), nullable=True)
    min_f64: Mapped[float | None] = mapped_column(Double, nullable=True)
    max_f64: Mapped[float | None] = mapped_column(Double, nullable=True)
    null_count: Mapped[int] = mapped_column(BigInteger)
    regex: Mapped[str | None] = mapped_column(Text, nullable=True)


class PublishedTotalsRow(Base):
    """Files, bytes, row groups and row-group bytes published per (index, partition), kept exact by triggers on
    `splits` (migrations 0004 and 0007; once per statement since 0008)."""

    __tablename__ = "published_totals"

    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"), primary_key=True)
    partition_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    files: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)
    # Migration 0007: what a plan's later stages count in, so its first stage starts from the same units.
    row_groups: Mapped[int] = mapped_column(BigInteger, server_default="0")
    row_group_bytes: Mapped[int] = mapped_column(BigInteger, server_default="0")


class PlanGenerationRow(Base):
    """Raised by triggers on every change of an index's published splits or artifact snapshots (migration 0006;
    once per statement since 0008): query-api reuses a kept plan only while it has not moved."""

    __tablename__ = "plan_generations"

    index_uid: Mapped[str] = mapped_column(ForeignKey("indexes.index_uid", ondelete="CASCADE"), primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger)
