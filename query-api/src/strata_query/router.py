"""HTTP routes of query-api: EXPLAIN, asynchronous plans (after Iceberg's REST scan planning), execution with
streamed results, and cancellation."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse
from opentelemetry import trace
from ulid import ULID

from strata_query.execution.engine_choice import Engine, EngineChoice, EngineUnavailable, choose_engine
from strata_query.execution.formats import ARROW, JSON, NDJSON, negotiate, serialize
from strata_query.execution.local_query import INLINE_ROWS
from strata_query.execution.result_stream import ResultStream
from strata_query.execution.runtime import AsyncPlan, QueryRuntime, RunningQuery
from strata_query.execution.scan_request import ScanRequest, scan_request
from strata_query.execution.spark_query import interrupt_spark_query, open_spark_query
from strata_query.planning.plan_cache import KeptPlan, KeptResult, keepable, reuse
from strata_query.planning.planner import QueryPlan, build_plan, table_of
from strata_query.planning.schemas import EngineOut, PlanOut, PlanStatus, QueryRequest, QueryResult, ResultSummary
from strata_shared.domain.wire_types import Ulid
from strata_shared.errors import PROBLEM_BASE, NotFound, StrataError, Unavailable
from strata_shared.metastore.plan_state import live_index_state
from strata_shared.observability.context import annotate
from strata_shared.spark.errors import spark_problem
from strata_shared.web.auth import Principal, Scope, require_any
from strata_shared.web.deps import app_state
from strata_shared.web.problems import Problem, problem_responses
from strata_shared.web.state import AppState

router = APIRouter(tags=["query"])
State = Annotated[AppState, Depends(app_state)]
Caller = Annotated[Principal, Depends(require_any(Scope.QUERY, Scope.ADMIN))]
tracer = trace.get_tracer("strata.query")
log = logging.getLogger("strata.query")
CANCEL_RETRY_SECS = 30.0


class QueryTimeout(StrataError):
    status, slug, title = 504, "query-timeout", "Query timed out"


class QueryCancelled(StrataError):
    status, slug, title = 409, "query-cancelled", "Query cancelled"


def runtime_of(state: AppState) -> QueryRuntime:
    return state.own()


async def _plan(state: AppState, principal: Principal, sql: str, engine: Engine | None = None
                ) -> tuple[QueryPlan, KeptPlan | None]:
    """The query's plan with its engine chosen, and the kept plan it is (None when it is not kept)."""
    runtime = runtime_of(state)
    started = time.perf_counter()
    with tracer.start_as_current_span("plan_build") as span:
        plan, kept = await _kept_plan(state, principal, sql)
        span.set_attribute("strata.plan_kept", plan is not None)
        if plan is None:
            async with state.sessions() as session:
                plan = await build_plan(session, sql, tenant=principal.tenant, now=time.time(),
                                        max_files=state.settings.query_max_files, artifacts=runtime.artifacts,
                                        footers=runtime.footers)
                kept = await keepable(session, plan)
            if kept is not None:
                runtime.plan_cache.put(sql, principal.tenant, kept)
        span.set_attribute("strata.index_id", plan.out.index_id)
        annotate(index=plan.out.index_id)
        span.set_attribute("strata.files", plan.out.total_files)
        span.set_attribute("strata.bytes", plan.out.total_bytes)
    runtime.metrics.latency.labels("plan").observe(time.perf_counter() - started)
    runtime.metrics.observe_plan(plan.out)
    try:
        choice = _local_or_spark(state, plan, engine)
        plan.out.engine = EngineOut(engine=choice.engine, reason=choice.reason)
    except Unavailable as exc:
        plan.out.engine = EngineOut(engine=None, reason=exc.detail)
    return plan, kept


async def _kept_plan(state: AppState, principal: Principal, sql: str) -> tuple[QueryPlan | None, KeptPlan | None]:
    """The kept plan of this query, if it still holds (one metastore read), as a copy and as kept; (None, None)
    to plan it."""
    runtime = runtime_of(state)
    kept = runtime.plan_cache.candidate(sql, principal.tenant)
    if kept is None:
        runtime.metrics.plan_cache.labels("miss").inc()
        return None, None
    started = time.perf_counter()
    current = await live_index_state(runtime.plan_checks, kept.plan.out.index_id)
    plan = reuse(kept, current, time.time())
    if plan is None:
        runtime.plan_cache.drop(sql, principal.tenant)
        runtime.metrics.plan_cache.labels("stale").inc()
        return None, None
    runtime.metrics.plan_cache.labels("hit").inc()
    plan.out.planning_ms = round((time.perf_counter() - started) * 1000, 3)
    return plan, kept


@router.post("/v1/query/explain", response_model=PlanOut, responses=problem_responses(429))
async def explain_query(request: QueryRequest, state: State, principal: Caller) -> PlanOut:
    """The plan without executing it: time range (or the default lookback), the pruning cascade counted stage
    by stage (files, row groups, bytes before and after), per file the row groups, byte ranges and columns a
    scan reads, and the engine that would run it and why."""
    async with runtime_of(state).admission.slot(principal.tenant):
        return (await _plan(state, principal, request.sql, request.engine))[0].out


@router.post("/v1/query/plans", response_model=PlanStatus, status_code=202, responses=problem_responses(429))
async def submit_query_plan(request: QueryRequest, state: State, principal: Caller) -> PlanStatus:
    """Plan asynchronously (for large plans): returns a plan id to poll with GET and cancel with DELETE. SQL
    that does not parse is refused here (400), before a plan id is handed out."""
    runtime = runtime_of(state)
    table_of(request.sql)
    plan_id = str(ULID())
    entry = AsyncPlan(PlanStatus(plan_id=plan_id, status="submitted"), principal.tenant)

    async def work() -> None:
        try:
            async with runtime.admission.slot(principal.tenant):
                plan, _ = await _plan(state, principal, request.sql, request.engine)
            entry.status = PlanStatus(plan_id=plan_id, status="completed", plan=plan.out)
        except asyncio.CancelledError:
            entry.status = PlanStatus(plan_id=plan_id, status="cancelled")
            raise
        except StrataError as exc:
            entry.status = PlanStatus(plan_id=plan_id, status="failed", error=Problem(
                type=exc.type_uri, title=exc.title, status=exc.status, detail=exc.detail, errors=exc.errors))
        except Exception as exc:  # noqa: BLE001 - recorded on the plan for its reader
            log.exception("plan %s failed", plan_id)
            entry.status = PlanStatus(plan_id=plan_id, status="failed", error=Problem(
                type=PROBLEM_BASE + "internal", title="Internal error", status=500,
                detail=f"planning failed: {type(exc).__name__}"))

    entry.task = asyncio.create_task(work(), name=f"plan-{plan_id}")
    runtime.remember_plan(plan_id, entry)
    return entry.status


def _plan_entry(state: AppState, plan_id: str, principal: Principal) -> AsyncPlan:
    entry = runtime_of(state).plans.get(plan_id)
    if entry is None or (principal.tenant is not None and entry.tenant != principal.tenant):
        raise NotFound(f"plan {plan_id!r} does not exist")
    return entry


@router.get("/v1/query/plans/{plan_id}", response_model=PlanStatus, responses=problem_responses(404))
async def get_query_plan(plan_id: Ulid, state: State, principal: Caller) -> PlanStatus:
    """An asynchronous plan's status, and the plan once completed."""
    return _plan_entry(state, plan_id, principal).status


@router.delete("/v1/query/plans/{plan_id}", response_model=PlanStatus, responses=problem_responses(404))
async def cancel_query_plan(plan_id: Ulid, state: State, principal: Caller) -> PlanStatus:
    """Cancel an asynchronous plan that is still running (a finished one keeps its status)."""
    entry = _plan_entry(state, plan_id, principal)
    if entry.task is not None and not entry.task.done():
        entry.task.cancel()
        try:
            await entry.task
        except asyncio.CancelledError:
            pass
        entry.status = PlanStatus(plan_id=plan_id, status="cancelled")
    return entry.status


def _local_or_spark(state: AppState, plan: QueryPlan, requested: Engine | None) -> EngineChoice:
    out = plan.out
    try:
        return choose_engine(files=out.total_files, rows=out.total_rows, bytes_read=out.total_bytes,
                             limits=runtime_of(state).local_limits, requested=requested,
                             spark_available=state.spark is not None)
    except EngineUnavailable as exc:
        raise Unavailable(str(exc)) from None


async def _open_result(state: AppState, running: RunningQuery, scan: ScanRequest, limit_secs: float
                       ) -> ResultStream:
    """Starts the query on its engine in a worker thread and waits for its first batch, at most `limit_secs`. A
    query given up on (timeout, or the request cancelled) is interrupted, and a stream it opens anyway closed."""
    runtime = runtime_of(state)
    if running.engine == "local":
        opening = asyncio.ensure_future(asyncio.to_thread(runtime.local.open, scan))
    else:
        opening = asyncio.ensure_future(asyncio.to_thread(open_spark_query, state.spark, scan))
    opening.add_done_callback(lambda _: setattr(running, "opening", False))
    try:
        return await asyncio.wait_for(asyncio.shield(opening), limit_secs)
    except BaseException:
        opening.add_done_callback(_close_if_opened)
        if not opening.done():
            await asyncio.shield(asyncio.to_thread(_cancel, state, running))
        raise


def _close_if_opened(opening: asyncio.Future) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def _interrupt(state: AppState, engine: Engine, query_id: str) -> bool:
    """Interrupts the query on its engine; False when the engine had nothing of it running (yet)."""
    if engine == "local":
        return runtime_of(state).local.interrupt(query_id)
    return state.spark is not None and bool(interrupt_spark_query(state.spark, query_id))


def _cancel(state: AppState, running: RunningQuery) -> None:
    """Interrupts a query being cancelled. A query still starting (Spark analyses the plan before the operation
    that an interrupt can reach exists) is interrupted again until it is reached or has started; a query that
    finishes starting anyway sees `cancelled` and is closed by its own request."""
    deadline = time.monotonic() + CANCEL_RETRY_SECS
    while not _interrupt(state, running.engine, running.query_id) and running.opening \
            and time.monotonic() < deadline:
        time.sleep(0.1)


@router.post("/v1/query", responses={
    200: {"model": QueryResult,
          "content": {JSON: {}, NDJSON: {"schema": {"type": "string"}},
                      ARROW: {"schema": {"type": "string", "format": "binary"}}},
          "description": "the result, streamed as JSON, NDJSON or an Arrow IPC stream (Accept header). Headers: "
                         "`x-query-id` (to cancel it), `x-strata-engine` and `x-strata-engine-reason` (which engine "
                         "ran and why), `x-strata-row-cap` (the row cap in force), `x-strata-result-cache` (`hit`: "
                         "the result kept from an earlier run of the same query over the same published files; "
                         "`miss`; `bypass`: the request's `Cache-Control: no-cache` or `no-store`). A result cut at "
                         "the cap says so at its end: `summary.truncated` in JSON, a last line "
                         "`{\"strata_truncated\": true, ...}` in NDJSON, an empty last batch with metadata "
                         "`strata.truncated: true` in Arrow."},
    **problem_responses(406, 409, 429, 502, 504)})
async def run_sql_query(request: QueryRequest, http: Request, state: State, principal: Caller) -> Response:
    """Plan, then run the shaped scan (only the kept row groups and columns) with the query's SQL on top: in
    query-api's process (DuckDB) when the plan is within the local limits, on Spark otherwise, or on the engine
    the request names. The result streams as the engine produces it. A repeated query whose published files have
    not changed is answered from its kept result unless the request says `Cache-Control: no-cache` (run it, keep
    the new result) or `no-store` (run it, keep nothing)."""
    media = negotiate(http.headers.get("accept"))
    runtime = runtime_of(state)
    settings = state.settings
    query_id = str(ULID())
    started = time.perf_counter()
    row_cap = min(request.max_rows or settings.query_max_result_rows, settings.query_max_result_rows)
    timeout = min(request.timeout_secs or settings.query_timeout_secs, settings.query_timeout_secs)
    reuse_result, keep_result = _result_cache_directives(http.headers.get("cache-control"))
    loop = asyncio.get_running_loop()
    async with runtime.admission.slot(principal.tenant):
        plan, kept = await _plan(state, principal, request.sql, request.engine)
        if plan.out.engine.engine is None:
            raise Unavailable(plan.out.engine.reason)
        choice = EngineChoice(plan.out.engine.engine, plan.out.engine.reason)
        result_key = (choice.engine, row_cap)
        hit = kept.results.get(result_key) if kept is not None and reuse_result else None
        if hit is not None:
            # Sent whole when small, as a finished run is; a larger one is serialized as a stream, off the loop.
            result = ResultStream(hit.schema, iter(hit.batches), _nothing, row_cap,
                                  complete=sum(batch.num_rows for batch in hit.batches) <= INLINE_ROWS)
            running = None
            cache_outcome = "hit"
        else:
            result, running = await _execute(state, plan, choice, query_id, principal, row_cap, timeout)
            cache_outcome = "miss" if reuse_result else "bypass"
            if kept is not None and keep_result and (room := runtime.plan_cache.result_room):
                result.record_up_to(room)
    runtime.metrics.result_cache.labels(cache_outcome).inc()
    if hit is None:
        runtime.metrics.engines.labels(choice.engine).inc()
        runtime.metrics.bytes_scanned.inc(plan.out.total_bytes)
        runtime.metrics.rows_scanned.inc(plan.out.total_rows)

    def summary() -> dict:
        return ResultSummary(
            rows=result.rows, truncated=result.truncated, row_cap=row_cap, engine=choice.engine,
            files_scanned=plan.out.total_files, row_groups_scanned=plan.out.total_row_groups,
            bytes_scanned=plan.out.total_bytes, planning_ms=plan.out.planning_ms,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 3), result_cache=cache_outcome).model_dump()

    def body():
        # Not attached as the current span: Starlette iterates this generator across threads and contexts.
        span = tracer.start_span("serialize_result", attributes={"strata.engine": choice.engine,
                                                                  "strata.result_cache": cache_outcome})
        outcome = "failed"
        try:
            yield from serialize(result, media, query_id, summary)
            outcome = "cancelled" if running is not None and running.cancelled else "success"
        finally:
            result.close()
            runtime.running.pop(query_id, None)
            runtime.metrics.outcomes.labels(outcome).inc()
            if result.truncated:
                runtime.metrics.truncated.inc()
            if outcome == "success" and kept is not None and (served := result.served()) is not None:
                # A streamed body ends on a worker thread; the plan cache belongs to the event loop.
                loop.call_soon_threadsafe(runtime.plan_cache.keep_result, request.sql, principal.tenant, kept,
                                          result_key, KeptResult(result.schema, tuple(served),
                                                                 sum(batch.nbytes for batch in served)))
            span.set_attribute("strata.rows", result.rows)
            span.end()

    headers = {"x-query-id": query_id, "x-strata-engine": choice.engine, "x-strata-engine-reason": choice.reason,
               "x-strata-files-scanned": str(plan.out.total_files),
               "x-strata-bytes-scanned": str(plan.out.total_bytes), "x-strata-row-cap": str(row_cap),
               "x-strata-result-cache": cache_outcome}
    if result.complete:
        # A small finished result (at most INLINE_ROWS rows, in memory): serialized here and sent whole. Streamed,
        # the server would pull each chunk from a worker thread, hops that cost more than the serializing.
        return Response(b"".join(body()), media_type=media, headers=headers)
    return StreamingResponse(body(), media_type=media, headers=headers)


async def _execute(state: AppState, plan: QueryPlan, choice: EngineChoice, query_id: str, principal: Principal,
                   row_cap: int, limit_secs: float) -> tuple[ResultStream, RunningQuery]:
    """Starts the plan on its engine and waits for the first batch; the query can be cancelled by its id until
    its result has been sent."""
    runtime = runtime_of(state)
    scan = scan_request(query_id, plan, "duckdb" if choice.engine == "local" else "spark", row_cap,
                        state.settings.fault_query_scan_delay_secs)
    running = RunningQuery(query_id, principal.tenant, choice.engine)
    runtime.running[query_id] = running
    try:
        with tracer.start_as_current_span("fetch_parquet") as span:
            span.set_attribute("strata.engine", choice.engine)
            span.set_attribute("strata.files", len(scan.tasks))
            span.set_attribute("strata.bytes", plan.out.total_bytes)
            with tracer.start_as_current_span("execute"):
                execute_started = time.perf_counter()
                result = await _open_result(state, running, scan, limit_secs)
                if running.cancelled:
                    result.close()
                    raise QueryCancelled(f"query {query_id} was cancelled")
                runtime.metrics.latency.labels("execute").observe(time.perf_counter() - execute_started)
        return result, running
    except TimeoutError:
        runtime.running.pop(query_id, None)
        runtime.metrics.outcomes.labels("timeout").inc()
        raise QueryTimeout(f"query {query_id} did not finish within {limit_secs:g} s and was interrupted") from None
    except BaseException as exc:
        runtime.running.pop(query_id, None)
        if running.cancelled:
            runtime.metrics.outcomes.labels("cancelled").inc()
            raise QueryCancelled(f"query {query_id} was cancelled") from exc
        if isinstance(exc, Exception):
            runtime.metrics.outcomes.labels("failed").inc()
            problem = spark_problem(exc, state.spark.remote) if choice.engine == "spark" else None
            if problem is not None:
                log.warning("query %s failed on spark: %s", query_id, problem.detail)
                raise problem from exc
        raise


def _result_cache_directives(cache_control: str | None) -> tuple[bool, bool]:
    """(answer from a kept result, keep this run's result) for the request's Cache-Control (RFC 9111: `no-cache`
    asks for an answer checked at the origin, here a run; `no-store` asks that nothing of it be kept)."""
    directives = {part.split("=", 1)[0].strip().lower() for part in (cache_control or "").split(",")}
    if "no-store" in directives:
        return False, False
    return "no-cache" not in directives, True


def _nothing() -> None:
    """A kept result holds no engine resources to release."""


@router.delete("/v1/query/{query_id}", status_code=202, responses=problem_responses(404))
async def cancel_sql_query(query_id: Ulid, state: State, principal: Caller) -> dict[str, str]:
    """Interrupt a running query on its engine; the query's own request then answers 409 (or, when its result
    was already streaming, the stream ends early)."""
    running = runtime_of(state).running.get(query_id)
    if running is None or (principal.tenant is not None and running.tenant != principal.tenant):
        raise NotFound(f"no query {query_id!r} is running here")
    running.cancelled = True
    await asyncio.to_thread(_cancel, state, running)
    return {"query_id": query_id, "status": "cancelling"}
