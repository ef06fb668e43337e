"""HTTP routes of indexing: the worker protocol, job status, indexing lag, and per-file artifacts."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from sqlalchemy.ext.asyncio import AsyncSession

from strata_indexer.indexing import scheduler, snapshots
from strata_indexer.indexing.artifact_checks import check_artifact
from strata_indexer.indexing.janitor import run_janitor
from strata_indexer.indexing.lag import lag_by_index
from strata_indexer.indexing.schemas import (
    ArtifactOut,
    IndexingJobOut,
    IndexingJobPage,
    IndexingLagResponse,
    IndexingPollRequest,
    IndexingPollResponse,
    JanitorReportOut,
    RegisterArtifactsRequest,
    RegisterArtifactsResponse,
    SnapshotOut,
    SplitArtifacts,
)
from strata_shared.domain.jobs import JobStatus
from strata_shared.domain.wire_types import IndexId, Ulid
from strata_shared.errors import Conflict, InvalidInput, NotFound
from strata_shared.metastore.indexing_models import ArtifactRow, IndexingJobRow
from strata_shared.metastore.indexing_repository import ArtifactConflict, IndexingJobFilter, IndexingRepository
from strata_shared.metastore.models import SplitRow
from strata_shared.metastore.repositories import load_live_index
from strata_shared.web.auth import Principal, Scope, require, require_any
from strata_shared.web.deps import app_state, db_session
from strata_shared.web.problems import problem_responses
from strata_shared.web.state import AppState

router = APIRouter(tags=["indexing"])
Session = Annotated[AsyncSession, Depends(db_session)]
State = Annotated[AppState, Depends(app_state)]



def job_out(job: IndexingJobRow) -> IndexingJobOut:
    return IndexingJobOut(
        job_id=job.job_id, split_id=job.split_id, index_uid=job.index_uid, partition_id=job.partition_id,
        reason=job.reason, status=str(job.status), stage=job.stage, progress=job.progress,
        fencing_token=job.fencing_token, worker_id=job.worker_id, lease_expires_at=job.lease_expires_at,
        failures=job.failures, last_error=job.last_error, failure_log=job.failure_log,
        artifact_count=job.artifact_count, artifact_bytes=job.artifact_bytes, skipped=job.skipped or [],
        created_at=job.created_at, updated_at=job.updated_at, first_assigned_at=job.first_assigned_at,
        finished_at=job.finished_at)


@router.post("/v1/indexing/poll", response_model=IndexingPollResponse, responses=problem_responses(401, 403, 422))
async def poll_indexing_jobs(request: IndexingPollRequest, state: State,
                             _: Annotated[Principal, Depends(require(Scope.WORKER))]) -> IndexingPollResponse:
    """The worker protocol (the compaction scheduler's, for per-file artifact builds): report fenced status
    updates and free capacity, receive files to index with leases and fencing tokens."""
    return await scheduler.poll(state, request, state.clock())


@router.get("/v1/indexing/jobs", response_model=IndexingJobPage, responses=problem_responses(401, 403, 404, 422))
async def list_indexing_jobs(
    session: Session,
    _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))],
    index_id: IndexId | None = None,
    status: Annotated[list[JobStatus] | None, Query()] = None,
    split_id: Ulid | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Ulid | None = None,
) -> IndexingJobPage:
    """Indexing jobs in creation order, filtered by index, status and file."""
    index_uid = (await load_live_index(session, index_id)).index_uid if index_id else None
    flt = IndexingJobFilter(index_uid=index_uid, statuses=tuple(status or ()), split_id=split_id)
    rows = await IndexingRepository(session).list_page(flt, limit=limit + 1, after_job_id=cursor)
    page = list(rows[:limit])
    return IndexingJobPage(jobs=[job_out(j) for j in page],
                           next_cursor=page[-1].job_id if len(rows) > limit else None)


@router.get("/v1/indexing/jobs/{job_id}", response_model=IndexingJobOut, responses=problem_responses(401, 403, 404))
async def get_indexing_job(job_id: Ulid, session: Session,
                           _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))]
                           ) -> IndexingJobOut:
    """One job: status, stage, failures with reasons, the artifacts it published, what it skipped and why."""
    job = await IndexingRepository(session).get(job_id)
    if job is None:
        raise NotFound(f"indexing job {job_id!r} does not exist")
    return job_out(job)


@router.get("/v1/indexing/lag", response_model=IndexingLagResponse, responses=problem_responses(401, 403))
async def indexing_lag(session: Session, state: State,
                       _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))]
                       ) -> IndexingLagResponse:
    """Per index: files published but without a published artifact snapshot, and the age of the oldest."""
    return IndexingLagResponse(indexes=await lag_by_index(session, state.clock()))


@router.post("/v1/indexing/janitor", response_model=JanitorReportOut, responses=problem_responses(401, 403))
async def run_artifact_janitor(state: State,
                               _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> JanitorReportOut:
    """Run one janitor pass now (it also runs in the background): reconcile artifact objects and rows."""
    report = await run_janitor(state, state.clock())
    return JanitorReportOut(registered=report.registered, deleted=report.deleted, missing=report.missing,
                            reindexed=report.reindexed)


async def _split_for(session: AsyncSession, split_id: str, principal: Principal, *,
                     for_update: bool = False) -> SplitRow:
    split = await session.get(SplitRow, split_id, with_for_update=for_update)
    if split is None:
        raise NotFound(f"split {split_id!r} does not exist")
    principal.check_tenant(split.partition_id)
    return split


def _artifacts_out(split_id: str, rows: list[ArtifactRow], snapshot) -> SplitArtifacts:
    visible = set(snapshot.artifact_ids) if snapshot is not None and snapshot.published else set()
    return SplitArtifacts(
        split_id=split_id,
        snapshot=SnapshotOut(published=bool(snapshot and snapshot.published),
                             manifest_uri=snapshot.manifest_uri if snapshot else None,
                             published_at=snapshot.published_at if snapshot else None,
                             artifact_count=len(visible)),
        artifacts=[ArtifactOut(artifact_id=a.artifact_id, artifact_type=a.artifact_type, column=a.column_name,
                               format_version=a.format_version, uri=a.uri, size_bytes=a.size_bytes,
                               content_hash=a.content_hash, registered_by=a.registered_by, created_at=a.created_at,
                               in_published_snapshot=a.artifact_id in visible)
                   for a in rows])


@router.get("/v1/splits/{split_id}/artifacts", response_model=SplitArtifacts,
            responses=problem_responses(401, 403, 404))
async def list_split_artifacts(
    split_id: Ulid, session: Session,
    principal: Annotated[Principal, Depends(require_any(Scope.WRITER, Scope.WORKER, Scope.QUERY))],
) -> SplitArtifacts:
    """A file's registered artifacts and its snapshot: which of them queries use (the published set)."""
    await _split_for(session, split_id, principal)
    repo = IndexingRepository(session)
    return _artifacts_out(split_id, await repo.artifacts_of(split_id), await repo.snapshot(split_id))


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
    split = await _split_for(session, split_id, principal, for_update=True)
    refs, problems = [], []
    seen = set()
    for i, artifact in enumerate(request.artifacts):
        ref = artifact.to_ref()
        if ref.identity in seen:
            problems.append((f"artifacts[{i}]", "the same (type, column, version) appears twice in the request"))
            continue
        seen.add(ref.identity)
        checked, found = check_artifact(state.storage, split.split_id, split.index_uid, ref, f"artifacts[{i}]")
        problems.extend(found)
        if checked is not None:
            refs.append(checked)
    if problems:
        raise InvalidInput.fields(problems)
    repo = IndexingRepository(session)
    try:
        registered = await repo.register(split, refs, "api", replace=False)
    except ArtifactConflict as conflict:
        raise Conflict(str(conflict)) from conflict
    if request.publish:
        await snapshots.publish(session, state.storage, split, await repo.artifacts_of(split_id), [], "api",
                                state.clock())
    await session.commit()
    out = _artifacts_out(split_id, await repo.artifacts_of(split_id), await repo.snapshot(split_id))
    return RegisterArtifactsResponse(**out.model_dump(), created=[r.artifact_id for r, new in registered if new])
