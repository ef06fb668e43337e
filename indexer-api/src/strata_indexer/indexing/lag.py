"""Indexing lag: per index, published files still without a published artifact snapshot, and how long the oldest
has waited (the API's /v1/indexing/lag and the lag gauges)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_indexer.indexing.schemas import IndexLag
from strata_shared.metastore.indexing_repository import IndexingRepository
from strata_shared.metastore.repositories import IndexRepository


async def lag_by_index(session: AsyncSession, now: datetime) -> list[IndexLag]:
    lags = await IndexingRepository(session).lag(now)
    indexes = IndexRepository(session)
    ids = {lag.index_uid: row.index_id for lag in lags if (row := await indexes.get(lag.index_uid)) is not None}
    return [IndexLag(index_id=ids.get(lag.index_uid, lag.index_uid), index_uid=lag.index_uid,
                     files_waiting=lag.files_waiting,
                     oldest_waiting_secs=None if lag.oldest_published_at is None
                     else max(0.0, (now - lag.oldest_published_at).total_seconds()))
            for lag in lags]
