"""HTTP routes of compaction: planning, the worker protocol, job status and operator controls (the shared job
queue routes), the window timeline, and retention (dropping whole windows)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.index_config import IndexSettings
from strata_core.domain.windows import retention_cutoff
from strata_core.domain.wire_types import IndexId, Int64
from strata_core.errors import Conflict, InvalidInput
from strata_frame.jobqueue.router import JobAction, JobQueueApi, job_queue_router
from strata_frame.jobqueue.service import QueueSpec
from strata_frame.maintenance.router import maintenance_router
from strata_frame.maintenance.skips import MaintenancePass
from strata_frame.web.auth import Principal, Scope, require, require_any
from strata_frame.web.deps import Session
from strata_frame.web.problems import problem_responses
from strata_metastore.compaction_repository import CompactionJobFilter, CompactionRepository
from strata_metastore.repositories import load_live_index
from strata_planner.compaction.debt import HISTORY_KEPT, debt_history, index_debt
from strata_planner.compaction.dependencies import Planner
from strata_planner.compaction.planning import WindowRange, create_planned_jobs, plan_index, skipped_summary
from strata_planner.compaction.retention import RetentionOutcome
from strata_planner.compaction.scheduler import cancel_job
from strata_planner.compaction.schemas import (
    DebtHistory,
    DebtOut,
    DroppedWindowOut,
    JobOut,
    JobPage,
    PlannedOperation,
    PlanRequest,
    PlanResponse,
    PollRequest,
    PollResponse,
    RetentionApplyRequest,
    RetentionReport,
    StatusUpdate,
    WindowPage,
)
from strata_planner.compaction.services import PlannerServices
from strata_planner.compaction.status import window_summaries

router = APIRouter(tags=["compaction"])


def _epoch(value: int | datetime | None, field: str) -> int | None:
    if value is None or isinstance(value, int):
        return value
    if value.tzinfo is None:
        raise InvalidInput.field(field, "a datetime needs a timezone")
    return int(value.timestamp())


async def _plan(index_id: str, request: PlanRequest, session: AsyncSession, services: PlannerServices,
                create_jobs: bool) -> PlanResponse:
    index = await load_live_index(session, index_id)
    window_range = WindowRange(_epoch(request.start, "from"), _epoch(request.end, "to"))
    if window_range.start_gte is not None and window_range.start_lt is not None \
            and window_range.start_gte >= window_range.start_lt:
        raise InvalidInput.field("to", "must be after from")
    if create_jobs:
        outcome = await create_planned_jobs(session, index, services.clock(), window_range=window_range,
                                            force_final=request.final, max_new_jobs=services.settings.queue_bound)
    else:
        outcome = await plan_index(session, index, services.clock(), window_range=window_range,
                                   force_final=request.final, create_jobs=False)
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
async def plan_compaction(index_id: IndexId, request: PlanRequest, session: Session, services: Planner,
                          _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> PlanResponse:
    """Dry run: the merge operations a trigger would create now, and why every other split is left alone."""
    return await _plan(index_id, request, session, services, create_jobs=False)


@router.post("/v1/indexes/{index_id}/compaction/trigger", response_model=PlanResponse,
             responses=problem_responses(401, 403, 404, 422))
async def trigger_compaction(index_id: IndexId, request: PlanRequest, session: Session, services: Planner,
                             _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> PlanResponse:
    """Create compaction jobs for the index (optionally a window range, optionally forcing a final merge)."""
    return await _plan(index_id, request, session, services, create_jobs=True)


@router.get("/v1/indexes/{index_id}/windows", response_model=WindowPage, responses=problem_responses(401, 403, 404))
async def list_windows(index_id: IndexId, session: Session, services: Planner,
                       _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER, Scope.QUERY))],
                       window_start_gte: Int64 | None = None, window_start_lt: Int64 | None = None,
                       limit: Annotated[int, Query(ge=1, le=10_000)] = 500) -> WindowPage:
    """Per window, newest first: splits, rows, bytes, split levels, live jobs, last compaction."""
    index = await load_live_index(session, index_id)
    windows = await window_summaries(session, index, services.clock(), start_gte=window_start_gte,
                                     start_lt=window_start_lt, limit=limit)
    retention = IndexSettings.model_validate(index.config).retention
    return WindowPage(
        index_id=index_id, windows=windows, compaction_paused_at=index.compaction_paused_at,
        retention_period_secs=None if retention is None else retention.period_secs,
        retention_cutoff=None if retention is None else retention_cutoff(int(services.clock().timestamp()),
                                                                          retention.period_secs))


@router.get("/v1/indexes/{index_id}/debt", response_model=DebtOut, responses=problem_responses(401, 403, 404))
async def get_debt(index_id: IndexId, session: Session, services: Planner,
                   _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER, Scope.QUERY))]) -> DebtOut:
    """How far compaction and indexing are behind the index's writes: splits the merge policy would still merge
    (by level), closed windows not yet final, live jobs, the merge rate and first-merge delays, files waiting for
    their artifacts."""
    index = await load_live_index(session, index_id)
    return await index_debt(session, index, services.clock())


@router.get("/v1/indexes/{index_id}/debt/history", response_model=DebtHistory,
            responses=problem_responses(401, 403, 404, 422))
async def get_debt_history(index_id: IndexId, session: Session, services: Planner,
                           _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER, Scope.QUERY))],
                           minutes: Annotated[int, Query(ge=1, le=int(HISTORY_KEPT.total_seconds() // 60),
                                                         description="how far back")] = 15) -> DebtHistory:
    """The index's debt sampled every 10 s by planner-api's metrics refresh, oldest first (an hour is kept)."""
    index = await load_live_index(session, index_id)
    return DebtHistory(index_id=index_id, samples=await debt_history(session, index, services.clock(), minutes))


def _report(outcome: RetentionOutcome) -> RetentionReport:
    return RetentionReport(
        index_id=outcome.index_id, cutoff=outcome.cutoff, dry_run=outcome.dry_run,
        windows=[DroppedWindowOut(window_start=w.window_start, window_duration_secs=w.window_duration_secs,
                                  splits=w.splits, rows=w.rows, bytes=w.bytes, cancelled_job_ids=w.cancelled_job_ids)
                 for w in outcome.windows],
        splits=outcome.splits, rows=outcome.rows, bytes=outcome.bytes)


@router.post("/v1/indexes/{index_id}/retention/apply", response_model=RetentionReport,
             responses=problem_responses(401, 403, 404, 409, 422))
async def apply_retention(index_id: IndexId, request: RetentionApplyRequest, session: Session, services: Planner,
                          _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> RetentionReport:
    """Apply the index's retention now: every window whose end is older than its retention period is dropped
    (its live compaction jobs cancelled, its splits marked for deletion, one transaction per window; the files
    go after the garbage collector's grace period). A dry run lists what would go. 409 when the index has no
    retention configured."""
    index = await load_live_index(session, index_id)
    retention = IndexSettings.model_validate(index.config).retention
    if retention is None:
        raise Conflict(f"index {index_id!r} has no retention configured (set retention.period_secs in its config)")
    now = services.clock()
    cutoff = retention_cutoff(int(now.timestamp()), retention.period_secs)
    return _report(await services.retention.drop_windows(index, cutoff, now, dry_run=request.dry_run))


@router.delete("/v1/indexes/{index_id}/windows", response_model=RetentionReport,
               responses=problem_responses(401, 403, 404, 422))
async def delete_windows(index_id: IndexId, session: Session, services: Planner,
                         _: Annotated[Principal, Depends(require(Scope.ADMIN))],
                         older_than: Annotated[Int64 | datetime, Query(
                             description="drop windows ending at or before this (epoch seconds or RFC 3339); "
                                         "not in the future")],
                         dry_run: Annotated[bool, Query(description="only list what would be dropped")] = False,
                         ) -> RetentionReport:
    """Drop the index's windows ending at or before `older_than`, as retention does (whatever its configured
    period): live compaction jobs cancelled, splits marked for deletion, files deleted after the grace period."""
    index = await load_live_index(session, index_id)
    now = services.clock()
    cutoff = _epoch(older_than, "older_than")
    if cutoff > int(now.timestamp()):
        raise InvalidInput.field("older_than", "must not be in the future (it would drop windows still written)")
    return _report(await services.retention.drop_windows(index, cutoff, now, dry_run=dry_run))


async def _compaction_queue(services: Planner) -> QueueSpec:
    return services.queue


def _job_filters(window_start_gte: Int64 | None = None, window_start_lt: Int64 | None = None) -> CompactionJobFilter:
    return CompactionJobFilter(window_start_gte=window_start_gte, window_start_lt=window_start_lt)


router.include_router(job_queue_router(JobQueueApi(
    name="compaction", queue=_compaction_queue, jobs=CompactionRepository, poll_request=PollRequest,
    poll_response=PollResponse, job_out=JobOut, job_page=JobPage, filters=_job_filters,
    filtered_by="window range",
    job_shows="status, stage, progress, inputs, outputs, failures with reasons, Spark operation tag, timings",
    hands_out="new assignments", status_update=StatusUpdate, requests_operation="merge",
    actions=[JobAction("cancel", cancel_job,
                       "Cancel a job: its inputs are released, its worker's next write is refused, its Spark "
                       "operation is interrupted by the worker (by its operation tag).")],
)))
router.include_router(maintenance_router(
    (MaintenancePass.GC, MaintenancePass.RETENTION, MaintenancePass.COMPACTION_PLANNING), "planner-api"))
