"""ORM model of maintenance skips: the entries a periodic pass (GC, retention, janitor, planning) could not
handle, one row per (pass, entry) however often the pass met it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, DateTime, Identity, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from strata_metastore.models import Base

__all__ = ["MAINTENANCE_PASSES", "MaintenanceSkipRow"]

# The passes that record skips; the check constraint and `strata_frame.maintenance.skips.MaintenancePass` agree.
MAINTENANCE_PASSES = ("gc", "retention", "janitor", "compaction-planning", "indexing-planning")


class MaintenanceSkipRow(Base):
    __tablename__ = "maintenance_skips"

    # Creation order, and the listing's cursor.
    skip_id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    pass_name: Mapped[str] = mapped_column("pass", String(32))
    # Not a foreign key: an incarnation's leftovers outlive its row's usefulness, and a skip must never block
    # deleting an index. Null for an entry of no index.
    index_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # What was skipped: a split id, an artifact or merge output path, a job id, an index uid.
    entry: Mapped[str] = mapped_column(Text)
    # The exception's class (the metric's `reason` label) and its message with credential-looking text removed.
    reason_class: Mapped[str] = mapped_column(String(128))
    reason: Mapped[str] = mapped_column(Text)
    first_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(Integer)

    __table_args__ = (
        UniqueConstraint("pass", "entry", name="uq_maintenance_skips_pass_entry"),
        CheckConstraint("pass IN ('gc', 'retention', 'janitor', 'compaction-planning', 'indexing-planning')",
                        name="known_pass"),
        Index("ix_maintenance_skips_pass_index", "pass", "index_id"),
    )
