"""The columns every leased job table shares, as SQLAlchemy mapping: the status, the lease, the fencing token
and the failure history that `lease_queue.LeaseQueue` reads and writes.

The job tables themselves (`metastore/compaction_models.py`, `metastore/indexing_models.py`) stay in the metastore:
they belong to its one `DeclarativeBase` and its one Alembic history, and mix these columns in. The fencing
sequence is registered on the same metadata for the same reason.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Double, Enum, Integer, String, Text, func
from sqlalchemy import Sequence as DbSequence
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from strata_core.domain.job_statuses import JobStatus
from strata_metastore.models import Base

job_status_enum = Enum(JobStatus, name="job_status", values_callable=lambda e: [m.value for m in e])
# Fencing tokens: one database sequence, so every assignment's token is larger than every earlier one, whatever
# the queue.
fencing_token_seq = DbSequence("compaction_fencing_token_seq", metadata=Base.metadata)


class LeasedJobColumns:
    """Columns of a leased job; the table adds its own `job_id` primary key and payload."""

    status: Mapped[JobStatus] = mapped_column(job_status_enum)
    fencing_token: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    worker_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # [{at, fencing_token, worker_id, reason}], newest last.
    failure_log: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, default=list)
    stage: Mapped[str | None] = mapped_column(String(32), nullable=True)
    progress: Mapped[float] = mapped_column(Double, default=0.0)
    spark_operation_tag: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    first_assigned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    assigned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


def new_job_values(now: datetime) -> dict[str, Any]:
    """The lease columns of a job that was just created (for Core bulk inserts, which need every key)."""
    return {"status": JobStatus.UNASSIGNED, "fencing_token": None, "worker_id": None, "lease_expires_at": None,
            "failures": 0, "last_error": None, "failure_log": [], "stage": None, "progress": 0.0,
            "spark_operation_tag": None, "created_at": now, "updated_at": now, "first_assigned_at": None,
            "assigned_at": None, "finished_at": None}
