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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.clock import Clock
from strata_core.domain.index_config import IndexSettings
from strata_core.domain.windows import retention_cutoff
from strata_core.observability.tracing import traced
from strata_frame.maintenance.skips import PLANNING_FAULTS, MaintenancePass, PassRecorder, maintenance_pass
from strata_metastore.compaction_repository import CompactionRepository
from strata_metastore.models import IndexRow
from strata_metastore.repositories import IndexRepository
from strata_metastore.window_repository import CompactionWindowRepository

log = logging.getLogger("strata.retention")


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


@dataclass(slots=True)
class Retention:
    """Dropping windows, with what it works on. `observe` sees every drop that removed something (planner-api's
    metrics, when its background work runs)."""

    sessions: async_sessionmaker[AsyncSession]
    passes: PassRecorder
    clock: Clock
    observe: Callable[[str, RetentionOutcome], None] | None = None

    @traced("retention_drop")
    async def drop_windows(self, index: IndexRow, cutoff: int, now: datetime, *, dry_run: bool) -> RetentionOutcome:
        """Drop (or, dry run, list) every window of the index whose end is at or before `cutoff`."""
        async with self.sessions() as session:
            windows = CompactionWindowRepository(session)
            expired = await windows.expired_windows(index.index_uid, cutoff)
            if dry_run:
                live = await windows.live_jobs_by_window(index.index_uid)
                return RetentionOutcome(index.index_id, cutoff, True, [
                    DroppedWindow(s, d, n, int(r), int(b), live.get((d, s), [])) for d, s, n, r, b in expired])
        dropped = []
        for duration, start, *_ in expired:
            window = await self._drop_window(index.index_uid, duration, start, cutoff, now)
            if window.splits:
                dropped.append(window)
        outcome = RetentionOutcome(index.index_id, cutoff, False, dropped)
        if dropped:
            log.info("retention: dropped %d windows (%d splits, %d bytes) of %s ending at or before %d",
                     len(dropped), outcome.splits, outcome.bytes, index.index_id, cutoff)
            if self.observe is not None:
                self.observe(index.index_id, outcome)
        return outcome

    async def _drop_window(self, index_uid: str, duration: int, start: int, cutoff: int,
                           now: datetime) -> DroppedWindow:
        async with self.sessions() as session:
            # Jobs before splits: a publishing worker locks its job, then the job's splits, in that order.
            cancelled = await CompactionRepository(session).cancel_window_jobs(index_uid, duration, start, now)
            marked = await CompactionWindowRepository(session).drop_window(index_uid, duration, start, cutoff, now)
            await session.commit()
        return DroppedWindow(start, duration, len(marked), sum(r for r, _ in marked), sum(b for _, b in marked),
                             cancelled)


class RetentionSchedule:
    """The periodic pass: every tick, each live index with retention configured whose own interval has passed
    since its last pass (in this process) is applied. The tick runs in one replica at a time (a pass lease,
    `web/singleton.py`); when it moves to another replica, that one's first tick applies every index again,
    earlier than its interval: what it drops is past the retention period all the same."""

    def __init__(self, retention: Retention) -> None:
        self.retention = retention
        self.last_run: dict[str, float] = {}

    async def tick(self) -> list[RetentionOutcome]:
        """Apply every due index; an index whose retention cannot be applied (its stored config no longer
        validates, say) is skipped and recorded, never a reason to leave the others' windows in place."""
        now = self.retention.clock()
        async with self.retention.sessions() as session:
            indexes = await IndexRepository(session).list_live(limit=100_000, after_index_id=None)
        out = []
        # Every live index is looked at each tick, so a record of one not met again (deleted, fixed) is cleared.
        async with maintenance_pass(self.retention.passes, MaintenancePass.RETENTION, now,
                                    faults=PLANNING_FAULTS) as skips:
            for index in indexes:
                async with skips.entry(index.index_id, index.index_uid):
                    outcome = await self._apply_if_due(index, now)
                    if outcome is not None:
                        out.append(outcome)
        return out

    async def _apply_if_due(self, index: IndexRow, now: datetime) -> RetentionOutcome | None:
        now_secs = int(now.timestamp())
        retention = IndexSettings.model_validate(index.config).retention
        if retention is None:
            return None
        last = self.last_run.get(index.index_uid)
        if last is not None and now_secs - last < retention.interval_secs:
            return None
        self.last_run[index.index_uid] = now_secs
        return await self.retention.drop_windows(index, retention_cutoff(now_secs, retention.period_secs), now,
                                                 dry_run=False)
