"""The query path, whatever door a query comes in by (HTTP in `router.py`; an Arrow Flight SQL server can call the
same methods): plan it (from the plan cache, else `planning.planner.build_plan`), choose its engine, run it under
admission with a row cap and a timeout, answer it from the result cache where it holds, cancel it; and plan
asynchronously. Inputs and outputs are plain objects: a door translates its protocol to and from them."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from ulid import ULID

from strata_query.execution.engine import Engine
from strata_query.execution.engine_choice import EngineChoice, EngineUnavailable, choose_engine
from strata_query.execution.local_query import INLINE_ROWS
from strata_query.execution.result_stream import ResultStream
from strata_query.execution.runtime import QueryRuntime
from strata_query.execution.scan_request import ScanRequest, scan_request
from strata_query.planning.plan import QueryPlan
from strata_query.planning.planner import build_plan, query_schema, table_of
from strata_query.query_cache import CachedPlan, CachedResult, cacheable, reuse
from strata_query.query_run import QueryRun
from strata_query.registry import AsyncPlan, QueryRegistry, RunningQuery, replica_stopped
from strata_query.schemas import plan_out
from strata_shared.config import Settings
from strata_shared.domain.index_config import IndexSettings
from strata_shared.errors import NotFound, StrataError, Unavailable
from strata_shared.metastore.plan_state import live_index_state
from strata_shared.metastore.repositories import IndexRepository
from strata_shared.object_requests import Meter, metered
from strata_shared.observability.context import annotate
from strata_shared.web.problems import problem_of

tracer = trace.get_tracer("strata.query")
log = logging.getLogger("strata.query")
CANCEL_RETRY_SECS = 30.0
# While this replica has work in flight, it reads this often whether a cancel for it was received elsewhere.
CANCEL_POLL_SECS = 0.25
# How long a streamed result may wait, before its first batch goes out, for its query to be reachable from the
# other replicas (its registration is sent while the scan opens, so normally done by then).
SHARE_WAIT_SECS = 1.0


class QueryTimeout(StrataError):
    """The query's own limit, not a gateway's: a 4xx (retrying the same query meets the same limit), named in the
    detail; Flight SQL answers it as DEADLINE_EXCEEDED."""
    status, slug, title = 422, "query-timeout", "Query over its time limit"


class QueryCancelled(StrataError):
    status, slug, title = 409, "query-cancelled", "Query cancelled"


class PlanningFailed(StrataError):
    """An asynchronous plan failed on a defect (not a problem of the query): recorded for its reader."""


@dataclass(frozen=True, slots=True)
class ResultCacheDirectives:
    # Answer from a cached result when one holds.
    reuse: bool = True
    # Cache this run's result.
    keep: bool = True

    @classmethod
    def from_cache_control(cls, cache_control: str | None) -> ResultCacheDirectives:
        """A request's Cache-Control (RFC 9111: `no-cache` asks for an answer checked at the origin, here a run;
        `no-store` asks that nothing of it be kept), an HTTP header or a Flight call header alike."""
        directives = {part.split("=", 1)[0].strip().lower() for part in (cache_control or "").split(",")}
        if "no-store" in directives:
            return cls(reuse=False, keep=False)
        return cls(reuse="no-cache" not in directives, keep=True)


@dataclass(frozen=True, slots=True)
class QueryCall:
    """A query as a caller asks it."""

    tenant: str | None
    sql: str
    # An engine's name to run on instead of the one the plan's size selects.
    engine: str | None = None
    # At most the server's caps.
    max_rows: int | None = None
    timeout_secs: float | None = None
    result_cache: ResultCacheDirectives = field(default_factory=ResultCacheDirectives)


@dataclass(frozen=True, slots=True)
class IndexTable:
    """An index as a query sees it: the name to query it by and the columns it has."""

    index_id: str
    schema: pa.Schema


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    plan: QueryPlan
    engine: EngineChoice


class QueryService:
    def __init__(self, runtime: QueryRuntime, sessions: async_sessionmaker[AsyncSession], settings: Settings,
                 registry: QueryRegistry) -> None:
        self.runtime = runtime
        self.sessions = sessions
        self.settings = settings
        self.registry = registry
        # Asynchronous plans being planned in this process, so a cancel can stop them.
        self._plan_tasks: dict[str, asyncio.Task] = {}
        self._background: set[asyncio.Task] = set()
        self._cancel_watch: asyncio.Task | None = None

    async def close(self) -> None:
        """At shutdown: plans being planned here get the shutdown timeout to finish, as requests in flight do, so
        a rolling restart fails none; those still planning then fail (their readers, on any replica, learn it at
        once rather than at the timeout), and nothing of this replica's work stays in the registry."""
        if self._plan_tasks:
            await asyncio.wait(list(self._plan_tasks.values()), timeout=self.settings.shutdown_timeout_secs)
        for plan_id, task in list(self._plan_tasks.items()):
            try:
                await self.registry.finish_plan(AsyncPlan(plan_id, None, "failed",
                                                          problem=problem_of(replica_stopped(plan_id))))
            except Exception:  # noqa: BLE001 - the plan then reads failed once its owner counts as lost
                log.exception("recording plan %s as stopped failed", plan_id)
            task.cancel()
        await asyncio.gather(*self._plan_tasks.values(), return_exceptions=True)
        if self._cancel_watch is not None:
            self._cancel_watch.cancel()
            with suppress(asyncio.CancelledError):
                await self._cancel_watch
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
        entry = AsyncPlan(str(ULID()), call.tenant)
        await self.registry.add_plan(entry)
        task = asyncio.create_task(self._plan_in_background(entry, call), name=f"plan-{entry.plan_id}")
        self._plan_tasks[entry.plan_id] = task
        task.add_done_callback(lambda _: self._plan_tasks.pop(entry.plan_id, None))
        self._watch_cancel_requests()
        return entry

    async def plan_status(self, plan_id: str, tenant: str | None) -> AsyncPlan:
        entry = await self.registry.plan(plan_id)
        if entry is None or (tenant is not None and entry.tenant != tenant):
            raise NotFound(f"plan {plan_id!r} does not exist")
        return entry

    async def cancel_plan(self, plan_id: str, tenant: str | None) -> AsyncPlan:
        """Cancels an asynchronous plan still being planned, on whichever replica plans it; a finished one keeps
        its status."""
        entry = await self.plan_status(plan_id, tenant)
        if entry.status != "submitted":
            return entry
        entry = await self.registry.cancel_plan(plan_id) or entry
        # Planned here: stopped now. Elsewhere, its replica sees the cancel within CANCEL_POLL_SECS.
        await self._stop_planning(plan_id)
        return entry

    async def _stop_planning(self, plan_id: str) -> None:
        task = self._plan_tasks.get(plan_id)
        if task is not None and not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def _plan_in_background(self, entry: AsyncPlan, call: QueryCall) -> None:
        """Plans within the query timeout, so a plan still submitted past it can only be a stopped replica's;
        a cancelled plan is recorded by whoever cancelled it."""
        timeout = min(call.timeout_secs or self.settings.query_timeout_secs, self.settings.query_timeout_secs)
        try:
            async with asyncio.timeout(timeout):
                if self.settings.fault_query_plan_delay_secs:
                    await asyncio.sleep(self.settings.fault_query_plan_delay_secs)
                with self.runtime.object_store.measure("query"):
                    async with self.runtime.admission.slot(call.tenant):
                        planned, _ = await self._plan(call)
            entry.status, entry.plan = "completed", plan_out(planned.plan, planned.engine).model_dump(mode="json")
        except TimeoutError:
            entry.status, entry.problem = "failed", problem_of(
                QueryTimeout(f"plan {entry.plan_id} did not finish within its time limit of {timeout:g} s"))
        except StrataError as exc:
            entry.status, entry.problem = "failed", problem_of(exc)
        except Exception as exc:  # noqa: BLE001 - recorded on the plan for its reader
            log.exception("plan %s failed", entry.plan_id)
            entry.status, entry.problem = "failed", problem_of(
                PlanningFailed(f"planning failed: {type(exc).__name__}"))
        try:
            await self.registry.finish_plan(entry)
        except Exception:  # noqa: BLE001 - the plan then reads failed once its owner counts as lost
            log.exception("recording the end of plan %s failed", entry.plan_id)

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
                    cached = await cacheable(session, plan)
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
            ahead = self._run_ahead(call, row_cap, timeout)
            try:
                planned, cached = await self._plan(call)
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
                    result, running = await self._execute(plan, engine, query_id, call.tenant, row_cap, timeout)
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

    def _run_ahead(self, call: QueryCall, row_cap: int, timeout: float) -> RunAhead | None:
        """A run of the kept plan started before the plan is checked (`_cached_plan`: one metastore read), so the
        engine's time overlaps the check's round trip; `_run` uses it only if the check finds the plan holds.

        Only on the in-process engine (a Spark job started for nothing costs far more than the read it would
        hide) and only when the result cache cannot answer. A plan that turns out stale was read in vain but
        never answered: its files may be gone by then (replaced and collected), which fails only the run ahead.
        Its id, like any run's, is taken before planning, so the garbage collector's hold covers what it reads."""
        runtime = self.runtime
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
        task = asyncio.ensure_future(self._execute(plan, engine, query_id, call.tenant, row_cap, timeout))
        return RunAhead(query_id, cached, engine, task, self.registry)

    async def cancel(self, query_id: str, tenant: str | None) -> None:
        """Interrupts a running query on its engine, on whichever replica runs it; its own caller then gets
        QueryCancelled (or, when its result was already streaming, the stream ends early)."""
        running = self.registry.running_here(query_id)
        if running is not None and (tenant is None or running.tenant == tenant):
            running.cancelled = True
            await asyncio.to_thread(_interrupt_until_reached, running)
            return
        if not await self.registry.request_cancel(query_id, tenant):
            raise NotFound(f"no query {query_id!r} is running")

    def _watch_cancel_requests(self) -> None:
        if self._cancel_watch is None or self._cancel_watch.done():
            self._cancel_watch = asyncio.create_task(self._poll_cancel_requests(), name="cancel-requests")

    async def _poll_cancel_requests(self) -> None:
        """While this replica plans or runs anything: cancels received by other replicas, carried out here."""
        while self._plan_tasks or self.registry.has_running():
            await asyncio.sleep(CANCEL_POLL_SECS)
            try:
                plan_ids, queries = await self.registry.cancel_requests(tuple(self._plan_tasks))
            except Exception:  # noqa: BLE001 - read again at the next tick
                log.warning("reading cancel requests failed", exc_info=True)
                continue
            for plan_id in plan_ids:
                if (task := self._plan_tasks.get(plan_id)) is not None:
                    task.cancel()
            for running in queries:
                if not running.cancelled:
                    running.cancelled = True
                    self._in_background(asyncio.to_thread(_interrupt_until_reached, running))

    async def _execute(self, plan: QueryPlan, engine: Engine, query_id: str, tenant: str | None, row_cap: int,
                       limit_secs: float) -> tuple[ResultStream, RunningQuery]:
        """Starts the plan on its engine and waits for the first batch; the query can be cancelled by its id until
        its result has been sent."""
        metrics = self.runtime.metrics
        scan = scan_request(query_id, plan, engine.dialect, row_cap, self.settings.fault_query_scan_delay_secs)
        running = RunningQuery(query_id, tenant, engine)
        # Local at once; shared with the other replicas while the scan opens (no round trip on the way).
        self.registry.add_running(running)
        self._watch_cancel_requests()
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

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        # The loop keeps only weak references to tasks.
        self._background.add(task)
        task.add_done_callback(self._background.discard)


@dataclass(frozen=True, slots=True)
class RunAhead:
    """A run started on a kept plan before the plan's check (`QueryService._run_ahead`)."""

    query_id: str
    cached: CachedPlan
    engine: Engine
    task: asyncio.Future[tuple[ResultStream, RunningQuery]]
    registry: QueryRegistry

    def holds(self, cached: CachedPlan | None, engine: Engine | None) -> bool:
        """True when the check kept the very plan this run reads (its state unchanged) on the same engine."""
        return cached is self.cached and engine is self.engine

    def abandon(self) -> None:
        """Drops the run, unanswered: interrupted if still opening (`_execute` then closes what the engine opens
        and forgets the run), closed if already open; its error, if it failed, is nobody's to raise."""
        if not self.task.done():
            self.task.cancel()
        self.task.add_done_callback(self._release)

    def _release(self, task: asyncio.Future[tuple[ResultStream, RunningQuery]]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        result, running = task.result()
        result.close()
        self.registry.forget_running(running.query_id)


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
            await asyncio.shield(asyncio.to_thread(_interrupt_until_reached, running))
        raise


def _close_if_opened(opening: asyncio.Future) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def _interrupt_until_reached(running: RunningQuery) -> None:
    """Blocking: interrupts a query being cancelled. A query still starting (Spark analyses the plan before the
    operation that an interrupt can reach exists) is interrupted again until it is reached or has started; a query
    that finishes starting anyway sees `cancelled` and is closed by its own caller."""
    deadline = time.monotonic() + CANCEL_RETRY_SECS
    while not running.engine.interrupt(running.query_id) and running.opening and time.monotonic() < deadline:
        time.sleep(0.1)


@functools.lru_cache(maxsize=1024)
def _parses(sql: str) -> str:
    """`table_of`, remembered for SQL that parses (an error is raised again each time): ADBC prepares every
    statement it runs, and a dashboard's statements repeat, so its parse is not paid twice per query."""
    return table_of(sql)


def _nothing() -> None:
    """A cached result holds no engine resources to release."""
