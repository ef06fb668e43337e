"""HTTP routes of indexing: the job queue's (worker protocol, job status), indexing lag, the janitor, and
per-file artifacts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from strata_core.domain.wire_types import Ulid
from strata_frame.jobqueue.router import JobAction, JobQueueApi, job_queue_router
from strata_frame.maintenance.router import maintenance_router
from strata_frame.maintenance.skips import MaintenancePass
from strata_frame.web.auth import Principal, Scope, require, require_any
from strata_frame.web.deps import Session, State
from strata_frame.web.problems import problem_responses
from strata_indexer.indexing.artifacts import register_artifacts, split_artifacts, split_of
from strata_indexer.indexing.dependencies import JanitorDep, indexing_queue
from strata_indexer.indexing.lag import lag_by_index
from strata_indexer.indexing.scheduler import cancel_job
from strata_indexer.indexing.schemas import (
    IndexingJobOut,
    IndexingJobPage,
    IndexingLagResponse,
    IndexingPollRequest,
    IndexingPollResponse,
    JanitorReportOut,
    RegisterArtifactsRequest,
    RegisterArtifactsResponse,
    SplitArtifacts,
)
from strata_metastore.indexing_repository import IndexingJobFilter, IndexingRepository

router = APIRouter(tags=["indexing"])


def _job_filters(split_id: Ulid | None = None) -> IndexingJobFilter:
    return IndexingJobFilter(split_id=split_id)


router.include_router(job_queue_router(JobQueueApi(
    name="indexing", queue=indexing_queue, jobs=IndexingRepository, poll_request=IndexingPollRequest,
    poll_response=IndexingPollResponse, job_out=IndexingJobOut, job_page=IndexingJobPage, filters=_job_filters,
    filtered_by="file",
    job_shows="status, stage, failures with reasons, the artifacts it published, what it skipped and why",
    hands_out="files to index", requests_operation="artifact_build",
    actions=[JobAction("cancel", cancel_job,
                       "Cancel a job: its worker's next write is refused and its Spark operation is interrupted by "
                       "the worker (by its operation tag).")],
)))


@router.get("/v1/indexing/lag", response_model=IndexingLagResponse, responses=problem_responses(401, 403))
async def indexing_lag(session: Session, state: State,
                       _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))]
                       ) -> IndexingLagResponse:
    """Per index: files published but without a published artifact snapshot, and the age of the oldest."""
    return IndexingLagResponse(indexes=await lag_by_index(session, state.clock()))


@router.post("/v1/indexing/janitor", response_model=JanitorReportOut, responses=problem_responses(401, 403))
async def run_artifact_janitor(state: State, janitor: JanitorDep,
                               _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> JanitorReportOut:
    """Run one janitor pass now (it also runs in the background): reconcile artifact objects and rows."""
    report = await janitor.run(state.clock())
    return JanitorReportOut(registered=report.registered, deleted=report.deleted, missing=report.missing,
                            reindexed=report.reindexed)


@router.get("/v1/splits/{split_id}/artifacts", response_model=SplitArtifacts,
            responses=problem_responses(401, 403, 404))
async def list_split_artifacts(
    split_id: Ulid, session: Session,
    principal: Annotated[Principal, Depends(require_any(Scope.WRITER, Scope.WORKER, Scope.QUERY))],
) -> SplitArtifacts:
    """A file's registered artifacts and its snapshot: which of them queries use (the published set)."""
    await split_of(session, split_id, principal)
    return await split_artifacts(session, split_id)


@router.post("/v1/splits/{split_id}/artifacts", response_model=RegisterArtifactsResponse,
             responses=problem_responses(401, 403, 404, 409, 422))
async def register_split_artifacts(
    split_id: Ulid, request: RegisterArtifactsRequest, session: Session, state: State,
    principal: Annotated[Principal, Depends(require(Scope.WRITER))],
) -> RegisterArtifactsResponse:
    """Register artifacts built elsewhere. Each is checked (where it is stored, its size, its header: file,
    type, column, format version, and its content hash); all or nothing. Registering the same artifact again is
    a no-op; the same identity (file, type, column, version) with other content is a 409. With `publish`, the
    file's snapshot then lists every registered artifact, all visible at once."""
    split = await split_of(session, split_id, principal, for_update=True)
    created = await register_artifacts(session, state.storage, split, [a.to_ref() for a in request.artifacts],
                                       publish=request.publish, now=state.clock())
    out = await split_artifacts(session, split_id)
    return RegisterArtifactsResponse(**out.model_dump(), created=created)


router.include_router(maintenance_router(
    (MaintenancePass.JANITOR, MaintenancePass.INDEXING_PLANNING), "indexer-api"))
