"""A merge's or a rewrite's success, published: one transaction's worth of work. Outputs published (checked
against the inputs they replace, `strata_metastore.publish_splits`), inputs marked for deletion, lineage recorded,
job succeeded; or nothing at all (StaleToken, PublishConflict). The repositories write the rows; this use case
decides what is written and in which order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.split import SplitMetadata, SplitState
from strata_metastore.compaction_models import CompactionJobRow
from strata_metastore.compaction_repository import REWRITE_KIND, CompactionRepository
from strata_metastore.delete_repository import DeleteRepository
from strata_metastore.models import SplitRow
from strata_metastore.publish_splits import PublishConflict, Replacing, check_replacement, publish_splits
from strata_metastore.repositories import SplitRepository
from strata_metastore.window_repository import CompactionWindowRepository
from strata_planner.compaction.lineage import Lineage, lineage_of


@dataclass(frozen=True, slots=True)
class PublishedMerge:
    job: CompactionJobRow
    # Creation times of the inputs this merge is the first to consume (ingested, never merged): the debt's
    # delay from publication to first merge, observed once the publish commits.
    first_merged_created_at: list[datetime]
    # The deletes accepted after this merge was planned that cover one of its inputs: the merge was cancelled
    # instead of published, so its output cannot bring their rows back (DL-4).
    superseded_by: tuple[str, ...] = ()
    # A rewrite that left its input as it was (its delete matched no row there): nothing merged or written.
    unchanged: bool = False


async def publish_merge(session: AsyncSession, job_id: str, token: int, outputs: Sequence[SplitMetadata],
                        now: datetime, *, unchanged: bool = False) -> PublishedMerge:
    """The job's outputs replace its inputs, or nothing is written (StaleToken, PublishConflict). `unchanged`: a
    rewrite whose delete matched no row of its input, which stays published as it is (`_publish_unchanged`)."""
    repo = CompactionRepository(session)
    job = await repo.queue.fenced(job_id, token)
    deletes = DeleteRepository(session)
    await deletes.lock_index(job.index_uid, exclusive=False)
    splits = SplitRepository(session)
    input_ids = sorted(job.input_split_ids)
    inputs = await splits.lock_in_order(input_ids)
    not_published = [s.split_id for s in inputs if s.state is not SplitState.PUBLISHED]
    if len(inputs) != len(input_ids) or not_published:
        raise PublishConflict(f"inputs no longer published: {', '.join(not_published) or 'missing rows'}")
    rewrite = job.kind == REWRITE_KIND
    if unchanged:
        return await _publish_unchanged(session, repo, job, inputs, outputs, now)
    if not rewrite and (covering := await deletes.covered_among(input_ids)):
        return await _supersede(session, repo, job, covering, now)

    await publish_splits(session, list(outputs), replacing=Replacing(
        job.index_uid, job.window_start, sum(s.num_rows for s in inputs), rewrite))
    await splits.mark_for_deletion(input_ids, now)
    if rewrite:
        await deletes.publish_rewrite(job, inputs[0], outputs, now)
    repo.queue.succeed(job, now, stage="published")
    job.output_split_ids = [o.split_id for o in outputs]
    job.output_bytes = sum(o.size_bytes for o in outputs)
    await repo.release(job.job_id)
    await CompactionWindowRepository(session).mark_compacted(job.index_uid, job.window_duration_secs,
                                                             job.window_start, now)
    await session.flush()
    return PublishedMerge(job, [s.created_at for s in inputs if s.num_merge_ops == 0])


@dataclass(frozen=True, slots=True)
class ReportedMerge:
    """A merge's success as a worker reported it, for `publish_merges`."""
    job_id: str
    token: int
    # Its outputs as they are on storage, checked against the job (PublishConflict: written elsewhere, or not
    # what was reported); called before the inputs are locked.
    check: Callable[[CompactionJobRow], None]
    # Its outputs as split rows, with the lineage of the job's inputs as the catalog has them.
    outputs: Callable[[CompactionJobRow, Lineage], list[SplitMetadata]]


async def publish_merges(session: AsyncSession, reported: Sequence[ReportedMerge],
                         now: datetime) -> dict[str, PublishedMerge]:
    """Several merges published at once, `publish_merge`'s writes as one statement per kind for all of them: the
    jobs fenced, the indexes' delete locks, every input locked, the covering deletes read, every output and its
    statistics inserted with what follows a publication, every input marked, the jobs succeeded, their claims
    released, their windows marked compacted. The locks are taken in `publish_merge`'s order (jobs, indexes,
    inputs by split id, then what the statements' triggers take), each kind sorted.

    Only plain merges whose every check passes are published here; for any other job nothing is written and it
    is left out of the answer (a stale token, a rewrite, an input no longer published or covered by a delete, an
    output failing its checks or MC-1/TW-3): `publish_merge`, one at a time, refuses, supersedes or publishes it
    as it always has. Returns the published merges by job id."""
    repo = CompactionRepository(session)
    jobs = await repo.queue.fenced_many({r.job_id: r.token for r in reported})
    candidates = []
    for merge in reported:
        job = jobs.get(merge.job_id)
        if job is None or job.kind == REWRITE_KIND:
            continue
        try:
            merge.check(job)
        except PublishConflict:
            continue
        candidates.append((merge, job))
    if not candidates:
        return {}
    deletes = DeleteRepository(session)
    await deletes.lock_indexes_shared({job.index_uid for _, job in candidates})
    splits = SplitRepository(session)
    all_inputs = [s for _, job in candidates for s in job.input_split_ids]
    rows = await splits.lock_rows_in_order(all_inputs)
    covered = await deletes.covered_splits(all_inputs)
    ready = []
    for merge, job in candidates:
        input_ids = sorted(job.input_split_ids)
        inputs = [rows.get(split_id) for split_id in input_ids]
        if any(row is None or row.state != SplitState.PUBLISHED for row in inputs) or covered.intersection(input_ids):
            continue
        try:
            outputs = merge.outputs(job, lineage_of(inputs, rewrite=False))
            check_replacement(Replacing(job.index_uid, job.window_start, sum(row.num_rows for row in inputs),
                                        False), outputs)
        except PublishConflict:
            continue
        ready.append((job, inputs, outputs))
    if not ready:
        return {}

    await publish_splits(session, [o for _, _, outputs in ready for o in outputs])
    await splits.mark_for_deletion(sorted(row.split_id for _, inputs, _ in ready for row in inputs), now)
    for job, _, outputs in ready:
        repo.queue.succeed(job, now, stage="published")
        job.output_split_ids = [o.split_id for o in outputs]
        job.output_bytes = sum(o.size_bytes for o in outputs)
    await repo.release_many([job.job_id for job, _, _ in ready])
    await CompactionWindowRepository(session).mark_compacted_many(
        {(job.index_uid, job.window_duration_secs, job.window_start) for job, _, _ in ready}, now)
    await session.flush()
    return {job.job_id: PublishedMerge(job, [row.created_at for row in inputs if row.num_merge_ops == 0])
            for job, inputs, _ in ready}


async def _publish_unchanged(session: AsyncSession, repo: CompactionRepository, job: CompactionJobRow,
                             inputs: Sequence[SplitRow], outputs: Sequence[SplitMetadata],
                             now: datetime) -> PublishedMerge:
    """The rewrite's delete matched no row of the split: its coverage there is closed and the split stays
    published as it is (nothing replaced, no artifact rebuilt, nothing for the garbage collector); deletes
    accepted since the job was created stay in force on it. The window did not change: nothing to plan."""
    if job.kind != REWRITE_KIND:
        raise PublishConflict(f"job {job.job_id} is a merge: only a rewrite can leave its input unchanged")
    if outputs:
        raise PublishConflict(f"job {job.job_id} reported its input unchanged and {len(outputs)} outputs")
    await DeleteRepository(session).publish_unchanged(job, inputs[0], now)
    repo.queue.succeed(job, now, stage="unchanged")
    job.output_split_ids, job.output_bytes = [], 0
    await repo.release(job.job_id)
    await session.flush()
    return PublishedMerge(job, [], unchanged=True)


async def _supersede(session: AsyncSession, repo: CompactionRepository, job: CompactionJobRow,
                     covering: list[str], now: datetime) -> PublishedMerge:
    """A delete accepted after this merge was planned covers one of its inputs: publishing would bring the
    deleted rows back (they are in the merged output, which the delete does not cover). The merge is
    cancelled, its claims released so the rewrite can take the inputs, and its window planned again."""
    repo.queue.cancel(job, now, stage="superseded_by_delete")
    await repo.release(job.job_id)
    await CompactionWindowRepository(session).mark_changed(
        {(job.index_uid, job.window_duration_secs, job.window_start)})
    await session.flush()
    return PublishedMerge(job, [], tuple(covering))
