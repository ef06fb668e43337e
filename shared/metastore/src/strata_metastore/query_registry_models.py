"""ORM models of query-api's work in flight, shared by its replicas (`query_registry_repository.py`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, CheckConstraint, DateTime, Index, String, false, func
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from strata_metastore.models import Base


class QueryPlanRow(Base):
    """An asynchronous plan as its readers see it, whichever replica plans it. Times are PostgreSQL's clock."""

    __tablename__ = "query_plans"
    __table_args__ = (
        CheckConstraint("status IN ('submitted', 'completed', 'failed', 'cancelled')", name="query_plan_status"),
        # Expired plans are deleted by age.
        Index("ix_query_plans_updated_at", "updated_at"),
    )

    plan_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    # NULL: planned by an admin key, visible to admin keys only.
    tenant: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # The replica planning it (`web.singleton.replica_id`).
    owner: Mapped[str] = mapped_column(String(300))
    status: Mapped[str] = mapped_column(String(16))
    # Once completed: the body the API answers (`PlanOut`); once failed: the problem.
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSONB, nullable=True)
    problem: Mapped[dict[str, Any] | None] = mapped_column(JSONB, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class RunningQueryRow(Base):
    """A query running on one replica, so a cancel sent to any replica reaches it: the receiving replica sets
    `cancel_requested`, the owner sees it and interrupts the query. The owner refreshes `seen_at` while the query
    runs; a row it stopped refreshing is a dead replica's."""

    __tablename__ = "running_queries"
    __table_args__ = (Index("ix_running_queries_seen_at", "seen_at"),)

    query_id: Mapped[str] = mapped_column(String(26), primary_key=True)
    tenant: Mapped[str | None] = mapped_column(String(128), nullable=True)
    owner: Mapped[str] = mapped_column(String(300))
    cancel_requested: Mapped[bool] = mapped_column(Boolean, server_default=false())
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
