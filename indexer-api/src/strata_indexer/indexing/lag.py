"""Indexing lag: per index, published files still without a published artifact snapshot, and how long the oldest
has waited (the API's /v1/indexing/lag and the lag gauges)."""

from __future__ import annotations

from datetime import datetime

from prometheus_client import Gauge
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_indexer.indexing.schemas import IndexLag
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.repositories import IndexRepository


async def lag_by_index(session: AsyncSession, now: datetime) -> list[IndexLag]:
    lags = await IndexingRepository(session).lag(now)
    indexes = IndexRepository(session)
    ids = {lag.index_uid: row.index_id for lag in lags if (row := await indexes.get(lag.index_uid)) is not None}
    return [IndexLag(index_id=ids.get(lag.index_uid, lag.index_uid), index_uid=lag.index_uid,
                     files_waiting=lag.files_waiting,
                     oldest_waiting_secs=None if lag.oldest_published_at is None
                     else max(0.0, (now - lag.oldest_published_at).total_seconds()))
            for lag in lags]


class IndexingMetrics:
    """Indexing debt per index: files waiting for their artifacts and the age of the oldest, from the lag
    (`lag_by_index`, the same measure as planner-api's GET /v1/indexes/{id}/debt). The `strata_indexing_lag_*`
    names are the same two values under the names dashboards and alerts used before the debt had its own; kept
    so those still work, not a second measure."""

    def __init__(self, registry) -> None:
        self.files = Gauge("strata_indexing_debt_files", "Published files without a published artifact snapshot",
                           ["index_id"], registry=registry)
        self.oldest = Gauge("strata_indexing_debt_oldest_seconds",
                            "Age of the oldest published file without a published artifact snapshot",
                            ["index_id"], registry=registry)
        self.lag_files = Gauge("strata_indexing_lag_files", "Same as strata_indexing_debt_files (older name)",
                               ["index_id"], registry=registry)
        self.lag_oldest = Gauge("strata_indexing_lag_oldest_seconds",
                                "Same as strata_indexing_debt_oldest_seconds (older name)", ["index_id"],
                                registry=registry)

    async def refresh(self, sessions: async_sessionmaker[AsyncSession], now: datetime) -> None:
        async with sessions() as session:
            lags = await lag_by_index(session, now)
        for files, oldest in ((self.files, self.oldest), (self.lag_files, self.lag_oldest)):
            files.clear()
            oldest.clear()
            for lag in lags:
                files.labels(lag.index_id).set(lag.files_waiting)
                oldest.labels(lag.index_id).set(lag.oldest_waiting_secs or 0.0)
