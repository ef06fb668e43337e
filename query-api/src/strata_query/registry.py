"""What query-api tracks of work in flight: asynchronous plans (for their readers to poll and cancel) and running
queries (so a cancel can reach them). `QueryRegistry` is the one interface the service uses; this process keeps
both in memory (`InMemoryQueryRegistry`), and another implementation can keep them in PostgreSQL for replicas to
share."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal, Protocol

from strata_query.execution.engine import Engine
from strata_query.execution.engine_choice import EngineChoice
from strata_query.planning.plan import QueryPlan
from strata_shared.errors import StrataError

PlanState = Literal["submitted", "completed", "failed", "cancelled"]
FINISHED: frozenset[PlanState] = frozenset({"completed", "failed", "cancelled"})
# Finished asynchronous plans kept for their readers, the oldest dropped past this.
MAX_PLANS = 1000


@dataclass
class AsyncPlan:
    plan_id: str
    tenant: str | None
    status: PlanState = "submitted"
    # Once completed: the plan, and the engine that would run it and why.
    plan: QueryPlan | None = None
    engine: EngineChoice | None = None
    # Once failed: why, as the problem a synchronous EXPLAIN would have answered.
    error: StrataError | None = None


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
    async def save_plan(self, plan: AsyncPlan) -> None:
        """Records an asynchronous plan, new or with a new status."""
        ...

    async def plan(self, plan_id: str) -> AsyncPlan | None: ...

    async def add_running(self, query: RunningQuery) -> None: ...

    async def running(self, query_id: str) -> RunningQuery | None: ...

    async def forget_running(self, query_id: str) -> None:
        """The query's result has been sent, or it failed: nothing of it is left to cancel."""
        ...


class InMemoryQueryRegistry:
    """Both registries in this process's memory: plans and queries are visible to this process only."""

    def __init__(self, max_plans: int = MAX_PLANS) -> None:
        self.max_plans = max_plans
        self.plans: OrderedDict[str, AsyncPlan] = OrderedDict()
        self.running_queries: dict[str, RunningQuery] = {}

    async def save_plan(self, plan: AsyncPlan) -> None:
        self.plans[plan.plan_id] = plan
        # Finished plans are kept for their readers, the oldest dropped past the bound; never one still running.
        while len(self.plans) > self.max_plans:
            oldest_id, oldest = next(iter(self.plans.items()))
            if oldest.status not in FINISHED:
                break
            self.plans.pop(oldest_id)

    async def plan(self, plan_id: str) -> AsyncPlan | None:
        return self.plans.get(plan_id)

    async def add_running(self, query: RunningQuery) -> None:
        self.running_queries[query.query_id] = query

    async def running(self, query_id: str) -> RunningQuery | None:
        return self.running_queries.get(query_id)

    async def forget_running(self, query_id: str) -> None:
        self.running_queries.pop(query_id, None)
