"""All SQL of compaction and indexing debt: what the merge policy would still merge (by level, by window, closed
windows not yet final), the queues' live jobs, recent merges and first-merge delays, and the sampled history the
console charts.

"Waiting" is the merge policy's own selection, its rules applied to column expressions as the planner's
repository does (`merge_policy.mature_when`, `before_compaction_start`, `windows.is_window_closed`): a published,
sorted split, not mature, in a window not before the compaction start (CS-3), and still owed a merge (a closed
window's split its final packing leaves alone is not). A split a live job has claimed is still waiting: it is
debt until the merge publishes. Every read is an aggregate; no split row is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, func, literal, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.job_statuses import JobStatus
from strata_core.domain.merge_policy import (
    MergePolicyParams,
    WindowRules,
    before_compaction_start,
    mature_when,
)
from strata_core.domain.split import SplitState
from strata_core.domain.windows import is_window_closed, window_end
from strata_metastore.compaction_models import CompactionDebtSampleRow, CompactionJobInputRow, CompactionJobRow
from strata_metastore.indexing_models import IndexingJobRow
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.models import SplitRow
from strata_metastore.repositories import SplitRepository
from strata_metastore.window_repository import CREATED_AT_SECS, split_level_column

# The merge rate is over the last minute; first-merge delays over the last ten minutes, which the garbage
# collector's default grace (600 s) keeps the merged inputs' rows for.
MERGE_RATE_SECS = 60
FIRST_MERGE_SECS = 600


@dataclass(frozen=True, slots=True)
class LevelDebt:
    splits: int
    bytes: int


@dataclass(frozen=True, slots=True)
class FirstMergeDelays:
    """Seconds from a split's creation to the merge that first consumed it."""

    p50: float | None
    p90: float | None
    max: float | None
    count: int


@dataclass(frozen=True, slots=True)
class CompactionDebt:
    published_splits: int
    levels: dict[int, LevelDebt]
    oldest_waiting_created_at: datetime | None
    closed_windows_not_final: int
    # When the oldest closed window still holding a merge closed (its end plus the late-data window), epoch secs.
    oldest_closed_window_not_final_at: int | None
    jobs_unassigned: int
    jobs_in_progress: int
    merges_last_minute: int
    rows_merged_last_minute: int
    first_merge_delays: FirstMergeDelays

    @property
    def splits_waiting(self) -> int:
        return sum(level.splits for level in self.levels.values())

    @property
    def bytes_waiting(self) -> int:
        return sum(level.bytes for level in self.levels.values())


@dataclass(frozen=True, slots=True)
class WindowDebt:
    splits_waiting: int
    bytes_waiting: int
    oldest_waiting_created_at: datetime | None
    # Some compaction scope of the window holds two waiting splits that fit together within the target size: a
    # merge is still due (CS-1 keeps scopes apart, so two tenants' single splits in one window are not).
    mergeable: bool


@dataclass(frozen=True, slots=True)
class IndexingDebt:
    files_waiting: int
    oldest_published_at: datetime | None
    jobs_in_progress: int


@dataclass(frozen=True, slots=True)
class DebtSample:
    sampled_at: datetime
    splits_waiting: int
    bytes_waiting: int
    closed_windows_not_final: int
    oldest_waiting_split_age_secs: float | None
    indexing_files_waiting: int


def _waiting(index_uid: str, params: MergePolicyParams, rules: WindowRules, now_secs: int):
    """The published splits the merge policy would still merge, with their level and compaction scope."""
    s = SplitRow
    level = split_level_column(params)
    return (
        select(s.split_id, s.source_id, s.partition_id, s.doc_mapping_uid, s.sort_schema, s.window_duration_secs,
               s.window_start, s.num_rows, s.size_bytes, s.created_at, level.label("level"))
        .where(s.index_uid == index_uid, s.state == SplitState.PUBLISHED,
               # The age part of maturity as a range the partial index on (index_uid, created_at) answers: an
               # integer age below the period is a creation at or after this second. Implied by the next line.
               s.created_at >= datetime.fromtimestamp(now_secs - params.maturation_period_secs + 1, UTC),
               ~mature_when(s.num_rows, s.size_bytes, now_secs - CREATED_AT_SECS, params),
               ~before_compaction_start(s.window_start, rules), s.sort_schema != "")
        .subquery("waiting"))


def _by_scope_and_window(waiting, params: MergePolicyParams):
    """Waiting splits per compaction scope and window, and whether a merge is still due there. A closed window's
    final merge packs its splits smallest first (`merge_policy._plan_final`): it merges something exactly when two
    neighbours in that order fit together within the target size, so two splits that cannot (each over half the
    target) leave the window final, as the policy does."""
    w = waiting.c
    scope = (w.source_id, w.partition_id, w.doc_mapping_uid, w.sort_schema, w.window_duration_secs, w.window_start)
    order = (w.num_rows, w.size_bytes, w.split_id)
    paired = select(
        *scope, w.size_bytes, w.created_at,
        (w.num_rows + func.lead(w.num_rows).over(partition_by=scope, order_by=order)).label("pair_rows"),
        (w.size_bytes + func.lead(w.size_bytes).over(partition_by=scope, order_by=order)).label("pair_bytes"),
    ).subquery("paired")
    p = paired.c
    fits = func.coalesce((p.pair_rows <= params.target_split_num_rows)
                         & (p.pair_bytes <= params.target_split_size_bytes), False)
    return (select(p.source_id, p.partition_id, p.doc_mapping_uid, p.sort_schema, p.window_duration_secs,
                   p.window_start, func.count().label("splits"), func.sum(p.size_bytes).label("bytes"),
                   func.min(p.created_at).label("oldest"), func.bool_or(fits).label("mergeable"))
            .group_by(p.source_id, p.partition_id, p.doc_mapping_uid, p.sort_schema, p.window_duration_secs,
                      p.window_start))


def _closed(waiting, rules: WindowRules, now_secs: int):
    return select(waiting).where(is_window_closed(
        waiting.c.window_start, waiting.c.window_duration_secs, rules.late_data_acceptance_secs,
        now_secs)).subquery("closed_waiting")


def _owed(waiting, params: MergePolicyParams, rules: WindowRules, now_secs: int):
    """The waiting splits a merge is still owed to: all of an open window's; of a closed window, those of a scope
    whose final packing still merges something. The split a final window keeps alone (or two too large to pair)
    will never be merged again, so it is no debt, though it stays below maturity for a long while (48 h by
    default): counted, it would make a healthy index's debt grow with every window that closes."""
    final = _by_scope_and_window(_closed(waiting, rules, now_secs), params).subquery("scope_windows")
    f, w = final.c, waiting.c
    done = (select(literal(1)).where(
        ~f.mergeable, f.source_id == w.source_id, f.partition_id == w.partition_id,
        f.doc_mapping_uid == w.doc_mapping_uid, f.sort_schema == w.sort_schema,
        f.window_duration_secs == w.window_duration_secs, f.window_start == w.window_start).exists())
    return select(waiting).where(~done).subquery("owed")


class DebtRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def compaction(self, index_uid: str, params: MergePolicyParams, rules: WindowRules,
                         now: datetime) -> CompactionDebt:
        now_secs = int(now.timestamp())
        waiting = _waiting(index_uid, params, rules, now_secs)
        owed = _owed(waiting, params, rules, now_secs)
        levels, oldest = {}, None
        for level, splits, size, first in (await self.session.execute(
                select(owed.c.level, func.count(), func.sum(owed.c.size_bytes), func.min(owed.c.created_at))
                .group_by(owed.c.level).order_by(owed.c.level))).all():
            levels[int(level)] = LevelDebt(splits=splits, bytes=int(size))
            oldest = first if oldest is None else min(oldest, first)

        scoped = _by_scope_and_window(_closed(waiting, rules, now_secs), params).subquery()
        mergeable = select(scoped).where(scoped.c.mergeable).subquery()
        windows = select(mergeable.c.window_duration_secs, mergeable.c.window_start).distinct().subquery()
        closed, first_end = (await self.session.execute(select(
            func.count(), func.min(window_end(windows.c.window_start, windows.c.window_duration_secs))))).one()

        job = CompactionJobRow
        live = dict((await self.session.execute(
            select(job.status, func.count()).where(job.index_uid == index_uid,
                                                   job.status.in_([JobStatus.UNASSIGNED, JobStatus.IN_PROGRESS]))
            .group_by(job.status))).all())
        recent = [job.index_uid == index_uid, job.status == JobStatus.SUCCESS]
        merges, rows = (await self.session.execute(
            select(func.count(), func.coalesce(func.sum(job.input_rows), 0))
            .where(*recent, job.finished_at >= now - timedelta(seconds=MERGE_RATE_SECS)))).one()
        # Inputs never merged before (num_merge_ops 0) were ingested: from their creation to the merge's end.
        delay = func.extract("epoch", job.finished_at - SplitRow.created_at)
        delays = select(delay.label("secs")).join(
            CompactionJobInputRow, CompactionJobInputRow.job_id == job.job_id).join(
            SplitRow, SplitRow.split_id == CompactionJobInputRow.split_id).where(
            *recent, job.finished_at >= now - timedelta(seconds=FIRST_MERGE_SECS),
            SplitRow.num_merge_ops == 0).subquery()
        p50, p90, longest, count = (await self.session.execute(select(
            func.percentile_cont(0.5).within_group(delays.c.secs),
            func.percentile_cont(0.9).within_group(delays.c.secs),
            func.max(delays.c.secs), func.count()))).one()

        totals = await SplitRepository(self.session).published_totals(index_uid, None)
        return CompactionDebt(
            published_splits=totals.files, levels=levels, oldest_waiting_created_at=oldest,
            closed_windows_not_final=closed,
            oldest_closed_window_not_final_at=None if first_end is None
            else int(first_end) + rules.late_data_acceptance_secs,
            jobs_unassigned=live.get(JobStatus.UNASSIGNED, 0), jobs_in_progress=live.get(JobStatus.IN_PROGRESS, 0),
            merges_last_minute=merges, rows_merged_last_minute=int(rows),
            first_merge_delays=FirstMergeDelays(
                p50=None if p50 is None else float(p50), p90=None if p90 is None else float(p90),
                max=None if longest is None else float(longest), count=count))

    async def windows(self, index_uid: str, params: MergePolicyParams, rules: WindowRules, now: datetime,
                      windows: list[tuple[int, int]]) -> dict[tuple[int, int], WindowDebt]:
        """The debt of listed (duration, start) windows; a window with nothing waiting is absent."""
        if not windows:
            return {}
        now_secs = int(now.timestamp())
        waiting = _owed(_waiting(index_uid, params, rules, now_secs), params, rules, now_secs)
        listed = select(waiting).where(
            tuple_(waiting.c.window_duration_secs, waiting.c.window_start).in_(windows)).subquery("listed")
        scoped = _by_scope_and_window(listed, params).subquery()
        rows = (await self.session.execute(
            select(scoped.c.window_duration_secs, scoped.c.window_start, func.sum(scoped.c.splits),
                   func.sum(scoped.c.bytes), func.min(scoped.c.oldest), func.bool_or(scoped.c.mergeable))
            .group_by(scoped.c.window_duration_secs, scoped.c.window_start))).all()
        return {(d, s): WindowDebt(splits_waiting=int(n), bytes_waiting=int(b), oldest_waiting_created_at=oldest,
                                   mergeable=bool(mergeable))
                for d, s, n, b, oldest, mergeable in rows}

    async def indexing(self, index_uid: str, now: datetime) -> IndexingDebt:
        """Files waiting for their artifacts (the indexing lag, one mechanism for both APIs) and builds running."""
        lag = await IndexingRepository(self.session).lag(now, index_uid)
        running = await self.session.scalar(select(func.count()).select_from(IndexingJobRow).where(
            IndexingJobRow.index_uid == index_uid, IndexingJobRow.status == JobStatus.IN_PROGRESS))
        return IndexingDebt(files_waiting=lag[0].files_waiting if lag else 0,
                            oldest_published_at=lag[0].oldest_published_at if lag else None,
                            jobs_in_progress=int(running or 0))

    # --- sampled history ------------------------------------------------------------------------------------

    async def record_sample(self, index_uid: str, sample: DebtSample) -> bool:
        """Keep one sample per (index, sampled_at); a replica arriving second for the same bucket writes nothing.
        Returns whether this one was kept."""
        result = await self.session.execute(pg_insert(CompactionDebtSampleRow).values(
            index_uid=index_uid, sampled_at=sample.sampled_at, splits_waiting=sample.splits_waiting,
            bytes_waiting=sample.bytes_waiting, closed_windows_not_final=sample.closed_windows_not_final,
            oldest_waiting_split_age_secs=sample.oldest_waiting_split_age_secs,
            indexing_files_waiting=sample.indexing_files_waiting,
        ).on_conflict_do_nothing(index_elements=["index_uid", "sampled_at"]))
        return result.rowcount == 1

    async def trim_samples(self, before: datetime) -> int:
        result = await self.session.execute(
            delete(CompactionDebtSampleRow).where(CompactionDebtSampleRow.sampled_at < before))
        return result.rowcount

    async def samples(self, index_uid: str, since: datetime) -> list[DebtSample]:
        """Oldest first."""
        r = CompactionDebtSampleRow
        return [DebtSample(sampled_at=row.sampled_at, splits_waiting=row.splits_waiting,
                           bytes_waiting=row.bytes_waiting, closed_windows_not_final=row.closed_windows_not_final,
                           oldest_waiting_split_age_secs=row.oldest_waiting_split_age_secs,
                           indexing_files_waiting=row.indexing_files_waiting)
                for row in (await self.session.execute(
                    select(r).where(r.index_uid == index_uid, r.sampled_at >= since)
                    .order_by(r.sampled_at))).scalars()]
