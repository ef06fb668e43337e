"""Running a query: under an admission slot, plan it, answer it from the result cache where a result holds, else
start its plan on the chosen engine (or take the run started ahead, `run_ahead.py`) and wait for the first batch
within the time limit; what it returns (`query_run.QueryRun`) streams the rest and reports back once served."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from opentelemetry import trace
from ulid import ULID

from strata_core.config import Settings
from strata_core.errors import Unavailable
from strata_core.object_requests import Meter, metered
from strata_query.calls import PlannedQuery, QueryCall, QueryCancelled, QueryTimeout
from strata_query.cancellation import Cancellation, interrupt_until_reached
from strata_query.execution.engine import Engine
from strata_query.execution.local_query import INLINE_ROWS
from strata_query.execution.result_stream import ResultStream
from strata_query.execution.runtime import QueryRuntime
from strata_query.execution.scan_request import ScanRequest, scan_request
from strata_query.planning.plan import QueryPlan
from strata_query.query_cache import CachedPlan, CachedResult
from strata_query.query_run import QueryRun
from strata_query.registry import QueryRegistry, RunningQuery
from strata_query.run_ahead import run_ahead

tracer = trace.get_tracer("strata.query")
log = logging.getLogger("strata.query")
# How long a streamed result may wait, before its first batch goes out, for its query to be reachable from the
# other replicas (its registration is sent while the scan opens, so normally done by then).
SHARE_WAIT_SECS = 1.0


class QueryRunner:
    def __init__(self, runtime: QueryRuntime, settings: Settings, registry: QueryRegistry,
                 cancellation: Cancellation,
                 plan: Callable[[QueryCall], Awaitable[tuple[PlannedQuery, CachedPlan | None]]]) -> None:
        self.runtime = runtime
        self.settings = settings
        self.registry = registry
        self.cancellation = cancellation
        # The query's plan with its engine chosen, and the cached plan it is (`service.QueryService`).
        self.plan = plan

    async def run(self, call: QueryCall) -> QueryRun:
        """Plans the query, then runs the shaped scan with its SQL on top on the chosen engine (or answers it from
        the result cache) and returns once the first batch is in; the result streams from there. Its object-store
        requests are counted from planning to the last batch read."""
        with metered() as meter:
            try:
                return await self._run(call, meter)
            except BaseException:
                self.runtime.object_store.record("query", meter.snapshot())
                raise

    async def _run(self, call: QueryCall, meter: Meter) -> QueryRun:
        runtime, settings = self.runtime, self.settings
        query_id = str(ULID())
        started = time.perf_counter()
        row_cap = min(call.max_rows or settings.query_max_result_rows, settings.query_max_result_rows)
        timeout = min(call.timeout_secs or settings.query_timeout_secs, settings.query_timeout_secs)
        directives = call.result_cache
        async with runtime.admission.slot(call.tenant):
            ahead = run_ahead(runtime, self.registry, self.execute, call, row_cap, timeout)
            try:
                planned, cached = await self.plan(call)
            except BaseException:
                if ahead is not None:
                    ahead.abandon()
                    runtime.metrics.run_ahead.labels("abandoned").inc()
                raise
            engine, plan = planned.engine.engine, planned.plan
            result_key = (engine.name, row_cap) if engine is not None else None
            hit = cached.results.get(result_key) if cached is not None and directives.reuse else None
            if ahead is not None and (hit is not None or not ahead.holds(cached, engine)):
                ahead.abandon()
                ahead = None
                runtime.metrics.run_ahead.labels("abandoned").inc()
            elif ahead is not None:
                runtime.metrics.run_ahead.labels("used").inc()
            if engine is None:
                raise Unavailable(planned.engine.reason)
            if hit is not None:
                # Sent whole when small, as a finished run is; a larger one is serialized as a stream, off the loop.
                result = ResultStream(hit.schema, iter(hit.batches), _nothing, row_cap,
                                      complete=sum(batch.num_rows for batch in hit.batches) <= INLINE_ROWS)
                running = None
                outcome = "hit"
            else:
                if ahead is not None:
                    query_id = ahead.query_id
                    # A caller that gives up here cancels the task awaited, as it would the run below.
                    result, running = await ahead.task
                else:
                    result, running = await self.execute(plan, engine, query_id, call.tenant, row_cap, timeout)
                if not result.complete:
                    # A streamed result can be cancelled from its query id, sent with the first batch.
                    await self.registry.until_shared(query_id, SHARE_WAIT_SECS)
                outcome = "miss" if directives.reuse else "bypass"
                if cached is not None and directives.keep and (room := runtime.plan_cache.result_room):
                    result.record_up_to(room)
        runtime.metrics.result_cache.labels(outcome).inc()
        if hit is None:
            runtime.metrics.engines.labels(engine.name).inc()
            runtime.metrics.bytes_scanned.inc(plan.total_bytes)
            runtime.metrics.rows_scanned.inc(plan.total_rows)
        loop = asyncio.get_running_loop()

        def on_served(run: QueryRun, sent: bool) -> None:
            # On the thread that sent the result: what belongs to the event loop is handed to it.
            outcome = "failed"
            if sent:
                outcome = "cancelled" if running is not None and running.cancelled else "success"
            result.close()
            runtime.object_store.record("query", meter.snapshot())
            if running is not None:
                loop.call_soon_threadsafe(self.registry.forget_running, query_id)
            runtime.metrics.outcomes.labels(outcome).inc()
            if result.truncated:
                runtime.metrics.truncated.inc()
            if outcome == "success" and cached is not None and (served := result.served()) is not None:
                loop.call_soon_threadsafe(runtime.plan_cache.cache_result, call.sql, call.tenant, cached, result_key,
                                          CachedResult(result.schema, tuple(served),
                                                       sum(batch.nbytes for batch in served)))

        return QueryRun(query_id=query_id, plan=plan, engine=engine, engine_reason=planned.engine.reason,
                        row_cap=row_cap, result_cache=outcome, result=result, started=started, meter=meter,
                        on_served=on_served)

    async def execute(self, plan: QueryPlan, engine: Engine, query_id: str, tenant: str | None, row_cap: int,
                      limit_secs: float) -> tuple[ResultStream, RunningQuery]:
        """Starts the plan on its engine and waits for the first batch; the query can be cancelled by its id until
        its result has been sent."""
        metrics = self.runtime.metrics
        scan = scan_request(query_id, plan, engine.dialect, row_cap, self.settings.fault_query_scan_delay_secs)
        running = RunningQuery(query_id, tenant, engine)
        # Local at once; shared with the other replicas while the scan opens (no round trip on the way).
        self.registry.add_running(running)
        self.cancellation.watch()
        try:
            with tracer.start_as_current_span("fetch_parquet") as span:
                span.set_attribute("strata.engine", engine.name)
                span.set_attribute("strata.files", len(scan.tasks))
                span.set_attribute("strata.bytes", plan.total_bytes)
                with tracer.start_as_current_span("execute"):
                    execute_started = time.perf_counter()
                    result = await _open_result(running, scan, limit_secs)
                    if running.cancelled:
                        result.close()
                        raise QueryCancelled(f"query {query_id} was cancelled")
                    metrics.latency.labels("execute").observe(time.perf_counter() - execute_started)
            return result, running
        except TimeoutError:
            self.registry.forget_running(query_id)
            metrics.outcomes.labels("timeout").inc()
            raise QueryTimeout(f"query {query_id} did not finish within its time limit of {limit_secs:g} s and "
                               "was interrupted: narrow its time range or filters, or raise timeout_secs up to the "
                               f"server's limit ({self.settings.query_timeout_secs:g} s)") from None
        except BaseException as exc:
            self.registry.forget_running(query_id)
            if running.cancelled:
                metrics.outcomes.labels("cancelled").inc()
                raise QueryCancelled(f"query {query_id} was cancelled") from exc
            if isinstance(exc, Exception):
                metrics.outcomes.labels("failed").inc()
                problem = engine.problem(exc)
                if problem is not None:
                    log.warning("query %s failed on %s: %s", query_id, engine.name, problem.detail)
                    raise problem from exc
            raise


async def _open_result(running: RunningQuery, scan: ScanRequest, limit_secs: float) -> ResultStream:
    """Starts the query on its engine in a worker thread and waits for its first batch, at most `limit_secs`. A
    query given up on (timeout, or the caller cancelled) is interrupted, and a stream it opens anyway closed."""
    opening = asyncio.ensure_future(asyncio.to_thread(running.engine.open, scan))
    opening.add_done_callback(lambda _: setattr(running, "opening", False))
    try:
        return await asyncio.wait_for(asyncio.shield(opening), limit_secs)
    except BaseException:
        opening.add_done_callback(_close_if_opened)
        if not opening.done():
            await asyncio.shield(asyncio.to_thread(interrupt_until_reached, running))
        raise


def _close_if_opened(opening: asyncio.Future) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def _nothing() -> None:
    """A cached result holds no engine resources to release."""
