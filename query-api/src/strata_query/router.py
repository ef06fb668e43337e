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

from strata_jobs.pruned_scan import ScanTask
from strata_query.execution.formats import ARROW, JSON, NDJSON, negotiate, serialize
from strata_query.execution.runtime import AsyncPlan, QueryRuntime, RunningQuery
from strata_query.execution.spark_query import ScanRequest, interrupt_query, run_query
from strata_query.planning.planner import PARTITION_COLUMN, QueryPlan, build_plan
from strata_query.planning.schemas import PlanOut, PlanStatus, QueryRequest
from strata_shared.errors import NotFound, StrataError, Unavailable
from strata_shared.spark.errors import spark_problem
from strata_shared.web.auth import Principal, Scope, require_any
from strata_shared.web.deps import app_state
from strata_shared.web.problems import problem_responses
from strata_shared.web.state import AppState

router = APIRouter(tags=["query"])
State = Annotated[AppState, Depends(app_state)]
Caller = Annotated[Principal, Depends(require_any(Scope.QUERY, Scope.ADMIN))]
tracer = trace.get_tracer("strata.query")
log = logging.getLogger("strata.query")


class QueryTimeout(StrataError):
    status, slug, title = 504, "query-timeout", "Query timed out"


class QueryCancelled(StrataError):
    status, slug, title = 409, "query-cancelled", "Query cancelled"


def runtime_of(state: AppState) -> QueryRuntime:
    return state.extras["query_runtime"]


async def _plan(state: AppState, principal: Principal, sql: str) -> QueryPlan:
    runtime = runtime_of(state)
    started = time.perf_counter()
    with tracer.start_as_current_span("plan_build") as span:
        async with state.sessions() as session:
            plan = await build_plan(session, sql, tenant=principal.tenant, now=time.time(),
                                    max_files=state.settings.query_max_files, artifacts=runtime.artifacts,
                                    footers=runtime.footers, totals=runtime.totals)
        span.set_attribute("strata.index_id", plan.out.index_id)
        span.set_attribute("strata.files", plan.out.total_files)
        span.set_attribute("strata.bytes", plan.out.total_bytes)
    runtime.metrics.latency.labels("plan").observe(time.perf_counter() - started)
    runtime.metrics.observe_plan(plan.out)
    return plan


@router.post("/v1/query/explain", response_model=PlanOut, responses=problem_responses(400, 401, 403, 422))
async def explain_query(request: QueryRequest, state: State, principal: Caller) -> PlanOut:
    """The plan without executing it: time range (or the default lookback), the pruning cascade counted stage
    by stage (files, row groups, bytes before and after), and per file the row groups, byte ranges and columns
    a scan reads."""
    return (await _plan(state, principal, request.sql)).out


@router.post("/v1/query/plans", response_model=PlanStatus, status_code=202,
             responses=problem_responses(400, 401, 403, 422))
async def submit_query_plan(request: QueryRequest, state: State, principal: Caller) -> PlanStatus:
    """Plan asynchronously (for large plans): returns a plan id to poll with GET and cancel with DELETE."""
    runtime = runtime_of(state)
    plan_id = str(ULID())
    entry = AsyncPlan(PlanStatus(plan_id=plan_id, status="submitted"), principal.tenant)

    async def work() -> None:
        try:
            plan = await _plan(state, principal, request.sql)
            entry.status = PlanStatus(plan_id=plan_id, status="completed", plan=plan.out)
        except asyncio.CancelledError:
            entry.status = PlanStatus(plan_id=plan_id, status="cancelled")
            raise
        except StrataError as exc:
            entry.status = PlanStatus(plan_id=plan_id, status="failed", error={
                "type": exc.type_uri, "status": exc.status, "detail": exc.detail, "errors": exc.errors})
        except Exception as exc:  # noqa: BLE001 - recorded on the plan for its reader
            log.exception("plan %s failed", plan_id)
            entry.status = PlanStatus(plan_id=plan_id, status="failed", error={"detail": f"{type(exc).__name__}"})

    entry.task = asyncio.create_task(work(), name=f"plan-{plan_id}")
    runtime.remember_plan(plan_id, entry)
    return entry.status


def _plan_entry(state: AppState, plan_id: str, principal: Principal) -> AsyncPlan:
    entry = runtime_of(state).plans.get(plan_id)
    if entry is None or (principal.tenant is not None and entry.tenant != principal.tenant):
        raise NotFound(f"plan {plan_id!r} does not exist")
    return entry


@router.get("/v1/query/plans/{plan_id}", response_model=PlanStatus, responses=problem_responses(401, 403, 404))
async def get_query_plan(plan_id: str, state: State, principal: Caller) -> PlanStatus:
    """An asynchronous plan's status, and the plan once completed."""
    return _plan_entry(state, plan_id, principal).status


@router.delete("/v1/query/plans/{plan_id}", response_model=PlanStatus, responses=problem_responses(401, 403, 404))
async def cancel_query_plan(plan_id: str, state: State, principal: Caller) -> PlanStatus:
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


def _scan_request(query_id: str, plan: QueryPlan, scan_delay_secs: float = 0.0) -> ScanRequest:
    tasks = [ScanTask(uri=f.uri, row_groups=f.row_groups, constants={PARTITION_COLUMN: f.partition_id})
             for f in plan.out.files]
    return ScanRequest(query_id=query_id, tasks=tasks, columns=plan.scan_columns,
                       sql_template=plan.parsed.spark_sql("{view}"), extra_filter=plan.extra_filter,
                       scan_delay_secs=scan_delay_secs)


@router.post("/v1/query", responses={
    200: {"content": {JSON: {}, NDJSON: {}, ARROW: {}},
          "description": "the result, streamed as JSON, NDJSON or an Arrow IPC stream (Accept header)"},
    **problem_responses(400, 401, 403, 406, 409, 422, 502, 503, 504)})
async def run_sql_query(request: QueryRequest, http: Request, state: State, principal: Caller) -> Response:
    """Plan, then run the shaped scan on Spark (only the kept row groups and columns) with the query's SQL on
    top, and stream the result. The response carries the query id (`x-query-id`), usable to cancel it."""
    media = negotiate(http.headers.get("accept"))
    if state.spark is None:
        raise Unavailable("query-api has no Spark Connect server configured")
    runtime = runtime_of(state)
    query_id = str(ULID())
    started = time.perf_counter()
    plan = await _plan(state, principal, request.sql)
    scan = _scan_request(query_id, plan, state.settings.fault_query_scan_delay_secs)
    running = RunningQuery(query_id, principal.tenant)
    runtime.running[query_id] = running
    timeout = min(request.timeout_secs or state.settings.query_timeout_secs, state.settings.query_timeout_secs)
    try:
        with tracer.start_as_current_span("fetch_parquet") as span:
            span.set_attribute("strata.files", len(scan.tasks))
            span.set_attribute("strata.bytes", plan.out.total_bytes)
            with tracer.start_as_current_span("execute"):
                execute_started = time.perf_counter()
                table = await asyncio.wait_for(asyncio.to_thread(run_query, state.spark, scan), timeout)
                runtime.metrics.latency.labels("execute").observe(time.perf_counter() - execute_started)
    except TimeoutError:
        await asyncio.to_thread(interrupt_query, state.spark, query_id)
        runtime.metrics.outcomes.labels("timeout").inc()
        raise QueryTimeout(f"query {query_id} did not finish within {timeout:g} s and was interrupted") from None
    except Exception as exc:
        if running.cancelled:
            runtime.metrics.outcomes.labels("cancelled").inc()
            raise QueryCancelled(f"query {query_id} was cancelled") from exc
        runtime.metrics.outcomes.labels("failed").inc()
        problem = spark_problem(exc, state.spark.remote)
        if problem is not None:
            log.warning("query %s failed on spark: %s", query_id, problem.detail)
            raise problem from exc
        raise
    finally:
        runtime.running.pop(query_id, None)
    runtime.metrics.bytes_scanned.inc(plan.out.total_bytes)
    runtime.metrics.rows_scanned.inc(plan.out.total_rows)
    runtime.metrics.outcomes.labels("success").inc()
    summary = {"rows": table.num_rows, "files_scanned": plan.out.total_files,
               "row_groups_scanned": plan.out.total_row_groups, "bytes_scanned": plan.out.total_bytes,
               "planning_ms": plan.out.planning_ms,
               "elapsed_ms": round((time.perf_counter() - started) * 1000, 3)}

    def body():
        # Not attached as the current span: Starlette iterates this generator across threads and contexts.
        span = tracer.start_span("serialize_result", attributes={"strata.rows": table.num_rows})
        try:
            yield from serialize(table, media, query_id, summary)
        finally:
            span.end()

    headers = {"x-query-id": query_id, "x-strata-files-scanned": str(plan.out.total_files),
               "x-strata-bytes-scanned": str(plan.out.total_bytes), "x-strata-rows": str(table.num_rows)}
    return StreamingResponse(body(), media_type=media, headers=headers)


@router.delete("/v1/query/{query_id}", status_code=202, responses=problem_responses(401, 403, 404))
async def cancel_sql_query(query_id: str, state: State, principal: Caller) -> dict[str, str]:
    """Interrupt a running query's Spark operation; the query's own request then answers 409."""
    running = runtime_of(state).running.get(query_id)
    if running is None or (principal.tenant is not None and running.tenant != principal.tenant):
        raise NotFound(f"no query {query_id!r} is running here")
    running.cancelled = True
    await asyncio.to_thread(interrupt_query, state.spark, query_id)
    return {"query_id": query_id, "status": "cancelling"}
