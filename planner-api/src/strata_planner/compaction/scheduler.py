"""Compaction as a configuration of the shared job-queue scheduler: a success publishes the merge (outputs
replace inputs in one transaction), housekeeping plans new jobs in proportion to the reported capacity, and
jobs are handed out in the repository's priority order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.config import CompactionSettings
from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import IndexSettings
from strata_core.domain.index_uid import split_index_uid
from strata_core.domain.job_statuses import JobStatus
from strata_core.domain.scheduler_rules import COMPACTION_ASSIGNMENT_ORDER, InProgressLimits, jobs_to_plan
from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState
from strata_core.query.predicate_json import predicate_to_json
from strata_core.storage import ObjectStore
from strata_core.storage_layout import merge_attempt_dir
from strata_frame.jobqueue.service import QueueSpec
from strata_frame.maintenance.skips import PLANNING_FAULTS, MaintenancePass, PassRecorder, PassSkips, maintenance_pass
from strata_metastore.compaction_models import CompactionJobRow
from strata_metastore.compaction_repository import REWRITE_KIND, CompactionRepository
from strata_metastore.delete_repository import DeleteRepository
from strata_metastore.models import IndexRow
from strata_metastore.publish_splits import PublishConflict
from strata_metastore.repositories import IndexRepository, SplitRepository
from strata_metastore.window_repository import CompactionWindowRepository
from strata_planner.compaction.lineage import Lineage, lineage_of
from strata_planner.compaction.planning import WindowRange, plan_index
from strata_planner.compaction.publish import PublishedMerge, ReportedMerge, publish_merge, publish_merges
from strata_planner.compaction.schemas import AssignedInput, Assignment, StatusUpdate


def compaction_queue(storage: ObjectStore, settings: CompactionSettings, passes: PassRecorder,
                     after_publish: Callable[[PublishedMerge], None] | None = None,
                     ) -> QueueSpec[StatusUpdate, Assignment]:
    """The queue of one app: `after_publish` sees every merge published (planner-api's metrics, when its
    background work runs)."""

    async def publish(session: AsyncSession, update: StatusUpdate, now: datetime, _prepared: None = None) -> object:
        repo = CompactionRepository(session)
        job = await repo.get(update.job_id)
        outputs = await _outputs_as_splits(session, storage, job, update) if job else []
        return await publish_merge(session, update.job_id, update.fencing_token, outputs, now,
                                   unchanged=update.unchanged)

    async def publish_batch(session: AsyncSession, updates: Sequence[StatusUpdate], now: datetime,
                            _prepared: dict[str, object]) -> dict[str, object]:
        # A rewrite's "unchanged" goes one at a time (`publish_merge`), as every job the batch leaves out.
        return await publish_merges(session, [_reported(storage, u) for u in updates if not u.unchanged], now)

    async def lock_splits(session: AsyncSession, jobs: Sequence[CompactionJobRow]) -> None:
        # Every success's inputs locked before any merge is published, in `publish_merge`'s order (the indexes'
        # delete locks, then the inputs by split id): a merge published after another (a rewrite after the
        # batch, or any merge without it) locked its inputs after the earlier one's outputs had taken their
        # index's plan generation and totals, out of the order every other transaction takes them in.
        await DeleteRepository(session).lock_indexes_shared({job.index_uid for job in jobs})
        await SplitRepository(session).lock_rows_in_order([s for job in jobs for s in job.input_split_ids])

    limits = InProgressLimits(per_tenant=settings.max_in_progress_per_tenant,
                              per_index=settings.max_in_progress_per_index)

    async def plan_new_jobs(session: AsyncSession, capacity: int, now: datetime) -> None:
        repo = CompactionRepository(session)
        counts = await repo.count_by_status()
        live = counts.get(JobStatus.UNASSIGNED, 0) + counts.get(JobStatus.IN_PROGRESS, 0)
        # Waiting jobs a worker could take now: a paused index's or a capped tenant's backlog plans no less.
        waiting = await repo.queue.assignable(COMPACTION_ASSIGNMENT_ORDER, capacity * settings.plan_ahead,
                                              limits)
        # Several polls' worth of jobs per pass, and a pass only when they run out: a pass ranks every waiting
        # split of its windows in PostgreSQL (only the heads come back), too much to pay per merge.
        budget = jobs_to_plan(capacity, live, waiting, settings.queue_bound, settings.plan_ahead)
        if budget > 0:
            # Deletes first: they have a deadline, and a covered split is kept out of merges until rewritten.
            budget -= await plan_rewrites(session, now, budget)
        if budget > 0:
            # Only the indexes this pass plans are looked at: a record of another stays until it is planned.
            async with maintenance_pass(passes, MaintenancePass.COMPACTION_PLANNING, now, faults=PLANNING_FAULTS,
                                        covers_everything=False) as skips:
                await plan_incrementally(session, now, budget, skips=skips)

    async def assign(session: AsyncSession, worker_id: str, capacity: int, now: datetime, lease) -> Sequence:
        return await CompactionRepository(session).assign(worker_id, capacity, now, lease, limits)

    async def describe(session: AsyncSession, jobs: Sequence[CompactionJobRow]) -> list[Assignment]:
        return await build_assignments(session, storage, jobs, settings.lease_secs)

    return QueueSpec(name="compaction", lease_secs=settings.lease_secs, max_failures=settings.max_failures,
                     queue_of=lambda session: CompactionRepository(session).queue, publish=publish,
                     housekeeping=plan_new_jobs, assign=assign, describe=describe,
                     after_publish=after_publish, publish_batch=publish_batch, lock_splits=lock_splits)


async def plan_rewrites(session: AsyncSession, now: datetime, budget: int) -> int:
    """Rewrite jobs for covered splits no live job holds, oldest delete first; how many were created. Excluded
    merges holding covered splits are cancelled first, or the delete would wait on them forever."""
    repo = CompactionRepository(session)
    deletes = DeleteRepository(session)
    await repo.supersede_excluded(now)
    await deletes.settle_gone(now)
    created = 0
    for claim in await deletes.claimable(budget):
        if await repo.create_rewrite_job(claim, now) is not None:
            created += 1
    return created


async def cancel_job(session: AsyncSession, job_id: str, now: datetime) -> CompactionJobRow | None:
    """An operator's cancel: the job's inputs are released and its worker's next write is refused."""
    return await CompactionRepository(session).cancel(job_id, now)


async def _outputs_as_splits(session: AsyncSession, storage: ObjectStore, job: CompactionJobRow,
                             update: StatusUpdate) -> list[SplitMetadata]:
    """Outputs as split rows, with lineage computed here from the job's inputs rather than trusted."""
    if job.fencing_token != update.fencing_token:
        return []
    input_ids = sorted(job.input_split_ids)
    # Lineage only: no column statistics needed.
    inputs = (await SplitRepository(session).get_many(input_ids, stats_columns=set())).values()
    uris = _checked_output_uris(storage, job, update)
    return _output_splits(job, update, uris, lineage_of(inputs, rewrite=job.kind == REWRITE_KIND))


def _reported(storage: ObjectStore, update: StatusUpdate) -> ReportedMerge:
    """A success for `publish_merges`: its outputs checked on storage and turned into split rows as
    `_outputs_as_splits` does."""
    checked: list[str] = []

    def check(job: CompactionJobRow) -> None:
        checked[:] = _checked_output_uris(storage, job, update)

    return ReportedMerge(update.job_id, update.fencing_token, check=check,
                         outputs=lambda job, lineage: _output_splits(job, update, checked, lineage))


def _checked_output_uris(storage: ObjectStore, job: CompactionJobRow, update: StatusUpdate) -> list[str]:
    """The outputs' canonical URIs, each written under the job's staging prefix with the size reported;
    PublishConflict otherwise."""
    prefix = merge_output_prefix(storage, job)
    uris = []
    for out in update.outputs:
        uri = storage.canonical_uri(out.uri)
        if not uri.startswith(prefix + "/"):
            raise PublishConflict(f"output {out.split_id} was written outside the job's staging prefix")
        if storage.size(uri) != out.size_bytes:
            raise PublishConflict(f"output {out.split_id} on storage does not have the reported size")
        uris.append(uri)
    return uris


def _output_splits(job: CompactionJobRow, update: StatusUpdate, uris: Sequence[str],
                   lineage: Lineage) -> list[SplitMetadata]:
    input_ids = sorted(job.input_split_ids)
    return [
        SplitMetadata(
            split_id=out.split_id, index_uid=job.index_uid, source_id=job.source_id, partition_id=job.partition_id,
            doc_mapping_uid=job.doc_mapping_uid, sort_schema=job.sort_schema, window_start=out.window_start,
            window_duration_secs=job.window_duration_secs, time_range_start=out.time_range_start,
            time_range_end=out.time_range_end, num_rows=out.num_rows, uri=uri, size_bytes=out.size_bytes,
            row_groups=[RowGroupSpan(**rg.model_dump()) for rg in out.row_groups],
            column_stats={name: ColumnStats.from_json(name, st.model_dump()) for name, st in out.column_stats.items()},
            num_merge_ops=lineage.num_merge_ops, generation=lineage.generation,
            root_split_ids=lineage.root_split_ids,
            parent_split_ids=input_ids, state=SplitState.STAGED,
        )
        for out, uri in zip(update.outputs, uris, strict=True)
    ]


def merge_output_prefix(storage: ObjectStore, job: CompactionJobRow) -> str:
    """Where one attempt writes: specific to (job, token), so a stale attempt never overwrites a live one."""
    index_id, incarnation = split_index_uid(job.index_uid)
    return storage.uri_for(merge_attempt_dir(index_id, incarnation, job.job_id, job.fencing_token))


async def plan_incrementally(session: AsyncSession, now: datetime, budget: int, *,
                             skips: PassSkips | None = None) -> int:
    """An incremental planner pass over the indexes with changed or newly closed windows, creating at most
    `budget` jobs; returns how many it created. Each index gets an equal share of the budget, so one index's
    backlog (which could fill every pass) never keeps the others' windows, their final merges included, from
    being planned; what an index leaves of its share goes to those after it. With `skips`, an index whose
    planning raises (its config or its splits) is skipped and recorded, its writes undone, and the others are
    planned; without, the error propagates."""
    indexes = await CompactionWindowRepository(session).indexes_to_plan()
    created = 0
    for position, index in enumerate(indexes):
        share = max(1, (budget - created) // (len(indexes) - position))
        if skips is None:
            created += await _plan_one(session, index, now, share)
        else:
            async with skips.entry(index.index_id, index.index_uid), session.begin_nested():
                created += await _plan_one(session, index, now, share)
        if created >= budget:
            break
    return created


async def _plan_one(session: AsyncSession, index: IndexRow, now: datetime, max_new_jobs: int) -> int:
    outcome = await plan_index(session, index, now, window_range=WindowRange(), force_final=False,
                               create_jobs=True, max_new_jobs=max_new_jobs, incremental=True)
    return len(outcome.created_job_ids)


async def build_assignments(session: AsyncSession, storage: ObjectStore, jobs: Sequence[CompactionJobRow],
                            lease_secs: float) -> list[Assignment]:
    if not jobs:
        return []
    inputs_by_job = {job.job_id: sorted(job.input_split_ids) for job in jobs}
    splits = await SplitRepository(session).get_many([s for ids in inputs_by_job.values() for s in ids],
                                                     stats_columns=set())
    indexes = IndexRepository(session)
    deletes = DeleteRepository(session)
    out = []
    for job in jobs:
        rewrite = await deletes.rewrite_of_job(job.job_id) if job.kind == REWRITE_KIND else None
        index = await indexes.get(job.index_uid)
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
            kind=job.kind, delete_id=None if rewrite is None else rewrite.delete_id,
            delete_predicate=None if rewrite is None else predicate_to_json(rewrite.predicate),
        ))
    await session.flush()
    return out
