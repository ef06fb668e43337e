"""Retention: whole windows dropped once their end is older than the index's retention period (a window-level
operation, never a row-level one), by a periodic pass, on demand (`POST .../retention/apply`) or by an operator
naming a time (`DELETE .../windows?older_than=`).

A window goes in one transaction of its own: its live compaction jobs are cancelled first (claims released, a
worker's next write refused, so no merge of it publishes afterwards), then its published splits are marked for
deletion, then its planning row records `dropped_at`. The files stay readable for the garbage collector's grace
period, so a query planned before the drop finishes on them; the collector then deletes files and rows, and the
artifact rows go with the split rows (their objects are the janitor's to remove).

A window is dropped only when its end is at or before the cutoff: by TW-1 every row of it is older than its end,
so no row newer than the period is ever dropped, and a window straddling the cutoff stays whole.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from strata_shared.domain.index_config import IndexSettings
from strata_shared.domain.jobs import LIVE_STATUSES
from strata_shared.domain.split import SplitState
from strata_shared.metastore.compaction_models import CompactionJobRow, CompactionWindowRow
from strata_shared.metastore.compaction_repository import CompactionRepository
from strata_shared.metastore.models import IndexRow, SplitRow
from strata_shared.metastore.repositories import IndexRepository
from strata_shared.observability.tracing import traced
from strata_shared.web.state import AppState

log = logging.getLogger("strata.retention")


def retention_cutoff(now_secs: int, period_secs: int) -> int:
    """Windows ending at or before this are expired."""
    return now_secs - period_secs


def window_expired(window_start: int, window_duration_secs: int, cutoff: int) -> bool:
    """The one retention rule: a window goes when its end is at or before the cutoff (all its rows are older,
    TW-1); a window straddling the cutoff stays."""
    return window_start + window_duration_secs <= cutoff


@dataclass(slots=True)
class DroppedWindow:
    window_start: int
    window_duration_secs: int
    splits: int
    rows: int
    bytes: int
    cancelled_job_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class RetentionOutcome:
    index_id: str
    cutoff: int
    dry_run: bool
    windows: list[DroppedWindow]

    @property
    def splits(self) -> int:
        return sum(w.splits for w in self.windows)

    @property
    def rows(self) -> int:
        return sum(w.rows for w in self.windows)

    @property
    def bytes(self) -> int:
        return sum(w.bytes for w in self.windows)


# The rule above as a column expression, so SQL and Python state it once.
_EXPIRED = SplitRow.window_start + SplitRow.window_duration_secs


@traced("retention_drop")
async def drop_windows(state: AppState, index: IndexRow, cutoff: int, now: datetime, *,
                       dry_run: bool) -> RetentionOutcome:
    """Drop (or, dry run, list) every window of the index whose end is at or before `cutoff`."""
    async with state.sessions() as session:
        expired = (await session.execute(
            select(SplitRow.window_duration_secs, SplitRow.window_start, func.count(),
                   func.coalesce(func.sum(SplitRow.num_rows), 0), func.coalesce(func.sum(SplitRow.size_bytes), 0))
            .where(SplitRow.index_uid == index.index_uid, SplitRow.state == SplitState.PUBLISHED,
                   _EXPIRED <= cutoff)
            .group_by(SplitRow.window_duration_secs, SplitRow.window_start)
            .order_by(SplitRow.window_start, SplitRow.window_duration_secs))).all()
        if dry_run:
            job = CompactionJobRow
            live = {}
            for d, s, job_id in (await session.execute(
                    select(job.window_duration_secs, job.window_start, job.job_id)
                    .where(job.index_uid == index.index_uid, job.status.in_(LIVE_STATUSES))
                    .order_by(job.job_id))).all():
                live.setdefault((d, s), []).append(job_id)
            return RetentionOutcome(index.index_id, cutoff, True, [
                DroppedWindow(s, d, n, int(r), int(b), live.get((d, s), [])) for d, s, n, r, b in expired])
    dropped = []
    for duration, start, *_ in expired:
        window = await _drop_window(state, index.index_uid, duration, start, cutoff, now)
        if window.splits:
            dropped.append(window)
    outcome = RetentionOutcome(index.index_id, cutoff, False, dropped)
    if dropped:
        log.info("retention: dropped %d windows (%d splits, %d bytes) of %s ending at or before %d",
                 len(dropped), outcome.splits, outcome.bytes, index.index_id, cutoff)
        if state.parts is not None:
            state.parts.observe_retention(index.index_id, outcome)
    return outcome


async def _drop_window(state: AppState, index_uid: str, duration: int, start: int, cutoff: int,
                       now: datetime) -> DroppedWindow:
    async with state.sessions() as session:
        # Jobs before splits: a publishing worker locks its job, then the job's splits, in that order.
        cancelled = await CompactionRepository(session).cancel_window_jobs(index_uid, duration, start, now)
        # Read under the split locks the UPDATE takes: a merge that published just before is dropped with the rest.
        marked = (await session.execute(
            update(SplitRow)
            .where(SplitRow.index_uid == index_uid, SplitRow.window_duration_secs == duration,
                   SplitRow.window_start == start, SplitRow.state == SplitState.PUBLISHED, _EXPIRED <= cutoff)
            .values(state=SplitState.MARKED_FOR_DELETION, marked_for_deletion_at=now, updated_at=now)
            .returning(SplitRow.num_rows, SplitRow.size_bytes))).all()
        # The window needs no more planning: nothing published is left in it.
        await session.execute(pg_insert(CompactionWindowRow).values(
            index_uid=index_uid, window_duration_secs=duration, window_start=start, dirty=False,
            final_planned=True, changed_at=now, dropped_at=now,
        ).on_conflict_do_update(index_elements=["index_uid", "window_duration_secs", "window_start"],
                                set_={"dirty": False, "final_planned": True, "dropped_at": now}))
        await session.commit()
    return DroppedWindow(start, duration, len(marked), sum(r for r, _ in marked), sum(b for _, b in marked),
                         cancelled)


class RetentionSchedule:
    """The periodic pass: every tick, each live index with retention configured whose own interval has passed
    since its last pass (in this process) is applied. Two planner processes may both apply an index; a second
    pass finds nothing left to drop."""

    def __init__(self, state: AppState) -> None:
        self.state = state
        self.last_run: dict[str, float] = {}

    async def tick(self) -> list[RetentionOutcome]:
        now = self.state.clock()
        now_secs = int(now.timestamp())
        async with self.state.sessions() as session:
            indexes = await IndexRepository(session).list_live(limit=100_000, after_index_id=None)
        out = []
        for index in indexes:
            retention = IndexSettings.model_validate(index.config).retention
            if retention is None:
                continue
            last = self.last_run.get(index.index_uid)
            if last is not None and now_secs - last < retention.interval_secs:
                continue
            self.last_run[index.index_uid] = now_secs
            out.append(await drop_windows(self.state, index, retention_cutoff(now_secs, retention.period_secs),
                                          now, dry_run=False))
        return out
