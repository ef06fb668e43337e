"""Compaction and indexing debt of an index: how far compaction (and artifact builds) are behind the writes, for
the API, the metrics and the sampled history behind the console's chart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.domain.index_config import IndexSettings
from strata_metastore.models import IndexRow
from strata_metastore.repositories import IndexRepository
from strata_planner.compaction.debt_repository import MERGE_RATE_SECS, DebtRepository, DebtSample
from strata_planner.compaction.planning import policy_params, window_rules
from strata_planner.compaction.schemas import (
    CompactionDebtOut,
    DebtOut,
    DebtSampleOut,
    FirstMergeDelayOut,
    IndexingDebtOut,
    LevelDebtOut,
)

# One sample per index and bucket, by the replica holding the debt samples pass; an hour kept.
SAMPLE_SECS = 10
HISTORY_KEPT = timedelta(hours=1)


def _age(now: datetime, then: datetime | None) -> float | None:
    return None if then is None else max(0.0, (now - then).total_seconds())


async def index_debt(session: AsyncSession, index: IndexRow, now: datetime) -> DebtOut:
    settings = IndexSettings.model_validate(index.config)
    repo = DebtRepository(session)
    c = await repo.compaction(index.index_uid, policy_params(settings), window_rules(settings), now)
    indexing = await repo.indexing(index.index_uid, now)
    delays = c.first_merge_delays
    return DebtOut(
        index_id=index.index_id, measured_at=now, published_splits=c.published_splits,
        compaction=CompactionDebtOut(
            splits_waiting=c.splits_waiting, bytes_waiting=c.bytes_waiting,
            levels={str(level): LevelDebtOut(splits=d.splits, bytes=d.bytes) for level, d in c.levels.items()},
            oldest_waiting_split_age_secs=_age(now, c.oldest_waiting_created_at),
            closed_windows_not_final=c.closed_windows_not_final,
            oldest_closed_window_not_final_age_secs=None if c.oldest_closed_window_not_final_at is None
            else max(0.0, now.timestamp() - c.oldest_closed_window_not_final_at),
            jobs_unassigned=c.jobs_unassigned, jobs_in_progress=c.jobs_in_progress,
            merges_per_sec=c.merges_last_minute / MERGE_RATE_SECS,
            rows_merged_per_sec=c.rows_merged_last_minute / MERGE_RATE_SECS,
            first_merge_delay_secs=FirstMergeDelayOut(p50=delays.p50, p90=delays.p90, max=delays.max,
                                                      count=delays.count)),
        indexing=IndexingDebtOut(files_waiting=indexing.files_waiting,
                                 oldest_waiting_secs=_age(now, indexing.oldest_published_at),
                                 jobs_in_progress=indexing.jobs_in_progress))


def sample_bucket(now: datetime) -> datetime:
    """The start of the sampling interval holding `now`: every replica sampling in it names the same row."""
    secs = int(now.timestamp())
    return datetime.fromtimestamp(secs - secs % SAMPLE_SECS, UTC)


async def measure_debts(sessions: async_sessionmaker[AsyncSession], now: datetime) -> list[DebtOut]:
    """The debt of every live index (reads only: every replica's metrics refresh runs it)."""
    return [debt for _, debt in await _debt_by_index(sessions, now)]


async def sample_debts(sessions: async_sessionmaker[AsyncSession], now: datetime) -> list[DebtOut]:
    """The debt of every live index kept as the sample of the current bucket, and samples older than the kept
    history deleted. A pass run once across the replicas (`web/singleton.py`); the bucket key still keeps one
    sample should two runs meet in one bucket (a holder that stalled past its lease)."""
    measured = await _debt_by_index(sessions, now)
    for index, debt in measured:
        # One transaction per index: an index deleted meanwhile loses only its own sample.
        async with sessions() as session:
            await DebtRepository(session).record_sample(index.index_uid, DebtSample(
                sampled_at=sample_bucket(now), splits_waiting=debt.compaction.splits_waiting,
                bytes_waiting=debt.compaction.bytes_waiting,
                closed_windows_not_final=debt.compaction.closed_windows_not_final,
                oldest_waiting_split_age_secs=debt.compaction.oldest_waiting_split_age_secs,
                indexing_files_waiting=debt.indexing.files_waiting))
            await session.commit()
    async with sessions() as session:
        await DebtRepository(session).trim_samples(now - HISTORY_KEPT)
        await session.commit()
    return [debt for _, debt in measured]


async def _debt_by_index(sessions: async_sessionmaker[AsyncSession], now: datetime) -> list[tuple[IndexRow, DebtOut]]:
    """Every live index and its debt, one transaction per index."""
    out: list[tuple[IndexRow, DebtOut]] = []
    after = None
    while True:
        async with sessions() as session:
            page = list(await IndexRepository(session).list_live(limit=500, after_index_id=after))
        for index in page:
            async with sessions() as session:
                out.append((index, await index_debt(session, index, now)))
        if len(page) < 500:
            return out
        after = page[-1].index_id


async def debt_history(session: AsyncSession, index: IndexRow, now: datetime, minutes: int) -> list[DebtSampleOut]:
    return [DebtSampleOut(sampled_at=s.sampled_at, splits_waiting=s.splits_waiting, bytes_waiting=s.bytes_waiting,
                          closed_windows_not_final=s.closed_windows_not_final,
                          oldest_waiting_split_age_secs=s.oldest_waiting_split_age_secs,
                          indexing_files_waiting=s.indexing_files_waiting)
            for s in await DebtRepository(session).samples(index.index_uid, now - timedelta(minutes=minutes))]
