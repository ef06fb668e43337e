"""HTTP routes of compaction: planning, the worker protocol, job status, the window timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession

from strata_planner.compaction import scheduler as scheduler_service
from strata_planner.compaction.planning import WindowRange, plan_index, skipped_summary
from strata_planner.compaction.schemas import (
    JobOut,
    JobPage,
    PlannedOperation,
    PlanRequest,
    PlanResponse,
    PollRequest,
    PollResponse,
    StatusUpdate,
    UpdateResult,
    WindowPage,
)
from strata_planner.compaction.status import job_out, window_summaries
from strata_shared.domain.jobs import InvalidTransition, JobStatus
from strata_shared.domain.wire_types import IndexId, Int64, Ulid
from strata_shared.errors import Conflict, InvalidInput, NotFound
from strata_shared.metastore.compaction_repository import CompactionRepository, JobFilter
from strata_shared.metastore.repositories import load_live_index
from strata_shared.web.auth import Principal, Scope, require, require_any
from strata_shared.web.deps import app_state, db_session
from strata_shared.web.problems import problem_responses
from strata_shared.web.state import AppState

router = APIRouter(tags=["compaction"])
Session = Annotated[AsyncSession, Depends(db_session)]
State = Annotated[AppState, Depends(app_state)]



def _epoch(value: int | datetime | None, field: str) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if value.tzinfo is None:
        raise InvalidInput.field(field, "a datetime needs a timezone")
    return int(value.timestamp())


async def _plan(index_id: str, request: PlanRequest, session: AsyncSession, state: AppState,
                create_jobs: bool) -> PlanResponse:
    index = await load_live_index(session, index_id)
    window_range = WindowRange(_epoch(request.start, "from"), _epoch(request.end, "to"))
    if window_range.start_gte is not None and window_range.start_lt is not None \
            and window_range.start_gte >= window_range.start_lt:
        raise InvalidInput.field("to", "must be after from")
    outcome = await plan_index(session, index, state.clock(), window_range=window_range, force_final=request.final,
                               create_jobs=create_jobs,
                               max_new_jobs=state.settings.compaction_queue_bound if create_jobs else None)
    if create_jobs:
        await session.commit()
    return PlanResponse(
        index_id=index_id, dry_run=not create_jobs, windows_examined=outcome.windows_examined,
        operations=[PlannedOperation(window_start=op.window_start, partition_id=op.scope.partition_id,
                                     source_id=op.scope.source_id, kind=str(op.kind), level=op.level,
                                     split_ids=list(op.split_ids), num_rows=op.num_rows, size_bytes=op.size_bytes)
                    for op in outcome.plan.operations],
        skipped={k: str(v) for k, v in outcome.plan.skipped.items()},
        skipped_counts=skipped_summary(outcome.plan, outcome.mature_splits),
        created_job_ids=outcome.created_job_ids, operations_not_created=outcome.operations_not_created,
    )


@router.post("/v1/indexes/{index_id}/compaction/plan", response_model=PlanResponse,
             responses=problem_responses(401, 403, 404, 422))
async def plan_compaction(index_id: IndexId, request: PlanRequest, session: Session, state: State,
                          _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> PlanResponse:
    """Dry run: the merge operations a trigger would create now, and why every other split is left alone."""
    return await _plan(index_id, request, session, state, create_jobs=False)


@router.post("/v1/indexes/{index_id}/compaction/trigger", response_model=PlanResponse,
             responses=problem_responses(401, 403, 404, 422))
async def trigger_compaction(index_id: IndexId, request: PlanRequest, session: Session, state: State,
                             _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> PlanResponse:
    """Create compaction jobs for the index (optionally a window range, optionally forcing a final merge)."""
    return await _plan(index_id, request, session, state, create_jobs=True)


@router.get("/v1/indexes/{index_id}/windows", response_model=WindowPage, responses=problem_responses(401, 403, 404))
async def list_windows(index_id: IndexId, session: Session, state: State,
                       _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER, Scope.QUERY))],
                       window_start_gte: Int64 | None = None, window_start_lt: Int64 | None = None,
                       limit: Annotated[int, Query(ge=1, le=10_000)] = 500) -> WindowPage:
    """Per window, newest first: splits, rows, bytes, split levels, live jobs, last compaction."""
    index = await load_live_index(session, index_id)
    windows = await window_summaries(session, index, state.clock(), start_gte=window_start_gte,
                                     start_lt=window_start_lt, limit=limit)
    return WindowPage(index_id=index_id, windows=windows)


@router.post("/v1/compaction/poll", response_model=PollResponse, responses=problem_responses(401, 403, 422))
async def poll_compaction_jobs(request: PollRequest, state: State,
                               _: Annotated[Principal, Depends(require(Scope.WORKER))]) -> PollResponse:
    """The worker protocol: report status updates (each fenced by its token) and free capacity, receive new
    assignments with leases and fencing tokens. Stale updates come back with accepted=false."""
    return await scheduler_service.poll(state, request, state.clock())


@router.post("/v1/compaction/jobs/{job_id}/status", response_model=UpdateResult,
             responses=problem_responses(401, 403, 404, 409, 422))
async def report_job_status(job_id: Ulid, update: StatusUpdate, state: State,
                            _: Annotated[Principal, Depends(require(Scope.WORKER))]) -> UpdateResult:
    """One fenced status write outside a poll: a stale token (or a finished/cancelled job) is a 409."""
    if update.job_id != job_id:
        raise InvalidInput.field("job_id", "does not match the path")
    result = await scheduler_service.apply_update(state, update, state.clock())
    if not result.accepted:
        raise Conflict(result.reason or "update refused")
    return result


@router.get("/v1/compaction/jobs", response_model=JobPage, responses=problem_responses(401, 403, 404, 422))
async def list_compaction_jobs(
    session: Session,
    _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))],
    index_id: IndexId | None = None,
    status: Annotated[list[JobStatus] | None, Query()] = None,
    window_start_gte: Int64 | None = None,
    window_start_lt: Int64 | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Ulid | None = None,
) -> JobPage:
    """Compaction jobs in creation order, filtered by index, status and window range."""
    index_uid = (await load_live_index(session, index_id)).index_uid if index_id else None
    repo = CompactionRepository(session)
    flt = JobFilter(index_uid=index_uid, statuses=tuple(status or ()), window_start_gte=window_start_gte,
                    window_start_lt=window_start_lt)
    rows = await repo.list_page(flt, limit=limit + 1, after_job_id=cursor)
    page = list(rows[:limit])
    inputs = await repo.inputs_of([j.job_id for j in page])
    return JobPage(jobs=[job_out(j, inputs.get(j.job_id, [])) for j in page],
                   next_cursor=page[-1].job_id if len(rows) > limit else None)


@router.get("/v1/compaction/jobs/{job_id}", response_model=JobOut, responses=problem_responses(401, 403, 404))
async def get_compaction_job(job_id: Ulid, session: Session,
                             _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))]) -> JobOut:
    """One job: status, stage, progress, inputs, outputs, failures with reasons, Spark operation tag, timings."""
    repo = CompactionRepository(session)
    job = await repo.get(job_id)
    if job is None:
        raise NotFound(f"compaction job {job_id!r} does not exist")
    return job_out(job, (await repo.inputs_of([job_id])).get(job_id, []))


@router.post("/v1/compaction/jobs/{job_id}/cancel", response_model=JobOut,
             responses=problem_responses(401, 403, 404, 409))
async def cancel_compaction_job(job_id: Ulid, request: Request, session: Session, state: State,
                                _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> JobOut:
    """Cancel a job: its inputs are released, its worker's next write is refused, its Spark operation is
    interrupted by the worker (by its operation tag)."""
    repo = CompactionRepository(session)
    try:
        job = await repo.cancel(job_id, state.clock())
    except InvalidTransition as exc:
        raise Conflict(str(exc)) from exc
    if job is None:
        raise NotFound(f"compaction job {job_id!r} does not exist")
    await session.commit()
    return job_out(job, (await repo.inputs_of([job_id])).get(job_id, []))
