"""All SQL of compaction planning, which works window by window: the per-window planning state (flagged when a
split lands or a job ends, cleared by a planner pass), the published splits a pass plans with, and the per-window
timeline.

The conditions that decide what a pass looks at are the domain's rules applied to column expressions
(`windows.is_window_closed`, `merge_policy.mature_when`, `merge_policy.before_compaction_start`), so the SQL and
the pure policy state each rule once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, Integer, and_, case, cast, exists, func, literal, or_, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.job_statuses import LIVE_STATUSES
from strata_core.domain.merge_policy import (
    MergePolicyParams,
    SplitCandidate,
    WindowRules,
    before_compaction_start,
    heads_per_group,
    level_starts,
    mature_when,
)
from strata_core.domain.split import CompactionScope, SplitState
from strata_core.domain.windows import VALID_WINDOW_DURATIONS_SECS, is_window_closed, window_expired
from strata_metastore.column_arrays import ColumnArrays
from strata_metastore.compaction_models import CompactionJobInputRow, CompactionJobRow, CompactionWindowRow
from strata_metastore.delete_models import DeleteSplitRow
from strata_metastore.models import IndexRow, SplitRow

# A split's creation time in whole epoch seconds, as the merge policy counts a split's age.
CREATED_AT_SECS = cast(func.floor(func.extract("epoch", SplitRow.created_at)), BigInteger)
_WINDOWS_INSERT = ColumnArrays(CompactionWindowRow.__table__,
                               ("index_uid", "window_duration_secs", "window_start", "dirty", "final_planned",
                                "changed_at"))
_CLAIMED = exists().where(and_(CompactionJobInputRow.split_id == SplitRow.split_id, CompactionJobInputRow.live))
# A split a delete covers is rewritten before it is merged again: a merge of it would publish the deleted rows
# mixed with rows the delete does not cover (DL-4). The planner takes it as claimed until its rewrite publishes.
_COVERED = exists().where(and_(DeleteSplitRow.split_id == SplitRow.split_id,
                               DeleteSplitRow.state.in_(("pending", "rewriting"))))
_UNAVAILABLE = or_(_CLAIMED, _COVERED)


def split_level_column(params: MergePolicyParams) -> Any:
    """`merge_policy.split_level` of a split row, as a sum of comparisons (`level_starts`: exact for a split below
    the target, as every candidate is)."""
    return sum((cast(SplitRow.num_rows >= start, Integer) for start in level_starts(params)), literal(0))


_CANDIDATE_COLUMNS = (SplitRow.split_id, SplitRow.source_id, SplitRow.partition_id, SplitRow.doc_mapping_uid,
                      SplitRow.sort_schema, SplitRow.window_duration_secs, SplitRow.window_start, SplitRow.num_rows,
                      SplitRow.size_bytes, SplitRow.num_merge_ops, CREATED_AT_SECS.label("created_at_secs"))


def _candidates(index_uid: str, rows: Iterable[Any]) -> list[SplitCandidate]:
    """Rows of `_CANDIDATE_COLUMNS` (and `claimed`, when selected) as the policy's candidates, one scope object
    per scope."""
    scopes: dict[tuple, CompactionScope] = {}
    candidates = []
    for r in rows:
        key = (r.source_id, r.partition_id, r.doc_mapping_uid, r.sort_schema, r.window_duration_secs)
        scope = scopes.get(key)
        if scope is None:
            scope = scopes[key] = CompactionScope(index_uid, *key)
        candidates.append(SplitCandidate(
            split_id=r.split_id, scope=scope, window_start=r.window_start, num_rows=r.num_rows,
            size_bytes=r.size_bytes, num_merge_ops=r.num_merge_ops, created_at_secs=r.created_at_secs,
            in_live_job=getattr(r, "claimed", False)))
    return candidates


def window_flag_rows(windows: set[tuple[str, int, int]], now: datetime) -> list[dict[str, Any]]:
    """The rows of `mark_changed`'s upsert, in key order (concurrent upserts lock the rows of several windows in
    one order)."""
    return [{"index_uid": i, "window_duration_secs": d, "window_start": w, "dirty": True,
             "final_planned": False, "changed_at": now} for i, d, w in sorted(windows)]


@dataclass(frozen=True, slots=True)
class WindowTotals:
    """One window of an index's timeline: its published splits (and their row counts), splits marked for
    deletion, live jobs over it, and its last successful merge."""

    window_duration_secs: int
    window_start: int
    splits: int
    rows: int
    bytes: int
    split_row_counts: list[int]
    marked_for_deletion: int
    live_jobs: int
    last_compacted_at: datetime | None
    dropped_at: datetime | None = None


class CompactionWindowRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    # --- planning state -------------------------------------------------------------------------------------

    async def mark_changed(self, windows: set[tuple[str, int, int]]) -> None:
        """Flag (index_uid, window_duration_secs, window_start) windows for the next incremental planner pass."""
        if not windows:
            return
        now = datetime.now(UTC)
        rows = window_flag_rows(windows, now)
        # A window that gains a split needs planning again, including a new final merge if it had one.
        stmt = _WINDOWS_INSERT.statement.on_conflict_do_update(
            index_elements=["index_uid", "window_duration_secs", "window_start"],
            set_={"dirty": True, "final_planned": False, "changed_at": now},
        )
        await self.session.execute(stmt, _WINDOWS_INSERT.params(rows))

    async def indexes_to_plan(self) -> list[IndexRow]:
        """Live indexes with a window flagged as changed or not yet given its final merge, by index_uid; an index
        whose compaction is paused is left for when it resumes (its windows keep their flags)."""
        w = CompactionWindowRow
        pending = select(w.index_uid).where(w.dirty | ~w.final_planned)
        return list((await self.session.execute(
            select(IndexRow).where(IndexRow.deleted_at.is_(None), IndexRow.compaction_paused_at.is_(None),
                                   IndexRow.index_uid.in_(pending))
            .order_by(IndexRow.index_uid))).scalars().all())

    async def changed(self, index_uid: str, rules: WindowRules, now_secs: int) -> list[tuple[int, int]]:
        """(duration, start) of the windows an incremental pass looks at: flagged as changed, or closed since
        their last final merge; never one before the index's compaction start (CS-3)."""
        w = CompactionWindowRow
        newly_closed = and_(~w.final_planned, is_window_closed(w.window_start, w.window_duration_secs,
                                                               rules.late_data_acceptance_secs, now_secs))
        rows = await self.session.execute(
            select(w.window_duration_secs, w.window_start)
            .where(w.index_uid == index_uid, ~before_compaction_start(w.window_start, rules),
                   or_(w.dirty, newly_closed))
            .order_by(w.window_duration_secs, w.window_start))
        return [(d, s) for d, s in rows.all()]

    async def mark_planned(self, index_uid: str, windows: Iterable[tuple[int, int, bool]], now: datetime) -> None:
        """Clear the flag of (duration, start, final) windows a pass planned, unless a split landed since `now`
        (it needs the next pass); `final` records that the window got its final merge."""
        w = CompactionWindowRow
        for duration, start, final in windows:
            await self.session.execute(
                update(w).where(w.index_uid == index_uid, w.window_duration_secs == duration,
                                w.window_start == start, w.changed_at <= now)
                .values(dirty=False, planned_at=now, final_planned=final))

    async def mark_compacted(self, index_uid: str, window_duration_secs: int, window_start: int,
                             now: datetime) -> None:
        w = CompactionWindowRow
        await self.session.execute(
            update(w).where(w.index_uid == index_uid, w.window_duration_secs == window_duration_secs,
                            w.window_start == window_start)
            .values(last_compacted_at=now))

    async def mark_compacted_many(self, windows: Collection[tuple[str, int, int]], now: datetime) -> None:
        """`mark_compacted` of several (index_uid, window_duration_secs, window_start) windows in one statement,
        their rows locked in key order (as `mark_changed` locks them)."""
        keys = sorted(set(windows))
        if len(keys) == 1:
            await self.mark_compacted(*keys[0], now)
            return
        if not keys:
            return
        w = CompactionWindowRow
        key = tuple_(w.index_uid, w.window_duration_secs, w.window_start)
        locked = (select(w.index_uid, w.window_duration_secs, w.window_start).where(key.in_(keys))
                  .order_by(w.index_uid, w.window_duration_secs, w.window_start).with_for_update())
        await self.session.execute(update(w).where(key.in_(locked)).values(last_compacted_at=now))

    # --- what a pass plans with -----------------------------------------------------------------------------

    async def candidates(self, index_uid: str, *, start_gte: int | None, start_lt: int | None,
                         windows: Sequence[tuple[int, int]] | None, params: MergePolicyParams,
                         rules: WindowRules, now_secs: int) -> tuple[list[SplitCandidate], int]:
        """Published, not yet mature splits (and whether a live job claims them) of a window range, or of listed
        (duration, start) windows; and how many mature splits the same selection holds (counted, not loaded: at
        a million splits most are mature, and loading them cost seconds)."""
        if windows is not None and not windows:
            return [], 0
        selection = [SplitRow.index_uid == index_uid, SplitRow.state == SplitState.PUBLISHED]
        if start_gte is not None:
            selection.append(SplitRow.window_start >= start_gte)
        if start_lt is not None:
            selection.append(SplitRow.window_start < start_lt)
        if windows is not None:
            selection.append(tuple_(SplitRow.window_duration_secs, SplitRow.window_start).in_(list(windows)))
        mature = mature_when(SplitRow.num_rows, SplitRow.size_bytes, now_secs - CREATED_AT_SECS, params)
        # Counted as the policy would skip them: only splits no earlier reason (CS-3, unsorted, claimed) takes.
        mature_count = await self.session.scalar(select(func.count()).select_from(SplitRow).where(
            *selection, mature, ~before_compaction_start(SplitRow.window_start, rules), SplitRow.sort_schema != "",
            ~_UNAVAILABLE))
        rows = await self.session.execute(select(*_CANDIDATE_COLUMNS, _UNAVAILABLE.label("claimed"))
                                          .where(*selection, ~mature))
        return _candidates(index_uid, rows.all()), int(mature_count or 0)

    async def candidate_heads(self, index_uid: str, windows: Sequence[tuple[int, int]], *,
                              params: MergePolicyParams, rules: WindowRules, now_secs: int,
                              operations: int) -> list[SplitCandidate]:
        """`merge_policy.group_heads` of the listed (duration, start) windows, in SQL: the splits the first
        `operations` merges of each group can take, ranked by the database, so a pass creating a few jobs in a
        window of thousands of splits receives a few dozen."""
        if not windows:
            return []
        closed = is_window_closed(SplitRow.window_start, SplitRow.window_duration_secs,
                                  rules.late_data_acceptance_secs, now_secs)
        # A closed window's final merges pack across levels, so its splits rank in one group (-1).
        level = case((closed, literal(-1)), else_=split_level_column(params))
        rank = func.row_number().over(
            partition_by=(SplitRow.source_id, SplitRow.partition_id, SplitRow.doc_mapping_uid, SplitRow.sort_schema,
                          SplitRow.window_duration_secs, SplitRow.window_start, level),
            # The policy's `_size_order`, split ids compared byte by byte as Python compares them.
            order_by=(SplitRow.num_rows, SplitRow.size_bytes, SplitRow.split_id.collate("C")))
        ranked = select(*_CANDIDATE_COLUMNS, rank.label("rank")).where(
            SplitRow.index_uid == index_uid, SplitRow.state == SplitState.PUBLISHED,
            tuple_(SplitRow.window_duration_secs, SplitRow.window_start).in_(list(windows)),
            # What `merge_policy._exclusion` skips, so only what the policy could merge is ranked.
            ~before_compaction_start(SplitRow.window_start, rules), SplitRow.sort_schema != "", ~_UNAVAILABLE,
            ~mature_when(SplitRow.num_rows, SplitRow.size_bytes, now_secs - CREATED_AT_SECS, params),
        ).subquery()
        rows = await self.session.execute(
            select(ranked).where(ranked.c.rank <= heads_per_group(params, operations)))
        return _candidates(index_uid, rows.all())

    # --- the timeline ---------------------------------------------------------------------------------------

    async def timeline(self, index_uid: str, *, start_gte: int | None, start_lt: int | None,
                       limit: int) -> list[WindowTotals]:
        """Per window, newest first: published and deleted-pending splits, live jobs, last compaction."""
        published = SplitRow.state == SplitState.PUBLISHED
        stmt = (
            select(SplitRow.window_duration_secs, SplitRow.window_start,
                   func.count().filter(published).label("splits"),
                   func.coalesce(func.sum(case((published, SplitRow.num_rows), else_=0)), 0).label("rows"),
                   func.coalesce(func.sum(case((published, SplitRow.size_bytes), else_=0)), 0).label("bytes"),
                   func.count().filter(SplitRow.state == SplitState.MARKED_FOR_DELETION).label("marked"),
                   func.array_agg(case((published, SplitRow.num_rows))).label("row_counts"))
            .where(SplitRow.index_uid == index_uid,
                   SplitRow.state.in_([SplitState.PUBLISHED, SplitState.MARKED_FOR_DELETION]))
            .group_by(SplitRow.window_duration_secs, SplitRow.window_start)
            .order_by(SplitRow.window_start.desc())
            .limit(limit)
        )
        if start_gte is not None:
            stmt = stmt.where(SplitRow.window_start >= start_gte)
        if start_lt is not None:
            stmt = stmt.where(SplitRow.window_start < start_lt)
        rows = (await self.session.execute(stmt)).all()
        job = CompactionJobRow
        jobs = {(d, s): n for d, s, n in (await self.session.execute(
            select(job.window_duration_secs, job.window_start, func.count())
            .where(job.index_uid == index_uid, job.status.in_(LIVE_STATUSES))
            .group_by(job.window_duration_secs, job.window_start))).all()}
        w = CompactionWindowRow
        compacted = {(d, s): (t, dropped) for d, s, t, dropped in (await self.session.execute(
            select(w.window_duration_secs, w.window_start, w.last_compacted_at, w.dropped_at)
            .where(w.index_uid == index_uid))).all()}
        return [WindowTotals(
            window_duration_secs=r.window_duration_secs, window_start=r.window_start, splits=r.splits,
            rows=int(r.rows), bytes=int(r.bytes), split_row_counts=[c for c in r.row_counts or [] if c is not None],
            marked_for_deletion=r.marked, live_jobs=jobs.get((r.window_duration_secs, r.window_start), 0),
            last_compacted_at=compacted.get((r.window_duration_secs, r.window_start), (None, None))[0],
            dropped_at=compacted.get((r.window_duration_secs, r.window_start), (None, None))[1],
        ) for r in rows]

    # --- retention ------------------------------------------------------------------------------------------

    async def expired_windows(self, index_uid: str, cutoff: int) -> list[tuple[int, int, int, int, int]]:
        """(duration, start, splits, rows, bytes) of every window holding published splits whose end is at or
        before `cutoff` (`windows.window_expired` as a column expression), oldest first."""
        return [tuple(row) for row in (await self.session.execute(
            select(SplitRow.window_duration_secs, SplitRow.window_start, func.count(),
                   func.coalesce(func.sum(SplitRow.num_rows), 0), func.coalesce(func.sum(SplitRow.size_bytes), 0))
            .where(SplitRow.index_uid == index_uid, SplitRow.state == SplitState.PUBLISHED,
                   window_expired(SplitRow.window_start, SplitRow.window_duration_secs, cutoff),
                   # Implied by the rule (no window is shorter), but on the indexed column alone: the index range
                   # then ends at the cutoff, instead of the pass reading every published split of the index to
                   # find, most of the time, none expired.
                   SplitRow.window_start <= cutoff - min(VALID_WINDOW_DURATIONS_SECS))
            .group_by(SplitRow.window_duration_secs, SplitRow.window_start)
            .order_by(SplitRow.window_start, SplitRow.window_duration_secs))).all()]

    async def live_jobs_by_window(self, index_uid: str) -> dict[tuple[int, int], list[str]]:
        job = CompactionJobRow
        live: dict[tuple[int, int], list[str]] = {}
        for duration, start, job_id in (await self.session.execute(
                select(job.window_duration_secs, job.window_start, job.job_id)
                .where(job.index_uid == index_uid, job.status.in_(LIVE_STATUSES))
                .order_by(job.job_id))).all():
            live.setdefault((duration, start), []).append(job_id)
        return live

    async def drop_window(self, index_uid: str, duration: int, start: int, cutoff: int,
                          now: datetime) -> list[tuple[int, int]]:
        """Marks the window's published splits for deletion and records the drop on its planning row (nothing
        published is left to plan); returns (rows, bytes) per split marked. The caller cancels the window's live
        jobs first, in the same transaction: a publishing worker locks its job, then its splits, in that order.
        The UPDATE reads under the split locks it takes, so a merge that published just before goes too."""
        marked = (await self.session.execute(
            update(SplitRow)
            .where(SplitRow.index_uid == index_uid, SplitRow.window_duration_secs == duration,
                   SplitRow.window_start == start, SplitRow.state == SplitState.PUBLISHED,
                   window_expired(SplitRow.window_start, SplitRow.window_duration_secs, cutoff))
            .values(state=SplitState.MARKED_FOR_DELETION, marked_for_deletion_at=now, updated_at=now)
            .returning(SplitRow.num_rows, SplitRow.size_bytes))).all()
        await self.session.execute(pg_insert(CompactionWindowRow).values(
            index_uid=index_uid, window_duration_secs=duration, window_start=start, dirty=False,
            final_planned=True, changed_at=now, dropped_at=now,
        ).on_conflict_do_update(index_elements=["index_uid", "window_duration_secs", "window_start"],
                                set_={"dirty": False, "final_planned": True, "dropped_at": now}))
        return [(rows, size) for rows, size in marked]
