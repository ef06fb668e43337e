"""HTTP routes of query-api: EXPLAIN, asynchronous plans (after Iceberg's REST scan planning), execution with
streamed results, and cancellation. HTTP only: each route reads its request and headers, calls the query service
(`service.py`) and builds its response from the plain objects it returns; the bodies of an asynchronous plan's
record are built here too (`ASYNC_PLAN_FORMS`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from strata_core.domain.wire_types import Ulid
from strata_frame.web.auth import Principal, Scope, require_any
from strata_frame.web.problems import problem_of, problem_responses
from strata_query.async_plans import RecordForms
from strata_query.cache_directives import ResultCacheDirectives
from strata_query.calls import PlannedQuery, QueryCall
from strata_query.dependencies import Service
from strata_query.execution.formats import ARROW, JSON, NDJSON, negotiate, serialize
from strata_query.schemas import PlanOut, PlanStatus, QueryRequest, QueryResult, ResultSummary, plan_out, plan_status

router = APIRouter(tags=["query"])
Caller = Annotated[Principal, Depends(require_any(Scope.QUERY, Scope.ADMIN))]


def _plan_body(planned: PlannedQuery) -> dict[str, Any]:
    return plan_out(planned.plan, planned.engine).model_dump(mode="json")


# An asynchronous plan's record keeps what these routes answer for it, as JSON, for whichever replica is polled:
# the body of a completed plan (as EXPLAIN answers it), the problem of a failed one.
ASYNC_PLAN_FORMS = RecordForms(plan=_plan_body, problem=problem_of)


def _call(request: QueryRequest, principal: Principal, cache: ResultCacheDirectives | None = None) -> QueryCall:
    return QueryCall(tenant=principal.tenant, sql=request.sql, engine=request.engine, max_rows=request.max_rows,
                     timeout_secs=request.timeout_secs, result_cache=cache or ResultCacheDirectives())


@router.post("/v1/query/explain", response_model=PlanOut, responses=problem_responses(429))
async def explain_query(request: QueryRequest, service: Service, principal: Caller) -> PlanOut:
    """The plan without executing it: time range (or the default lookback), the pruning cascade counted stage
    by stage (files, row groups, bytes before and after), per file the row groups, byte ranges and columns a
    scan reads, and the engine that would run it and why."""
    planned = await service.explain(_call(request, principal))
    return plan_out(planned.plan, planned.engine)


@router.post("/v1/query/plans", response_model=PlanStatus, status_code=202, responses=problem_responses(429))
async def submit_query_plan(request: QueryRequest, service: Service, principal: Caller) -> PlanStatus:
    """Plan asynchronously (for large plans): returns a plan id to poll with GET and cancel with DELETE. SQL
    that does not parse is refused here (400), before a plan id is handed out."""
    return plan_status(await service.submit_plan(_call(request, principal)))


@router.get("/v1/query/plans/{plan_id}", response_model=PlanStatus, responses=problem_responses(404))
async def get_query_plan(plan_id: Ulid, service: Service, principal: Caller) -> PlanStatus:
    """An asynchronous plan's status, and the plan once completed."""
    return plan_status(await service.plan_status(plan_id, principal.tenant))


@router.delete("/v1/query/plans/{plan_id}", response_model=PlanStatus, responses=problem_responses(404))
async def cancel_query_plan(plan_id: Ulid, service: Service, principal: Caller) -> PlanStatus:
    """Cancel an asynchronous plan that is still running (a finished one keeps its status)."""
    return plan_status(await service.cancel_plan(plan_id, principal.tenant))


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
    **problem_responses(406, 409, 429, 502)})
async def run_sql_query(request: QueryRequest, http: Request, service: Service, principal: Caller) -> Response:
    """Plan, then run the shaped scan (only the kept row groups and columns) with the query's SQL on top: in
    query-api's process (DuckDB) when the plan is within the local limits, on Spark otherwise, or on the engine
    the request names. The result streams as the engine produces it. A repeated query whose published files have
    not changed is answered from its kept result unless the request says `Cache-Control: no-cache` (run it, keep
    the new result) or `no-store` (run it, keep nothing). A query that runs past its time limit (`timeout_secs`, at
    most the server's) is interrupted and answered 422 `query-timeout`, naming the limit."""
    media = negotiate(http.headers.get("accept"))
    cache = ResultCacheDirectives.from_cache_control(http.headers.get("cache-control"))
    run = await service.run(_call(request, principal, cache))

    def summary() -> dict:
        return ResultSummary.model_validate(run.summary(), from_attributes=True).model_dump()

    def body():
        with run.serving() as result:
            yield from serialize(result, media, run.query_id, summary)

    plan = run.plan
    headers = {"x-query-id": run.query_id, "x-strata-engine": run.engine.name,
               "x-strata-engine-reason": run.engine_reason, "x-strata-files-scanned": str(plan.total_files),
               "x-strata-bytes-scanned": str(plan.total_bytes), "x-strata-row-cap": str(run.row_cap),
               "x-strata-result-cache": run.result_cache}
    if run.result.complete:
        # A small finished result (at most INLINE_ROWS rows, in memory): serialized here and sent whole. Streamed,
        # the server would pull each chunk from a worker thread, hops that cost more than the serializing.
        return Response(b"".join(body()), media_type=media, headers=headers)
    return StreamingResponse(body(), media_type=media, headers=headers)


@router.delete("/v1/query/{query_id}", status_code=202, responses=problem_responses(404))
async def cancel_sql_query(query_id: Ulid, service: Service, principal: Caller) -> dict[str, str]:
    """Interrupt a running query on its engine; the query's own request then answers 409 (or, when its result
    was already streaming, the stream ends early)."""
    await service.cancel(query_id, principal.tenant)
    return {"query_id": query_id, "status": "cancelling"}
