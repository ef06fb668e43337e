"""Read models of compaction: job views and the per-window timeline summary."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.index_config import IndexSettings
from strata_core.domain.merge_policy import split_level
from strata_core.domain.windows import is_window_closed, retention_cutoff, window_expired
from strata_metastore.models import IndexRow
from strata_metastore.window_repository import CompactionWindowRepository
from strata_planner.compaction.debt_repository import DebtRepository
from strata_planner.compaction.planning import policy_params, window_rules
from strata_planner.compaction.schemas import WindowOut


async def window_summaries(session: AsyncSession, index: IndexRow, now: datetime, *, start_gte: int | None,
                           start_lt: int | None, limit: int) -> list[WindowOut]:
    settings = IndexSettings.model_validate(index.config)
    params = policy_params(settings)
    now_secs = int(now.timestamp())
    cutoff = None if settings.retention is None else retention_cutoff(now_secs, settings.retention.period_secs)
    out = []
    timeline = await CompactionWindowRepository(session).timeline(index.index_uid, start_gte=start_gte,
                                                                  start_lt=start_lt, limit=limit)
    debts = await DebtRepository(session).windows(
        index.index_uid, params, window_rules(settings), now,
        [(w.window_duration_secs, w.window_start) for w in timeline])
    for w in timeline:
        levels = Counter(str(split_level(count, params)) for count in w.split_row_counts)
        closed = is_window_closed(w.window_start, w.window_duration_secs, settings.late_data_acceptance_secs,
                                  now_secs)
        debt = debts.get((w.window_duration_secs, w.window_start))
        out.append(WindowOut(
            window_start=w.window_start, window_duration_secs=w.window_duration_secs, splits=w.splits, rows=w.rows,
            bytes=w.bytes, levels=dict(levels), live_jobs=w.live_jobs, marked_for_deletion=w.marked_for_deletion,
            closed=closed,
            last_compacted_at=w.last_compacted_at,
            expired=cutoff is not None and window_expired(w.window_start, w.window_duration_secs, cutoff),
            dropped_at=w.dropped_at,
            splits_waiting=0 if debt is None else debt.splits_waiting,
            bytes_waiting=0 if debt is None else debt.bytes_waiting,
            oldest_waiting_split_age_secs=None if debt is None or debt.oldest_waiting_created_at is None
            else max(0.0, (now - debt.oldest_waiting_created_at).total_seconds()),
            final=closed and (debt is None or not debt.mergeable),
        ))
    return out
