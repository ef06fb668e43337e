"""The SQL of query-api's work in flight shared by its replicas: asynchronous plans and running queries
(`strata_query.shared_registry` says how a replica uses it, and holds the two statements it sends on its kept
asyncpg connection). planner-api's garbage collector reads the oldest running query here too.

Every time is PostgreSQL's clock (`now()`), so replicas whose clocks disagree agree on which plan has outlived its
owner and which running row is a dead replica's. Each decision is one conditional statement: a plan is cancelled
only while it is still submitted and finishes only while nobody cancelled it, so a cancel and a finish racing on
two replicas leave exactly one of them recorded.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Interval, bindparam, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession
from ulid import ULID

from strata_metastore.query_registry_models import QueryPlanRow, RunningQueryRow

# The owner of a running row refreshes it every few seconds; a row not refreshed for this long is a dead replica's.
RUNNING_ALIVE_SECS = 20.0


@dataclass(frozen=True, slots=True)
class StoredPlan:
    plan_id: str
    tenant: str | None
    status: str
    plan: dict[str, Any] | None
    problem: dict[str, Any] | None
    # Still submitted long after its owner would have finished or failed it: the owner is gone.
    owner_lost: bool


def _seconds(name: str, secs: float):
    return bindparam(name, timedelta(seconds=secs), type_=Interval())


class QueryRegistryRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    # --- asynchronous plans ----------------------------------------------------------------------------------

    async def add_plan(self, plan_id: str, tenant: str | None, owner: str, *, retention_secs: float) -> None:
        """Record a submitted plan; plans last written over `retention_secs` ago are deleted with it, so the table
        holds about one retention's worth of plans without a pass of its own."""
        p = QueryPlanRow
        await self.session.execute(delete(p).where(p.updated_at < func.now() - _seconds("retention", retention_secs)))
        await self.session.execute(insert(p).values(plan_id=plan_id, tenant=tenant, owner=owner, status="submitted"))

    async def finish_plan(self, plan_id: str, status: str, *, plan: dict[str, Any] | None = None,
                          problem: dict[str, Any] | None = None) -> bool:
        """Record how a plan ended, unless it no longer is submitted (cancelled meanwhile); whether it was."""
        p = QueryPlanRow
        finished = await self.session.scalar(
            update(p).where(p.plan_id == plan_id, p.status == "submitted")
            .values(status=status, plan=plan, problem=problem, updated_at=func.now()).returning(p.plan_id))
        return finished is not None

    async def plan(self, plan_id: str, *, owner_lost_after_secs: float) -> StoredPlan | None:
        p = QueryPlanRow
        lost = (p.status == "submitted") & (p.created_at < func.now() - _seconds("lost", owner_lost_after_secs))
        row = (await self.session.execute(
            select(p.plan_id, p.tenant, p.status, p.plan, p.problem, lost).where(p.plan_id == plan_id))).first()
        return None if row is None else StoredPlan(*row[:5], owner_lost=bool(row[5]))

    async def cancel_plan(self, plan_id: str, *, owner_lost_after_secs: float) -> bool:
        """Mark a plan cancelled if it is still submitted and its owner still alive; whether it was. Its owner
        sees it (`strata_query.shared_registry.cancel_requests`) and stops planning."""
        p = QueryPlanRow
        cancelled = await self.session.scalar(
            update(p).where(p.plan_id == plan_id, p.status == "submitted",
                            p.created_at >= func.now() - _seconds("lost", owner_lost_after_secs))
            .values(status="cancelled", updated_at=func.now()).returning(p.plan_id))
        return cancelled is not None

    # --- running queries -------------------------------------------------------------------------------------

    async def keep_running_alive(self, query_ids: Collection[str]) -> None:
        r = RunningQueryRow
        await self.session.execute(update(r).where(r.query_id.in_(query_ids)).values(seen_at=func.now()))

    async def request_cancel(self, query_id: str, tenant: str | None, *, alive_secs: float) -> bool:
        """Ask the replica running `query_id` to cancel it; False when no live replica runs it (or, for a tenant's
        key, not one of the tenant's)."""
        r = RunningQueryRow
        conditions = [r.query_id == query_id, r.seen_at >= func.now() - _seconds("alive", alive_secs)]
        if tenant is not None:
            conditions.append(r.tenant == tenant)
        asked = await self.session.scalar(update(r).where(*conditions).values(cancel_requested=True)
                                          .returning(r.query_id))
        return asked is not None

    async def oldest_running_start(self, *, alive_secs: float = RUNNING_ALIVE_SECS) -> datetime | None:
        """When the oldest query still running on a live replica started (its id is a ULID taken before it was
        planned), or None: the garbage collector keeps every file such a query may read."""
        r = RunningQueryRow
        ids = (await self.session.scalars(
            select(r.query_id).where(r.seen_at >= func.now() - _seconds("alive", alive_secs)))).all()
        return min((ULID.from_str(query_id).datetime for query_id in ids), default=None)

    async def forget_dead_running(self, *, alive_secs: float) -> None:
        """Delete the rows of replicas that stopped refreshing them (killed while queries ran)."""
        r = RunningQueryRow
        await self.session.execute(delete(r).where(r.seen_at < func.now() - _seconds("alive", alive_secs)))

    async def forget_running_of(self, owner: str) -> None:
        r = RunningQueryRow
        await self.session.execute(delete(r).where(r.owner == owner))
