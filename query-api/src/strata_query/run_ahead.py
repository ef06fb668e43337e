"""A run of a query's kept plan started before the plan is checked (one metastore read, `service.QueryService`'s
plan cache check), so the engine's time overlaps the check's round trip; the run (`run.QueryRunner`) uses it only
if the check keeps the very plan it reads, and abandons it unanswered otherwise."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ulid import ULID

from strata_query.calls import QueryCall
from strata_query.execution.engine import Engine
from strata_query.execution.engine_choice import EngineUnavailable, choose_engine
from strata_query.execution.result_stream import ResultStream
from strata_query.execution.runtime import QueryRuntime
from strata_query.planning.plan import QueryPlan
from strata_query.query_cache import CachedPlan, reuse
from strata_query.registry import QueryRegistry, RunningQuery

# Starts a plan on its engine (`run.QueryRunner.execute`): plan, engine, query id, tenant, row cap, time limit.
Execute = Callable[[QueryPlan, Engine, str, str | None, int, float], Awaitable[tuple[ResultStream, RunningQuery]]]


@dataclass(frozen=True, slots=True)
class RunAhead:
    """A run started on a kept plan before the plan's check."""

    query_id: str
    cached: CachedPlan
    engine: Engine
    task: asyncio.Future[tuple[ResultStream, RunningQuery]]
    registry: QueryRegistry

    def holds(self, cached: CachedPlan | None, engine: Engine | None) -> bool:
        """True when the check kept the very plan this run reads (its state unchanged) on the same engine."""
        return cached is self.cached and engine is self.engine

    def abandon(self) -> None:
        """Drops the run, unanswered: interrupted if still opening (the run's `execute` then closes what the
        engine opens and forgets the run), closed if already open; its error, if it failed, is nobody's to raise."""
        if not self.task.done():
            self.task.cancel()
        self.task.add_done_callback(self._release)

    def _release(self, task: asyncio.Future[tuple[ResultStream, RunningQuery]]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        result, running = task.result()
        result.close()
        self.registry.forget_running(running.query_id)


def run_ahead(runtime: QueryRuntime, registry: QueryRegistry, execute: Execute, call: QueryCall, row_cap: int,
              timeout: float) -> RunAhead | None:
    """The run ahead of this call, started; None when none is worth starting.

    Only on the in-process engine (a Spark job started for nothing costs far more than the read it would
    hide) and only when the result cache cannot answer. A plan that turns out stale was read in vain but
    never answered: its files may be gone by then (replaced and collected), which fails only the run ahead.
    Its id, like any run's, is taken before planning, so the garbage collector's hold covers what it reads."""
    cached = runtime.plan_cache.candidate(call.sql, call.tenant)
    if cached is None:
        return None
    plan = reuse(cached, cached.state, time.time())
    if plan is None:
        return None
    try:
        choice = choose_engine(files=plan.total_files, rows=plan.total_rows, bytes_read=plan.total_bytes,
                               limits=runtime.local_limits, requested=call.engine, engines=runtime.engines,
                               local_only=plan.parsed.local_only)
    except EngineUnavailable:
        return None
    engine = choice.engine
    if engine is None or engine is not runtime.engines.in_process:
        return None
    if call.result_cache.reuse and (engine.name, row_cap) in cached.results:
        return None
    query_id = str(ULID())
    task = asyncio.ensure_future(execute(plan, engine, query_id, call.tenant, row_cap, timeout))
    return RunAhead(query_id, cached, engine, task, registry)
