"""Indexing lag: per index, published files still without a published artifact snapshot, and how long the oldest
has waited (the API's /v1/indexing/lag and the lag gauges)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_indexer.indexing.schemas import IndexLag
from strata_shared.metastore.indexing_repository import IndexingRepository
from strata_shared.metastore.models import IndexRow


async def lag_by_index(session: AsyncSession, now: datetime) -> list[IndexLag]:
    lags = await IndexingRepository(session).lag(now)
    ids = {row.index_uid: row.index_id for row in await _indexes(session, [lag.index_uid for lag in lags])}
    return [IndexLag(index_id=ids.get(lag.index_uid, lag.index_uid), index_uid=lag.index_uid,
                     files_waiting=lag.files_waiting,
                     oldest_waiting_secs=None if lag.oldest_published_at is None
                     else max(0.0, (now - lag.oldest_published_at).total_seconds()))
            for lag in lags]


async def _indexes(session: AsyncSession, index_uids: list[str]) -> list[IndexRow]:
    return [row for uid in index_uids if (row := await session.get(IndexRow, uid)) is not None]
