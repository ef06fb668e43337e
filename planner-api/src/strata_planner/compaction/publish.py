"""A merge's or a rewrite's success, published: one transaction's worth of work. Outputs published (checked
against the inputs they replace, `strata_metastore.publish_splits`), inputs marked for deletion, lineage recorded,
job succeeded; or nothing at all (StaleToken, PublishConflict). The repositories write the rows; this use case
decides what is written and in which order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.split import SplitMetadata, SplitState
from strata_metastore.compaction_models import CompactionJobRow
from strata_metastore.compaction_repository import REWRITE_KIND, CompactionRepository
from strata_metastore.delete_repository import DeleteRepository
from strata_metastore.models import SplitRow
from strata_metastore.publish_splits import PublishConflict, Replacing, publish_splits
from strata_metastore.repositories import SplitRepository
from strata_metastore.window_repository import CompactionWindowRepository


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
