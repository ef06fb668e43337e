"""The reads behind query-api's kept plans: what a plan was built from (the index incarnation, its settings
version and its plan generation, which the triggers of migration 0006 raise with every change of its published
splits or artifact snapshots), and the earliest start of a plan's files.

Plain functions over a session, or over `SingleReads` for the check before reusing a plan: one autocommit
statement on a kept asyncpg connection, without the BEGIN and ROLLBACK a session would add around it."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from strata_metastore.single_reads import SingleReads

IndexState = tuple[str, int, int]  # (index_uid, version, generation)

_STATE = """
    SELECT i.index_uid, i.version, coalesce(g.generation, 0)
      FROM indexes i LEFT JOIN plan_generations g ON g.index_uid = i.index_uid
     WHERE {key}"""
_BY_UID = text(_STATE.format(key="i.index_uid = :key"))
# asyncpg's own parameter style, for the check before a reuse (one statement on a kept connection).
_LIVE_BY_ID = _STATE.format(key="i.index_id = $1 AND i.deleted_at IS NULL")
_EARLIEST_START = text("SELECT min(time_range_start), count(time_range_start) = count(*) FROM splits "
                       "WHERE split_id = ANY(:split_ids)")


async def index_state(db: AsyncConnection | AsyncSession, index_uid: str) -> IndexState | None:
    """The (uid, settings version, plan generation) of the incarnation `index_uid`; None when there is none."""
    row = (await db.execute(_BY_UID, {"key": index_uid})).first()
    return None if row is None else (row[0], int(row[1]), int(row[2]))


async def live_index_state(reads: SingleReads, index_id: str) -> IndexState | None:
    """The same of the live index named `index_id`: what a kept plan is checked against before each reuse."""
    row = await reads.fetchrow(_LIVE_BY_ID, index_id)
    return None if row is None else (row[0], int(row[1]), int(row[2]))


async def earliest_start(db: AsyncConnection | AsyncSession, split_ids: Sequence[str]) -> tuple[int | None, bool]:
    """The earliest time-range start among the splits, and whether every one of them has a time range."""
    earliest, all_timed = (await db.execute(_EARLIEST_START, {"split_ids": list(split_ids)})).one()
    return earliest, bool(all_timed)
