"""The query service every door calls (HTTP in `router.py`, Arrow Flight SQL in `flight/`): explain a query, run it
(`run.py`), cancel it (`cancellation.py`), plan it asynchronously (`async_plans.py`), list the tables a caller can
query. It plans a query here: from the plan cache while the kept plan holds, else with `planning.planner.build_plan`,
then chooses its engine. Inputs and outputs are plain objects (`calls.py`) and errors are domain errors: a door
translates its protocol to and from them, and builds its own bodies and problems."""

from __future__ import annotations

import functools
import time

from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.config import Settings
from strata_core.domain.index_config import IndexSettings
from strata_core.observability.context import annotate
from strata_metastore.repositories import IndexRepository
from strata_query.async_plans import AsyncPlans, RecordForms
from strata_query.calls import IndexTable, PlannedQuery, QueryCall
from strata_query.cancellation import Cancellation
from strata_query.execution.engine_choice import EngineChoice, EngineUnavailable, choose_engine
from strata_query.execution.runtime import QueryRuntime
from strata_query.plan_state import live_index_state
from strata_query.planning.plan import QueryPlan
from strata_query.planning.planner import build_plan, query_schema, table_of
from strata_query.query_cache import CachedPlan, cacheable, reuse
from strata_query.query_run import QueryRun
from strata_query.registry import AsyncPlan, QueryRegistry
from strata_query.run import QueryRunner

tracer = trace.get_tracer("strata.query")


class QueryService:
    def __init__(self, runtime: QueryRuntime, sessions: async_sessionmaker[AsyncSession], settings: Settings,
                 registry: QueryRegistry, record_forms: RecordForms) -> None:
        self.runtime = runtime
        self.sessions = sessions
        self.settings = settings
        self.registry = registry
        self.plans = AsyncPlans(registry, settings, self.explain, record_forms)
        self.cancellation = Cancellation(registry, self.plans.tasks)
        self.runner = QueryRunner(runtime, settings, registry, self.cancellation, self._plan)

    async def close(self) -> None:
        """At shutdown: asynchronous plans being planned here finish or fail (`AsyncPlans.close`), and nothing of
        this replica's work stays in the registry."""
        await self.plans.close()
        await self.cancellation.close()
        await self.registry.close()

    # --- plans -----------------------------------------------------------------------------------------------

    async def explain(self, call: QueryCall) -> PlannedQuery:
        """The plan and the engine that would run it, without running it."""
        with self.runtime.object_store.measure("query"):
            async with self.runtime.admission.slot(call.tenant):
                planned, _ = await self._plan(call)
        return planned

    def check(self, sql: str) -> None:
        """Refuses SQL that does not parse (with its position), before anything is planned: what a handle to a
        query later planned (an asynchronous plan, a prepared statement) checks when it is handed out."""
        _parses(sql)

    async def submit_plan(self, call: QueryCall) -> AsyncPlan:
        """Starts planning in the background and returns its record to poll. SQL that does not parse is refused
        here, before a plan id is handed out."""
        self.check(call.sql)
        entry = await self.plans.submit(call)
        self.cancellation.watch()
        return entry

    async def plan_status(self, plan_id: str, tenant: str | None) -> AsyncPlan:
        return await self.plans.status(plan_id, tenant)

    async def cancel_plan(self, plan_id: str, tenant: str | None) -> AsyncPlan:
        """Cancels an asynchronous plan still being planned, on whichever replica plans it; a finished one keeps
        its status."""
        return await self.plans.cancel(plan_id, tenant)

    async def _plan(self, call: QueryCall) -> tuple[PlannedQuery, CachedPlan | None]:
        """The query's plan with its engine chosen, and the cached plan it is (None when it is not cached)."""
        runtime = self.runtime
        started = time.perf_counter()
        with tracer.start_as_current_span("plan_build") as span:
            plan, cached = await self._cached_plan(call)
            span.set_attribute("strata.plan_kept", plan is not None)
            if plan is None:
                async with self.sessions() as session:
                    plan = await build_plan(session, call.sql, tenant=call.tenant, now=time.time(),
                                            max_files=self.settings.query_max_files, artifacts=runtime.artifacts,
                                            footers=runtime.footers)
                    cached = await cacheable(session, plan, runtime.plan_cache)
                if cached is not None:
                    runtime.plan_cache.put(call.sql, call.tenant, cached)
            span.set_attribute("strata.index_id", plan.index_id)
            annotate(index=plan.index_id)
            span.set_attribute("strata.files", plan.total_files)
            span.set_attribute("strata.bytes", plan.total_bytes)
        runtime.metrics.latency.labels("plan").observe(time.perf_counter() - started)
        runtime.metrics.observe_plan(plan)
        try:
            choice = choose_engine(files=plan.total_files, rows=plan.total_rows, bytes_read=plan.total_bytes,
                                   limits=runtime.local_limits, requested=call.engine, engines=runtime.engines,
                                   local_only=plan.parsed.local_only)
        except EngineUnavailable as exc:
            choice = EngineChoice(None, str(exc))
        return PlannedQuery(plan, choice), cached

    async def _cached_plan(self, call: QueryCall) -> tuple[QueryPlan | None, CachedPlan | None]:
        """The cached plan of this query, if it still holds (one metastore read), as a copy and as cached;
        (None, None) to plan it."""
        runtime = self.runtime
        cached = runtime.plan_cache.candidate(call.sql, call.tenant)
        if cached is None:
            runtime.metrics.plan_cache.labels("miss").inc()
            return None, None
        started = time.perf_counter()
        current = await live_index_state(runtime.plan_checks, cached.plan.index_id)
        plan = reuse(cached, current, time.time())
        if plan is None:
            runtime.plan_cache.drop(call.sql, call.tenant)
            runtime.metrics.plan_cache.labels("stale").inc()
            return None, None
        runtime.metrics.plan_cache.labels("hit").inc()
        plan.planning_ms = round((time.perf_counter() - started) * 1000, 3)
        return plan, cached

    # --- catalog ---------------------------------------------------------------------------------------------

    async def tables(self, tenant: str | None) -> list[IndexTable]:
        """The indexes a caller can query and find rows in: a tenant's are those holding published files of its
        partition (another tenant's index is not listed; queried, it answers no rows), an admin's all of them."""
        async with self.sessions() as session:
            rows = await IndexRepository(session).holding_partition(tenant)
        return [IndexTable(row.index_id, query_schema(IndexSettings.model_validate(row.config))) for row in rows]

    # --- queries ---------------------------------------------------------------------------------------------

    async def run(self, call: QueryCall) -> QueryRun:
        """Plans the query and runs it (`run.QueryRunner.run`): returns once the first batch is in."""
        return await self.runner.run(call)

    async def cancel(self, query_id: str, tenant: str | None) -> None:
        """Interrupts a running query on its engine, on whichever replica runs it."""
        await self.cancellation.cancel_query(query_id, tenant)


@functools.lru_cache(maxsize=1024)
def _parses(sql: str) -> str:
    """`table_of`, remembered for SQL that parses (an error is raised again each time): ADBC prepares every
    statement it runs, and a dashboard's statements repeat, so its parse is not paid twice per query."""
    return table_of(sql)
