"""`plain_writes`: ingestion's stage and publish on plain asyncpg connections. They write what the session path
writes (rows, window flags, one indexing job per published file, one commit-log entry per transaction, in the
bucket), a writer killed at any step of a commit leaves bucket and database agreeing once the ship pass has run, a
connection PostgreSQL dropped while idle is replaced unseen, and a conflict with a concurrent transaction is the
session path's 503, its transaction rolled back."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from sqlalchemy import text

from strata_core.domain.split import SplitState
from strata_core.storage import ObjectStore
from strata_metastore import migrate
from strata_metastore.commit_log import STEPS, SimulatedCrash, crash_at
from strata_metastore.commit_log_passes import ship_pending
from strata_metastore.commit_log_replay import list_log
from strata_metastore.conflicts import TransactionConflict
from strata_metastore.engine import create_engine, session_factory
from strata_metastore.plain_writes import PlainStatement, PlainWrites
from strata_metastore.publish_splits import (
    AFTER_PUBLISH,
    publish_staged,
    publish_staged_plain,
    stage_splits,
    stage_splits_plain,
)
from strata_metastore.rebuild import rebuild
from strata_metastore.repositories import SplitRepository
from strata_metastore.single_reads import SingleReads
from strata_metastore.verify import verify
from tests.metastore.test_split_insert import WINDOW, _split

APP = "strata-test-plain-writes"


@pytest.fixture
def databases(pg_databases):
    async def create() -> str:
        def migrated() -> str:
            url = pg_databases.create("strata_plain_writes")
            migrate.upgrade(url)
            return url
        return await asyncio.to_thread(migrated)
    return create


@pytest.fixture
async def stack(databases, tmp_path):
    url = await databases()
    engine = create_engine(url, pool_size=2)
    storage = ObjectStore(f"file://{tmp_path}/bucket")
    sessions = session_factory(engine, storage)
    reads = SingleReads(url, APP)
    try:
        async with sessions() as session:
            for uid in ("ses:1", "pln:1"):
                await session.execute(text(
                    "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
                    "VALUES (:u, :i, 'x', '{}', 'd', 1)"), {"u": uid, "i": uid.split(":")[0]})
            await session.commit()
        yield url, storage, sessions, PlainWrites(reads, sessions.kw["commit_log"])
    finally:
        reads.close()
        await engine.dispose()


def _splits(storage: ObjectStore, index_uid: str, first: int, count: int = 3):
    out = []
    for n in range(first, first + count):
        split = _split(n, SplitState.STAGED, index_uid=index_uid)
        split.split_id = f"{index_uid[:3].upper()}{n:023d}"
        split.root_split_ids = [split.split_id]
        split.uri = storage.uri_for(f"data/{split.split_id}.parquet")
        storage.write_bytes(split.uri, b"PAR1")
        out.append(split)
    return out


async def _rows(sessions, index_uid: str) -> dict[str, list]:
    """What a publish leaves of an index, without the ids and times that differ between two runs."""
    async with sessions() as session:
        splits = (await session.execute(text(
            "SELECT state::text, window_start, num_rows, size_bytes, row_groups::text, published_at = updated_at "
            "FROM splits WHERE index_uid = :u ORDER BY split_id"), {"u": index_uid})).all()
        stats = (await session.execute(text(
            "SELECT column_name, value_type::text, min_string, max_string, min_i64, max_i64, min_u64, max_u64, "
            "min_f64, max_f64, null_count, regex FROM split_column_stats c JOIN splits s USING (split_id) "
            "WHERE s.index_uid = :u ORDER BY s.split_id, column_name"), {"u": index_uid})).all()
        windows = (await session.execute(text(
            "SELECT window_duration_secs, window_start, dirty, final_planned FROM compaction_windows "
            "WHERE index_uid = :u ORDER BY window_start"), {"u": index_uid})).all()
        jobs = (await session.execute(text(
            "SELECT partition_id, reason, status::text, failures, failure_log::text, skipped::text, "
            "created_at = updated_at FROM indexing_jobs WHERE index_uid = :u ORDER BY split_id"),
            {"u": index_uid})).all()
    return {"splits": [tuple(r) for r in splits], "stats": [tuple(r) for r in stats],
            "windows": [tuple(r) for r in windows], "jobs": [tuple(r) for r in jobs]}


async def _plain_stage_and_publish(writes: PlainWrites, splits) -> int:
    async with writes.transaction() as transaction:
        await stage_splits_plain(transaction, splits)
        await transaction.commit()
    async with writes.transaction() as transaction:
        moved = await publish_staged_plain(transaction, [s.split_id for s in splits])
        await transaction.commit()
    return moved


async def _dump(sessions) -> dict[str, list[str]]:
    async with sessions() as session:
        return {t: [r for (r,) in await session.execute(text(f"SELECT to_jsonb(t)::text FROM {t} t ORDER BY 1"))]
                for t in ("indexes", "splits", "split_column_stats")}


async def test_a_plain_stage_and_publish_write_what_the_session_path_writes(stack, databases):
    _url, storage, sessions, writes = stack
    entries_before = len(list_log(storage).entries)
    by_session = _splits(storage, "ses:1", 0)
    async with sessions() as session:
        await stage_splits(session, by_session)
        await session.commit()
    async with sessions() as session:
        assert await publish_staged(session, [s.split_id for s in by_session]) == 3
        await session.commit()
    plain = _splits(storage, "pln:1", 0)
    assert await _plain_stage_and_publish(writes, plain) == 3

    assert await _rows(sessions, "pln:1") == await _rows(sessions, "ses:1")
    assert (await _rows(sessions, "pln:1"))["windows"] == [(900, WINDOW, True, False), (900, WINDOW + 900, True, False)]
    async with sessions() as session:
        read = await SplitRepository(session).get_many([s.split_id for s in plain])
    for split in plain:
        split.state = SplitState.PUBLISHED
    assert [read[s.split_id] for s in plain] == plain
    # Two transactions each, each one entry in the bucket as it committed (nothing left for the ship pass).
    assert len(list_log(storage).entries) == entries_before + 4
    assert not await ship_pending(sessions, storage, grace=timedelta(0))
    report = await verify(sessions, storage)
    assert report.agrees, report.as_json()
    engine = create_engine(await databases(), pool_size=1)
    try:
        rebuilt = session_factory(engine, storage)
        await rebuild(rebuilt, storage, datetime.now(UTC))
        assert await _dump(rebuilt) == await _dump(sessions)
    finally:
        await engine.dispose()


@pytest.mark.parametrize("step", STEPS)
async def test_a_plain_writer_killed_at_any_step_leaves_bucket_and_database_agreeing(stack, step):
    _url, storage, sessions, writes = stack
    splits = _splits(storage, "pln:1", 0)
    async with writes.transaction() as transaction:
        await stage_splits_plain(transaction, splits)
        await transaction.commit()
    with crash_at(step), pytest.raises(SimulatedCrash):
        async with writes.transaction() as transaction:
            await publish_staged_plain(transaction, [s.split_id for s in splits])
            await transaction.commit()
    committed = STEPS.index(step) >= STEPS.index("before-ship")
    states = {json.loads(r)["state"] for r in (await _dump(sessions))["splits"]}
    assert states == {"published" if committed else "staged"}
    shipped = await ship_pending(sessions, storage, grace=timedelta(0))
    assert bool(shipped) == (step == "before-ship")
    report = await verify(sessions, storage)
    assert report.agrees, report.as_json()
    # The crashed transaction's connection was closed, not kept: the next one runs on a sound connection.
    assert await _plain_stage_and_publish(writes, _splits(storage, "pln:1", 10)) == 3


@pytest.mark.parametrize("step", [*STEPS, None])
async def test_a_stage_shipped_with_the_work_that_follows_it_keeps_the_protocol(stack, step):
    """Ingestion's stage: `commit_unshipped`, then the entry and the upload on one worker thread
    (`Shipment.ship(then=...)`). The entry is in the bucket before the work that follows it runs, and a writer killed
    at any step leaves bucket and database agreeing, as `commit` does."""
    _url, storage, sessions, writes = stack
    splits = _splits(storage, "pln:1", 0)
    before = len(list_log(storage).entries)
    entries_seen: list[int] = []

    def upload() -> str:
        entries_seen.append(len(list_log(storage).entries))
        return "uploaded"

    async def stage() -> str | None:
        async with writes.transaction() as transaction:
            await stage_splits_plain(transaction, splits)
            shipment = await transaction.commit_unshipped()
        return await shipment.ship(then=upload)

    if step is None:
        assert await stage() == "uploaded"
        assert entries_seen == [before + 1]
    else:
        with crash_at(step), pytest.raises(SimulatedCrash):
            await stage()
        assert entries_seen == []  # every step comes before the work that follows the entry
    committed = step is None or STEPS.index(step) >= STEPS.index("before-ship")
    states = {json.loads(r)["state"] for r in (await _dump(sessions))["splits"]}
    assert states == ({"staged"} if committed else set())
    shipped = await ship_pending(sessions, storage, grace=timedelta(0))
    assert bool(shipped) == (step == "before-ship")
    report = await verify(sessions, storage)
    assert report.agrees, report.as_json()
    assert await _plain_stage_and_publish(writes, _splits(storage, "pln:1", 10)) == 3


async def test_connections_dropped_while_idle_are_replaced_before_anything_is_written(stack):
    url, storage, sessions, writes = stack
    assert await _plain_stage_and_publish(writes, _splits(storage, "pln:1", 0)) == 3
    assert writes.reads._idle
    admin = SingleReads(url, "strata-test-admin")
    try:
        await admin.fetchrow("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE application_name = $1", APP)
    finally:
        admin.close()
    assert await _plain_stage_and_publish(writes, _splits(storage, "pln:1", 10)) == 3
    assert len((await _rows(sessions, "pln:1"))["splits"]) == 6


async def test_a_conflict_is_the_session_paths_503_and_nothing_of_it_is_written(stack):
    _url, storage, sessions, writes = stack
    splits = _splits(storage, "pln:1", 0)
    with pytest.raises(TransactionConflict, match="deadlock"):
        async with writes.transaction() as transaction:
            await stage_splits_plain(transaction, splits)
            raise asyncpg.DeadlockDetectedError("deadlock detected")
    assert (await _rows(sessions, "pln:1"))["splits"] == []
    # Rolled back and kept: the same connection writes the next transaction.
    assert len(writes.reads._idle) == 1
    assert await _plain_stage_and_publish(writes, splits) == 3


def test_a_parameter_left_out_is_refused_before_anything_is_sent():
    # No bind processor runs on this path: a missing array must not go out as NULL.
    with pytest.raises(KeyError, match="j_job_id"):
        PlainStatement(AFTER_PUBLISH).args({})
