"""What query-api tracks of work in flight: asynchronous plans (for their readers to poll and cancel) and running
queries (so a cancel can reach them), whichever replica a call lands on. `QueryRegistry` is the interface the
service uses; `shared_registry.SharedQueryRegistry` keeps both in PostgreSQL for every replica to share."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from strata_core.errors import StrataError
from strata_query.execution.engine import Engine

PlanState = Literal["submitted", "completed", "failed", "cancelled"]


class ReplicaStopped(StrataError):
    status, slug, title = 503, "replica-stopped", "Replica stopped"


def replica_stopped(plan_id: str) -> ReplicaStopped:
    """Why a plan failed whose replica stopped (shut down, or killed) before it finished planning it."""
    return ReplicaStopped(f"plan {plan_id} was being planned by a query-api replica that stopped before it "
                          "finished; submit it again")


@dataclass
class AsyncPlan:
    plan_id: str
    tenant: str | None
    status: PlanState = "submitted"
    # Once completed: the plan as the API answers it (`schemas.PlanOut` as JSON), the engine chosen included.
    plan: dict[str, Any] | None = None
    # Once failed: why, as the problem (RFC 9457, as JSON) a synchronous EXPLAIN would have answered.
    problem: dict[str, Any] | None = None


@dataclass
class RunningQuery:
    query_id: str
    tenant: str | None
    engine: Engine
    started: float = field(default_factory=time.monotonic)
    cancelled: bool = False
    # True until the engine has produced the first batch (or failed).
    opening: bool = True


class QueryRegistry(Protocol):
    # --- asynchronous plans: every call is a round trip, none is on a query's path ---

    async def add_plan(self, plan: AsyncPlan) -> None:
        """Records a submitted plan, planned by this replica."""
        ...

    async def finish_plan(self, plan: AsyncPlan) -> bool:
        """Records how a plan ended, unless it was cancelled meanwhile (then False)."""
        ...

    async def plan(self, plan_id: str) -> AsyncPlan | None:
        """The plan as its readers see it, whichever replica plans it; one whose replica stopped reads failed."""
        ...

    async def cancel_plan(self, plan_id: str) -> AsyncPlan | None:
        """Cancels the plan if it is still being planned (its replica stops planning it) and returns it."""
        ...

    # --- running queries: registering and forgetting one are local, shared off the query's path ---

    def add_running(self, query: RunningQuery) -> None: ...

    def forget_running(self, query_id: str) -> None:
        """The query's result has been sent, or it failed: nothing of it is left to cancel."""
        ...

    def running_here(self, query_id: str) -> RunningQuery | None:
        """The query if this replica runs it."""
        ...

    def has_running(self) -> bool: ...

    async def until_shared(self, query_id: str, timeout_secs: float) -> None:
        """Waits (at most `timeout_secs`) until other replicas can reach the running query."""
        ...

    async def request_cancel(self, query_id: str, tenant: str | None) -> bool:
        """Asks the replica running the query to cancel it; False when no replica runs it (for a tenant: none of
        its own)."""
        ...

    async def cancel_requests(self, plan_ids: Sequence[str]) -> tuple[list[str], list[RunningQuery]]:
        """Of this replica's plans, those cancelled elsewhere; of its running queries, those a cancel was asked
        for elsewhere."""
        ...

    async def close(self) -> None: ...
