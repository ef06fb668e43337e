"""HTTP routes of compaction: planning, the worker protocol, job status, the window timeline."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from sqlalchemy.ext.asyncio import AsyncSession

from strata_planner.compaction.planning import WindowRange, plan_index, skipped_summary
from strata_planner.compaction.scheduler import cancel_job, compaction_queue
from strata_planner.compaction.schemas import (
    JobOut,
    JobPage,
    PlannedOperation,
    PlanRequest,
    PlanResponse,
    PollRequest,
    PollResponse,
    StatusUpdate,
    WindowPage,
)
from strata_planner.compaction.status import window_summaries
from strata_shared.domain.wire_types import IndexId, Int64
from strata_shared.errors import InvalidInput
from strata_shared.metastore.compaction_repository import CompactionJobFilter, CompactionRepository
from strata_shared.metastore.repositories import load_live_index
from strata_shared.scheduling.router import JobAction, JobQueueApi, job_queue_router
from strata_shared.web.auth import Principal, Scope, require, require_any
from strata_shared.web.deps import Session, State
from strata_shared.web.problems import problem_responses
from strata_shared.web.state import AppState

router = APIRouter(tags=["compaction"])


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


def _job_filters(window_start_gte: Int64 | None = None, window_start_lt: Int64 | None = None) -> CompactionJobFilter:
    return CompactionJobFilter(window_start_gte=window_start_gte, window_start_lt=window_start_lt)


router.include_router(job_queue_router(JobQueueApi(
    name="compaction", queue=compaction_queue, jobs=CompactionRepository, poll_request=PollRequest,
    poll_response=PollResponse, job_out=JobOut, job_page=JobPage, filters=_job_filters,
    filtered_by="window range",
    job_shows="status, stage, progress, inputs, outputs, failures with reasons, Spark operation tag, timings",
    hands_out="new assignments", status_update=StatusUpdate,
    actions=[JobAction("cancel", cancel_job,
                       "Cancel a job: its inputs are released, its worker's next write is refused, its Spark "
                       "operation is interrupted by the worker (by its operation tag).")],
)))
