"""The indexing scheduler behind `POST /v1/indexing/poll`, on the same lease mechanism as compaction: apply the
worker's fenced updates (a success registers the artifacts and publishes the file's snapshot in one
transaction), revoke expired leases, cancel jobs of files no longer published, and hand out assignments within
the global and per-tenant limits."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from strata_indexer.indexing import snapshots
from strata_indexer.indexing.artifact_checks import artifact_prefix, check_artifact
from strata_indexer.indexing.schemas import (
    IndexingAssignment,
    IndexingPollRequest,
    IndexingPollResponse,
    IndexingUpdate,
    UpdateResult,
)
from strata_shared.domain.index_config import IndexSettings
from strata_shared.domain.split import SplitState
from strata_shared.metastore.indexing_models import IndexingJobRow
from strata_shared.metastore.indexing_repository import IndexingRepository
from strata_shared.metastore.leases import StaleToken
from strata_shared.metastore.models import IndexRow, SplitRow
from strata_shared.web.state import AppState

log = logging.getLogger("strata.indexing")


class BuildRejected(Exception):
    """The reported build cannot be published (an artifact fails its checks, the file is gone)."""


def _lease(state: AppState) -> timedelta:
    return timedelta(seconds=state.settings.compaction_lease_secs)


async def apply_update(state: AppState, update: IndexingUpdate, now: datetime) -> UpdateResult:
    settings = state.settings
    async with state.sessions() as session:
        repo = IndexingRepository(session)
        try:
            if update.status == "in_progress":
                job = await repo.queue.refresh(update.job_id, update.fencing_token, now, _lease(state),
                                               update.stage, update.progress, update.spark_operation_tag)
                await session.commit()
                return UpdateResult(job_id=update.job_id, accepted=True, lease_expires_at=job.lease_expires_at)
            if update.status == "failure":
                await repo.queue.fail(update.job_id, update.fencing_token, update.error or "worker reported a failure",
                                      now, settings.compaction_max_failures)
                await session.commit()
                return UpdateResult(job_id=update.job_id, accepted=True)
            job = await repo.queue.fenced(update.job_id, update.fencing_token)
            await _publish_build(state, session, repo, job, update, now)
            await session.commit()
            return UpdateResult(job_id=update.job_id, accepted=True)
        except StaleToken as stale:
            await session.rollback()
            return UpdateResult(job_id=update.job_id, accepted=False, reason=str(stale))
        except BuildRejected as rejected:
            await session.rollback()
            reason = f"publish refused: {rejected}"
            log.warning("indexing job %s: %s", update.job_id, reason)
    async with state.sessions() as session:
        try:
            await IndexingRepository(session).queue.fail(update.job_id, update.fencing_token, reason, now,
                                                         settings.compaction_max_failures)
            await session.commit()
        except StaleToken:
            await session.rollback()
    return UpdateResult(job_id=update.job_id, accepted=False, reason=reason)


async def _publish_build(state: AppState, session, repo: IndexingRepository, job: IndexingJobRow,
                         update: IndexingUpdate, now: datetime) -> None:
    split = await session.get(SplitRow, job.split_id, with_for_update=True)
    if split is None or split.state not in (SplitState.PUBLISHED, SplitState.MARKED_FOR_DELETION):
        raise BuildRejected(f"split {job.split_id} is no longer readable")
    refs, problems = [], []
    for i, artifact in enumerate(update.artifacts):
        checked, found = check_artifact(state.storage, split.split_id, split.index_uid, artifact.to_ref(),
                                        f"artifacts[{i}]")
        problems.extend(found)
        if checked is not None:
            refs.append(checked)
    if problems:
        raise BuildRejected("; ".join(f"{f}: {m}" for f, m in problems))
    # The job holds the file (one live job per split, fenced): its build supersedes older artifacts.
    rows = [row for row, _ in await repo.register(split, refs, f"job:{job.job_id}", replace=True)]
    await snapshots.publish(session, state.storage, split, rows, update.skipped, f"job:{job.job_id}", now)
    repo.queue.succeed(job, now, stage="published")
    job.artifact_count = len(rows)
    job.artifact_bytes = sum(r.size_bytes for r in rows)
    job.skipped = update.skipped
    await session.flush()


async def poll(state: AppState, request: IndexingPollRequest, now: datetime) -> IndexingPollResponse:
    settings = state.settings
    results = [await apply_update(state, update, now) for update in request.updates]
    async with state.sessions() as session:
        repo = IndexingRepository(session)
        await repo.queue.expire_leases(now, settings.compaction_max_failures)
        await repo.cancel_orphaned(now)
        jobs = await repo.assign(request.worker_id, request.capacity, now, _lease(state),
                                 max_in_progress=settings.indexing_max_in_progress,
                                 max_in_progress_per_tenant=settings.indexing_max_in_progress_per_tenant)
        assignments = [await _assignment(state, session, job) for job in jobs]
        await session.commit()
    return IndexingPollResponse(assignments=assignments, updates=results, lease_secs=settings.compaction_lease_secs)


async def _assignment(state: AppState, session, job: IndexingJobRow) -> IndexingAssignment:
    split = await session.get(SplitRow, job.split_id)
    index = await session.get(IndexRow, job.index_uid)
    index_settings = IndexSettings.model_validate(index.config)
    tag = f"strata-index-{job.job_id}-{job.fencing_token}"
    job.spark_operation_tag = tag
    return IndexingAssignment(
        job_id=job.job_id, fencing_token=job.fencing_token, lease_expires_at=job.lease_expires_at,
        lease_secs=state.settings.compaction_lease_secs, split_id=job.split_id, index_uid=job.index_uid,
        partition_id=job.partition_id, uri=split.uri, artifact_prefix=artifact_prefix(state.storage, job.index_uid),
        artifacts=index_settings.artifacts, field_types={f.name: str(f.type) for f in index_settings.fields},
        zstd_level=index_settings.parquet.zstd_level, spark_operation_tag=tag)
