"""The scheduler behind `POST /v1/compaction/poll`: apply the worker's status updates (each fenced by its token),
revoke expired leases, plan new jobs in proportion to the reported capacity, and hand out assignments."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from strata_planner.compaction.planning import WindowRange, plan_index
from strata_planner.compaction.schemas import (
    AssignedInput,
    Assignment,
    PollRequest,
    PollResponse,
    StatusUpdate,
    UpdateResult,
)
from strata_shared.domain.column_stats import ColumnStats
from strata_shared.domain.fields import FieldType
from strata_shared.domain.index_config import IndexSettings
from strata_shared.domain.jobs import JobStatus
from strata_shared.domain.scheduler_rules import SchedulerConfig, jobs_to_plan
from strata_shared.domain.split import RowGroupSpan, SplitMetadata, SplitState
from strata_shared.metastore.compaction_models import CompactionJobRow, CompactionWindowRow
from strata_shared.metastore.compaction_repository import CompactionRepository, PublishConflict
from strata_shared.metastore.leases import StaleToken
from strata_shared.metastore.models import IndexRow
from strata_shared.metastore.repositories import SplitRepository
from strata_shared.storage import ObjectStore
from strata_shared.web.state import AppState

log = logging.getLogger("strata.scheduler")


@dataclass(frozen=True, slots=True)
class Scheduler:
    config: SchedulerConfig

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.config.lease_secs)


def scheduler_of(state: AppState) -> Scheduler:
    s = state.settings
    return Scheduler(SchedulerConfig(lease_secs=s.compaction_lease_secs, max_failures=s.compaction_max_failures,
                                     queue_bound=s.compaction_queue_bound))


async def apply_update(state: AppState, update: StatusUpdate, now: datetime) -> UpdateResult:
    """One fenced worker write in its own transaction; a stale token changes nothing."""
    scheduler = scheduler_of(state)
    async with state.sessions() as session:
        repo = CompactionRepository(session)
        try:
            if update.status == "in_progress":
                job = await repo.refresh(update.job_id, update.fencing_token, now, scheduler.lease, update.stage,
                                         update.progress, update.spark_operation_tag)
                await session.commit()
                return UpdateResult(job_id=update.job_id, accepted=True, lease_expires_at=job.lease_expires_at)
            if update.status == "failure":
                await repo.fail(update.job_id, update.fencing_token, update.error or "worker reported a failure",
                                now, scheduler.config.max_failures)
                await session.commit()
                return UpdateResult(job_id=update.job_id, accepted=True)
            job = await repo.get(update.job_id)
            outputs = await _outputs_as_splits(session, state.storage, job, update) if job else []
            published = await repo.publish(update.job_id, update.fencing_token, outputs, now)
            await session.commit()
            metrics = state.extras.get("compaction_metrics")
            if metrics is not None:
                metrics.observe_success(published)
            return UpdateResult(job_id=update.job_id, accepted=True)
        except StaleToken as stale:
            await session.rollback()
            return UpdateResult(job_id=update.job_id, accepted=False, reason=str(stale))
        except PublishConflict as conflict:
            await session.rollback()
            reason = f"publish refused: {conflict}"
            log.warning("job %s: %s", update.job_id, reason)
    # The merge's result is unusable: record it as a failed attempt (a fresh transaction, still fenced).
    async with state.sessions() as session:
        try:
            await CompactionRepository(session).fail(update.job_id, update.fencing_token, reason, now,
                                                     scheduler.config.max_failures)
            await session.commit()
        except StaleToken:
            await session.rollback()
    return UpdateResult(job_id=update.job_id, accepted=False, reason=reason)


async def _outputs_as_splits(session: AsyncSession, storage: ObjectStore, job: CompactionJobRow,
                             update: StatusUpdate) -> list[SplitMetadata]:
    """Outputs as split rows, with lineage computed here from the job's inputs rather than trusted."""
    if job.fencing_token != update.fencing_token:
        return []
    input_ids = (await CompactionRepository(session).inputs_of([job.job_id])).get(job.job_id, [])
    inputs = (await SplitRepository(session).get_many(input_ids)).values()
    roots = sorted({r for s in inputs for r in (s.root_split_ids or [s.split_id])})
    num_merge_ops = max((s.num_merge_ops for s in inputs), default=0) + 1
    generation = max((s.generation for s in inputs), default=0) + 1
    prefix = merge_output_prefix(storage, job)
    splits = []
    for out in update.outputs:
        uri = storage.canonical_uri(out.uri)
        if not uri.startswith(prefix + "/"):
            raise PublishConflict(f"output {out.split_id} was written outside the job's staging prefix")
        if storage.size(uri) != out.size_bytes:
            raise PublishConflict(f"output {out.split_id} on storage does not have the reported size")
        splits.append(SplitMetadata(
            split_id=out.split_id, index_uid=job.index_uid, source_id=job.source_id, partition_id=job.partition_id,
            doc_mapping_uid=job.doc_mapping_uid, sort_schema=job.sort_schema, window_start=out.window_start,
            window_duration_secs=job.window_duration_secs, time_range_start=out.time_range_start,
            time_range_end=out.time_range_end, num_rows=out.num_rows, uri=uri, size_bytes=out.size_bytes,
            row_groups=[RowGroupSpan(**rg) for rg in out.row_groups],
            column_stats={name: ColumnStats.from_json(name, st) for name, st in out.column_stats.items()},
            num_merge_ops=num_merge_ops, generation=generation, root_split_ids=roots,
            parent_split_ids=sorted(input_ids), state=SplitState.STAGED,
        ))
    return splits


def merge_output_prefix(storage: ObjectStore, job: CompactionJobRow) -> str:
    """Where one attempt writes: specific to (job, token), so a stale attempt never overwrites a live one."""
    index_id, incarnation = job.index_uid.split(":", 1)
    return storage.uri_for(f"indexes/{index_id}/{incarnation}/merges/{job.job_id}/{job.fencing_token}")


async def poll(state: AppState, request: PollRequest, now: datetime) -> PollResponse:
    scheduler = scheduler_of(state)
    results = [await apply_update(state, update, now) for update in request.updates]
    async with state.sessions() as session:
        repo = CompactionRepository(session)
        await repo.expire_leases(now, scheduler.config.max_failures)
        counts = await repo.count_by_status()
        live = counts.get(JobStatus.UNASSIGNED, 0) + counts.get(JobStatus.IN_PROGRESS, 0)
        budget = jobs_to_plan(request.capacity, live, counts.get(JobStatus.UNASSIGNED, 0),
                              scheduler.config.queue_bound)
        if budget > 0:
            await plan_incrementally(session, now, budget)
        jobs = await repo.assign(request.worker_id, request.capacity, now, scheduler.lease)
        assignments = await build_assignments(session, state.storage, jobs, scheduler.config.lease_secs)
        await session.commit()
    return PollResponse(assignments=assignments, updates=results, lease_secs=scheduler.config.lease_secs)


async def plan_incrementally(session: AsyncSession, now: datetime, budget: int) -> int:
    """An incremental planner pass over the indexes with changed or newly closed windows, creating at most
    `budget` jobs; returns how many it created."""
    index_uids = (await session.execute(
        select(CompactionWindowRow.index_uid).distinct().where(
            (CompactionWindowRow.dirty) | (~CompactionWindowRow.final_planned)))).scalars().all()
    created = 0
    for index_uid in sorted(index_uids):
        index = await session.get(IndexRow, index_uid)
        if index is None or index.deleted_at is not None:
            continue
        outcome = await plan_index(session, index, now, window_range=WindowRange(), force_final=False,
                                   create_jobs=True, max_new_jobs=budget - created, incremental=True)
        created += len(outcome.created_job_ids)
        if created >= budget:
            break
    return created


async def build_assignments(session: AsyncSession, storage: ObjectStore, jobs: Sequence[CompactionJobRow],
                            lease_secs: float) -> list[Assignment]:
    if not jobs:
        return []
    inputs_by_job = await CompactionRepository(session).inputs_of([j.job_id for j in jobs])
    splits = await SplitRepository(session).get_many([s for ids in inputs_by_job.values() for s in ids])
    out = []
    for job in jobs:
        index = await session.get(IndexRow, job.index_uid)
        settings = IndexSettings.model_validate(index.config)
        tag = f"strata-merge-{job.job_id}-{job.fencing_token}"
        job.spark_operation_tag = tag
        out.append(Assignment(
            job_id=job.job_id, fencing_token=job.fencing_token, lease_expires_at=job.lease_expires_at,
            lease_secs=lease_secs, index_uid=job.index_uid, source_id=job.source_id, partition_id=job.partition_id,
            doc_mapping_uid=job.doc_mapping_uid, sort_schema=job.sort_schema, window_start=job.window_start,
            window_duration_secs=job.window_duration_secs, timestamp_field=settings.timestamp_field,
            timestamp_is_seconds=settings.field_types().get(settings.timestamp_field) is not FieldType.TIMESTAMP,
            target_split_num_rows=settings.merge_policy.target_split_num_rows,
            target_split_size_bytes=settings.merge_policy.target_split_size_bytes,
            parquet=settings.parquet, output_uri_prefix=merge_output_prefix(storage, job),
            spark_operation_tag=tag,
            inputs=[AssignedInput(split_id=s.split_id, uri=s.uri, num_rows=s.num_rows, size_bytes=s.size_bytes,
                                  num_merge_ops=s.num_merge_ops, generation=s.generation,
                                  root_split_ids=s.root_split_ids)
                    for s in (splits[i] for i in inputs_by_job.get(job.job_id, []))],
        ))
    await session.flush()
    return out
