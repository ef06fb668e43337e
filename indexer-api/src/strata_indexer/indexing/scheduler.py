"""Indexing as a configuration of the shared job-queue scheduler: a success registers the artifacts and
publishes the file's snapshot in one transaction, housekeeping cancels jobs of files no longer published, and
jobs are handed out within the global and per-tenant limits."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.clock import Clock
from strata_core.config import IndexingSettings
from strata_core.domain.artifact_refs import ArtifactRef
from strata_core.domain.index_config import IndexSettings
from strata_core.domain.scheduler_rules import InProgressLimits
from strata_core.domain.split import SplitState
from strata_core.storage import ObjectStore
from strata_frame.jobqueue.service import QueueSpec
from strata_frame.maintenance.skips import PLANNING_FAULTS, MaintenancePass, PassRecorder, maintenance_pass
from strata_indexer.indexing import snapshots
from strata_indexer.indexing.artifact_checks import artifact_prefix, check_artifacts
from strata_indexer.indexing.schemas import IndexingAssignment, IndexingUpdate
from strata_metastore.indexing_models import IndexingJobRow
from strata_metastore.indexing_repository import IndexingRepository, SnapshotToPublish
from strata_metastore.lease_queue import PublishRefused, look_ahead
from strata_metastore.models import SplitRow
from strata_metastore.repositories import IndexRepository, SplitRepository


class BuildRejected(PublishRefused):
    """The reported build cannot be published (an artifact fails its checks, the file is gone)."""


def indexing_queue(storage: ObjectStore, settings: IndexingSettings, passes: PassRecorder,
                   clock: Clock) -> QueueSpec[IndexingUpdate, IndexingAssignment]:

    async def publish(session: AsyncSession, update: IndexingUpdate, now: datetime,
                      checked: CheckedBuild | None = None) -> None:
        repo = IndexingRepository(session)
        job = await repo.queue.fenced(update.job_id, update.fencing_token)
        await _publish_build(storage, session, repo, job, update, now, checked)

    async def publish_batch(session: AsyncSession, updates: Sequence[IndexingUpdate], now: datetime,
                            prepared: dict[str, CheckedBuild]) -> dict[str, object]:
        # Only builds `prepare` checked and found publishable; any other goes one at a time through `publish`,
        # which refuses it as it would without a batch.
        repo = IndexingRepository(session)
        jobs = await repo.queue.fenced_many({u.job_id: u.fencing_token for u in updates})
        ready = [(job, update, checked) for update in updates
                 if _publishable(job := jobs.get(update.job_id), checked := prepared.get(update.job_id))]
        if not ready:
            return {}
        await _publish_checked(session, repo, ready, now)
        return {job.job_id: None for job, _, _ in ready}

    async def lock_splits(session: AsyncSession, jobs: Sequence[IndexingJobRow]) -> None:
        # Every build's file locked before the first is published: a build's snapshot takes its index's plan
        # generation (the `artifact_snapshots` trigger), and a file locked after that could be an input a merge
        # holds while it waits on that row for its outputs (a deadlock, three times in a soak with local slots).
        await SplitRepository(session).lock_rows_in_order([job.split_id for job in jobs])

    async def prepare(session: AsyncSession, owned: Sequence[tuple[IndexingJobRow, IndexingUpdate]]
                      ) -> dict[str, CheckedBuild]:
        # Every build's artifacts checked and its manifest written before the first snapshot row takes the index's
        # plan generation, and the builds' reads at once rather than one after another.
        splits = await SplitRepository(session).rows([job.split_id for job, _ in owned])
        readable = [(job, update, split) for job, update in owned
                    if (split := splits.get(job.split_id)) is not None and split.state in _READABLE]
        checked = await asyncio.gather(*(_check_build(storage, job, update, split)
                                         for job, update, split in readable))
        return {job.job_id: build for (job, _, _), build in zip(readable, checked, strict=True)}

    async def cancel_orphans(session: AsyncSession, capacity: int, now: datetime) -> None:
        # As far down the queue as `assign` looks for this capacity.
        await IndexingRepository(session).cancel_orphaned(now, head=look_ahead(capacity))

    async def assign(session: AsyncSession, worker_id: str, capacity: int, now: datetime,
                     lease: timedelta) -> Sequence[IndexingJobRow]:
        return await IndexingRepository(session).assign(worker_id, capacity, now, lease, InProgressLimits(
            total=settings.max_in_progress, per_tenant=settings.max_in_progress_per_tenant))

    async def describe(session: AsyncSession, jobs: Sequence[IndexingJobRow]) -> list[IndexingAssignment]:
        if not jobs:
            return []
        now = clock()
        out = []
        # Every job's file in one statement; each index's settings read and validated once for all its jobs.
        splits = await SplitRepository(session).rows([job.split_id for job in jobs])
        index_settings: dict[str, IndexSettings] = {}
        # Only the indexes of the jobs handed out are looked at: a record of another stays until one is.
        async with maintenance_pass(passes, MaintenancePass.INDEXING_PLANNING, now, faults=PLANNING_FAULTS,
                                    covers_everything=False) as skips:
            for job in jobs:
                async with skips.entry(job.index_uid.split(":", 1)[0], job.job_id) as described:
                    if job.index_uid not in index_settings:
                        index = await IndexRepository(session).get(job.index_uid)
                        index_settings[job.index_uid] = IndexSettings.model_validate(index.config)
                    out.append(_assignment(storage, settings.lease_secs, job, splits[job.split_id],
                                           index_settings[job.index_uid]))
                if described.skipped:
                    # Handed out, it would fail every poll for every worker; as a failed attempt it is excluded
                    # after max_failures, and the record says why.
                    await IndexingRepository(session).queue.fail(
                        job.job_id, job.fencing_token, f"cannot be planned: {described.reason_class}: "
                        f"{described.reason}", now, settings.max_failures)
        return out

    return QueueSpec(name="indexing", lease_secs=settings.lease_secs, max_failures=settings.max_failures,
                     queue_of=lambda session: IndexingRepository(session).queue, publish=publish,
                     housekeeping=cancel_orphans, assign=assign, describe=describe, lock_splits=lock_splits,
                     prepare=prepare, publish_batch=publish_batch)


async def cancel_job(session: AsyncSession, job_id: str, now: datetime) -> IndexingJobRow | None:
    """An operator's cancel: the worker's next write is refused; the file is built again by a later job (the
    janitor's repair) if it still needs its artifacts."""
    return await IndexingRepository(session).cancel(job_id, now)


# The states in which a file's artifacts may still be published: queries read it.
_READABLE = (SplitState.PUBLISHED, SplitState.MARKED_FOR_DELETION)


@dataclass(frozen=True)
class CheckedBuild:
    """A reported build of `split` with its artifacts checked (`check_artifacts`: the refs with their canonical
    URIs, and every problem) and, when there was none, its manifest written."""

    split: SplitRow
    refs: list[ArtifactRef]
    problems: list[tuple[str, str]]
    manifest_uri: str | None


async def _check_build(storage: ObjectStore, job: IndexingJobRow, update: IndexingUpdate,
                       split: SplitRow) -> CheckedBuild:
    # Reading and hashing every object is blocking I/O: off the event loop.
    refs, problems = await asyncio.to_thread(check_artifacts, storage, split.split_id, split.index_uid,
                                             [artifact.to_ref() for artifact in update.artifacts])
    # The job holds the file (one live job per split, fenced, locked by this poll), so the manifest is its own to
    # write; it lists the checked refs, which the artifact rows registered from them repeat.
    manifest = None if problems else await snapshots.write_manifest(storage, split, refs, update.skipped,
                                                                    f"job:{job.job_id}")
    return CheckedBuild(split, refs, problems, manifest)


async def _publish_build(storage: ObjectStore, session, repo: IndexingRepository, job: IndexingJobRow,
                         update: IndexingUpdate, now: datetime, checked: CheckedBuild | None) -> None:
    """`checked`: what the poll's `prepare` did for this build, or None to do it here."""
    # Locked already with the poll's other builds (`lock_splits`, in split id order), and read in this
    # transaction by `prepare` when it ran.
    split = checked.split if checked is not None else await SplitRepository(session).row(job.split_id)
    if split is None or split.state not in _READABLE:
        raise BuildRejected(f"split {job.split_id} is no longer readable")
    if checked is None:
        checked = await _check_build(storage, job, update, split)
    if checked.problems:
        raise BuildRejected("; ".join(f"{f}: {m}" for f, m in checked.problems))
    await _publish_checked(session, repo, [(job, update, checked)], now)


def _publishable(job: IndexingJobRow | None, checked: CheckedBuild | None) -> bool:
    """Whether a build can go with the poll's batch: its token owns the job, and its file is still readable and
    its artifacts passed their checks (so its manifest is written). Any other is left to `_publish_build`."""
    return (job is not None and checked is not None and not checked.problems and checked.manifest_uri is not None
            and checked.split.state in _READABLE)


async def _publish_checked(session: AsyncSession, repo: IndexingRepository,
                           builds: Sequence[tuple[IndexingJobRow, IndexingUpdate, CheckedBuild]],
                           now: datetime) -> None:
    """Checked builds published: their artifacts registered, their snapshots published and their jobs succeeded,
    one statement per kind for all of them."""
    # The job holds the file (one live job per split, fenced): its build supersedes older artifacts.
    registered = await repo.register_many(
        [(checked.split, checked.refs, f"job:{job.job_id}") for job, _, checked in builds], replace=True)
    rows_of = [[row for row, _ in rows] for rows in registered]
    # The manifest, written by `_check_build`, lists the checked refs the rows were registered from.
    await repo.publish_snapshots([
        SnapshotToPublish(checked.split, rows, checked.manifest_uri, f"job:{job.job_id}")
        for (job, _, checked), rows in zip(builds, rows_of, strict=True)], now)
    for (job, update, _), rows in zip(builds, rows_of, strict=True):
        repo.queue.succeed(job, now, stage="published")
        job.artifact_count = len(rows)
        job.artifact_bytes = sum(r.size_bytes for r in rows)
        job.skipped = update.skipped
    await session.flush()


def _assignment(storage: ObjectStore, lease_secs: float, job: IndexingJobRow, split: SplitRow,
                index_settings: IndexSettings) -> IndexingAssignment:
    tag = f"strata-index-{job.job_id}-{job.fencing_token}"
    job.spark_operation_tag = tag
    return IndexingAssignment(
        job_id=job.job_id, fencing_token=job.fencing_token, lease_expires_at=job.lease_expires_at,
        lease_secs=lease_secs, split_id=job.split_id, index_uid=job.index_uid,
        partition_id=job.partition_id, uri=split.uri, size_bytes=split.size_bytes,
        artifact_prefix=artifact_prefix(storage, job.index_uid),
        artifacts=index_settings.artifacts, field_types={f.name: str(f.type) for f in index_settings.fields},
        zstd_level=index_settings.parquet.zstd_level, spark_operation_tag=tag)
