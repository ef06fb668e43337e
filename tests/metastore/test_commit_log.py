"""The commit log (migration 0017, `metastore/commit_log*.py`, `rebuild.py`, `verify.py`): every committed change
of a logged table is an entry in the bucket (CL-1, CL-2), replaying the bucket in number order rebuilds exactly
the committed state (CL-3), and a writer killed at any step of a commit leaves the bucket and PostgreSQL agreeing
once the ship pass has run (the crash matrix at the level of one transaction; the API-level one is in
tests/e2e/test_metastore_rebuild.py)."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.storage import ObjectStore
from strata_metastore import migrate
from strata_metastore.commit_log import LOGGED_TABLES, STEPS, SimulatedCrash, crash_at
from strata_metastore.commit_log_passes import ship_pending, write_checkpoint
from strata_metastore.commit_log_replay import list_log, read_entry
from strata_metastore.engine import create_engine, session_factory
from strata_metastore.rebuild import DatabaseNotEmpty, rebuild
from strata_metastore.verify import verify

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
INSERT_SPLIT = text(
    "INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema, window_start, "
    "window_duration_secs, num_rows, size_bytes, uri, row_groups, num_merge_ops, generation, root_split_ids, "
    "parent_split_ids, state, published_at) VALUES (:s, :u, 'src', :p, 'd', 'a@v1', :w, 60, :n, :b, :uri, "
    "CAST(:rg AS jsonb), 0, 0, ARRAY[CAST(:s AS varchar)], '{}', CAST(:state AS split_state), now())")
INSERT_STATS = text(
    "INSERT INTO split_column_stats (split_id, column_name, value_type, min_i64, max_i64, min_u64, max_u64, "
    "null_count) VALUES (:s, 'n', 'i64', :lo, :hi, NULL, NULL, 0), (:s, 'u', 'u64', NULL, NULL, 0, "
    "18446744073709551615, 1)")


@pytest.fixture
def databases(pg_databases):
    def create() -> str:
        url = pg_databases.create("strata_commit_log")
        migrate.upgrade(url)
        return url

    async def create_in_thread() -> str:  # both run their own event loop
        return await asyncio.to_thread(create)
    return create_in_thread


@pytest.fixture
async def stack(databases, tmp_path):
    """A database and the bucket its sessions log to; more engines through `open`."""
    engines = []

    def open_sessions(url: str, storage: ObjectStore | None):
        engine = create_engine(url, pool_size=2)
        engines.append(engine)
        return session_factory(engine, storage)

    storage = ObjectStore(f"file://{tmp_path}/bucket")
    STORAGE.append(storage)  # where the splits' files go
    url = await databases()
    try:
        yield url, storage, open_sessions(url, storage), open_sessions
    finally:
        for engine in engines:
            await engine.dispose()


async def _create_index(session: AsyncSession, uid: str) -> None:
    await session.execute(text(
        "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
        "VALUES (:u, :i, 'inc', CAST(:c AS jsonb), 'd', 1)"),
        {"u": uid, "i": uid.split(":")[0], "c": json.dumps({"name": uid, "nested": {"x": [1, 2]}})})


STORAGE: list[ObjectStore] = []


async def _add_split(session: AsyncSession, rng: random.Random, split_id: str, uid: str, state: str) -> None:
    lo = rng.randrange(-2**63, 2**62)
    storage = STORAGE[-1]
    uri = storage.uri_for(f"data/{split_id}.parquet")
    storage.write_bytes(uri, b"PAR1")
    await session.execute(INSERT_SPLIT, {
        "s": split_id, "u": uid, "p": rng.choice(["p1", "tenant é"]), "w": 60 * rng.randrange(0, 5),
        "n": rng.randrange(1, 10**6), "b": rng.randrange(1, 10**9), "uri": uri,
        "rg": json.dumps([{"row_offset": 0, "num_rows": 1, "byte_offset": 4, "byte_length": rng.randrange(1, 99)}]),
        "state": state})
    await session.execute(INSERT_STATS, {"s": split_id, "lo": lo, "hi": lo + rng.randrange(0, 2**62)})


async def _random_step(sessions, rng: random.Random, step: int, live: list[str]) -> None:
    """One committed transaction of a random kind, as the services make them."""
    async with sessions() as session:
        action = rng.random()
        if action < 0.45 or not live:
            for k in range(rng.randrange(1, 4)):
                split_id = f"{step:05d}{k}".ljust(26, "S")
                await _add_split(session, rng, split_id, rng.choice(["a:1", "b:1"]), "published")
                live.append(split_id)
        elif action < 0.7:
            # A merge's publication: inputs replaced, one output published.
            inputs = rng.sample(live, min(len(live), rng.randrange(1, 4)))
            await session.execute(text("UPDATE splits SET state = 'marked_for_deletion', "
                                       "marked_for_deletion_at = now() WHERE split_id = ANY(:ids)"), {"ids": inputs})
            output = f"{step:05d}M".ljust(26, "S")
            await _add_split(session, rng, output, "a:1", "published")
            live[:] = [s for s in live if s not in inputs] + [output]
        elif action < 0.85:
            split_id = rng.choice(live)
            await session.execute(text(
                "INSERT INTO artifact_snapshots (split_id, index_uid, manifest_uri, published, artifact_ids, "
                "published_by, published_at) SELECT split_id, index_uid, 'file:///m', true, '[\"x\"]', 'job:1', now() "
                "FROM splits WHERE split_id = :s ON CONFLICT (split_id) DO UPDATE SET published = NOT "
                "artifact_snapshots.published"), {"s": split_id})
        else:
            victim = rng.choice(live)
            live.remove(victim)
            await session.execute(text("DELETE FROM splits WHERE split_id = :s"), {"s": victim})
        await session.commit()


async def _dump(sessions) -> dict[str, list[str]]:
    """Every logged table's rows, as JSON text, in key order."""
    out = {}
    async with sessions() as session:
        for table, key in LOGGED_TABLES.items():
            order = ", ".join(key)
            out[table] = [r for (r,) in await session.execute(
                text(f"SELECT to_jsonb(t)::text FROM {table} t ORDER BY {order}"))]
    return out


def test_the_logged_tables_are_the_tables_the_capture_triggers_watch(database_url):
    async def triggers():
        engine = create_engine(database_url, pool_size=1)
        try:
            async with engine.connect() as connection:
                return {r for (r,) in await connection.execute(text(
                    "SELECT DISTINCT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                    "JOIN pg_proc p ON p.oid = t.tgfoid WHERE p.proname = 'strata_capture_changes'"))}
        finally:
            await engine.dispose()

    assert asyncio.run(triggers()) == set(LOGGED_TABLES)


async def test_a_commit_writes_one_entry_with_the_transactions_rows_to_the_bucket(stack):
    _url, storage, sessions, _open = stack
    async with sessions() as session:
        await _create_index(session, "a:1")
        await _add_split(session, random.Random(1), "S" * 26, "a:1", "published")
        await session.commit()
    async with sessions() as session:  # a transaction touching no logged table draws no number
        await session.execute(text("SELECT 1"))
        await session.commit()
    listing = list_log(storage)
    assert len(listing.entries) == 1
    changes = read_entry(storage, listing.entries[0])
    assert [(c["table"], c["op"]) for c in changes] == [
        ("indexes", "upsert"), ("splits", "upsert"), ("split_column_stats", "upsert")]
    assert changes[0]["rows"][0]["config"] == {"name": "a:1", "nested": {"x": [1, 2]}}
    # u64 beyond int64 and the enum survive as JSON
    assert {r["max_u64"] for r in changes[2]["rows"]} == {None, 18446744073709551615}
    assert changes[1]["rows"][0]["state"] == "published"


async def test_a_change_that_bypasses_the_log_is_refused_at_commit_and_nothing_is_written(stack):
    url, storage, sessions, _open = stack
    engine = create_engine(url, pool_size=1)
    try:
        async with AsyncSession(engine) as plain:
            await _create_index(plain, "a:1")
            with pytest.raises(DBAPIError, match="committed without its commit log entry"):
                await plain.commit()
        async with AsyncSession(engine) as bulk:  # a bulk load with capture off is the documented way around
            await bulk.execute(text("SET LOCAL strata.capture = 'off'"))
            await _create_index(bulk, "b:1")
            await bulk.commit()
    finally:
        await engine.dispose()
    assert [r for r in (await _dump(sessions))["indexes"]] and list_log(storage).entries == []
    assert [json.loads(r)["index_uid"] for r in (await _dump(sessions))["indexes"]] == ["b:1"]


async def test_replaying_the_bucket_rebuilds_exactly_the_committed_state(stack, databases):
    """CL-3 over a random history of inserts, merges (replace and publish), snapshot flips and deletes, with
    checkpoints taken along the way (entries before the previous one deleted from the bucket)."""
    _url, storage, sessions, open_sessions = stack
    rng = random.Random(7)
    async with sessions() as session:
        await _create_index(session, "a:1")
        await _create_index(session, "b:1")
        await session.commit()
    live: list[str] = []
    checkpoints = []
    for step in range(120):
        await _random_step(sessions, rng, step, live)
        if step % 40 == 39:
            checkpoints.append(await write_checkpoint(sessions, storage))
    assert all(c is not None for c in checkpoints)
    listing = list_log(storage)
    assert listing.checkpoint is not None and listing.checkpoint.seq == checkpoints[-1].seq
    assert min(listing.entries) > checkpoints[-3].seq  # older entries folded away
    assert (await verify(sessions, storage)).agrees
    rebuilt = open_sessions(await databases(), storage)
    report = await rebuild(rebuilt, storage, NOW)
    assert report.checkpoint_seq == checkpoints[-1].seq and report.entries_applied == len(listing.to_apply())
    assert await _dump(rebuilt) == await _dump(sessions)
    async with rebuilt() as a, sessions() as b:
        totals = "SELECT index_uid, partition_id, files, bytes FROM published_totals ORDER BY 1, 2"
        assert (await a.execute(text(totals))).all() == (await b.execute(text(totals))).all()
    assert (await verify(rebuilt, storage)).agrees
    with pytest.raises(DatabaseNotEmpty):
        await rebuild(rebuilt, storage, NOW)
    gone = next(row for row in map(json.loads, (await _dump(sessions))["splits"]) if row["state"] == "published")
    storage.delete(gone["uri"])
    report = await verify(sessions, storage)
    assert report.missing_files == [gone["uri"]] and report.drift["missing_files"] == 1


@pytest.mark.parametrize("step", STEPS)
async def test_a_writer_killed_at_any_step_leaves_bucket_and_database_agreeing(stack, databases, step):
    """Killed before its COMMIT the change is gone from both; after it, the ship pass (any replica's, or the
    restarted writer's) writes the entry the writer could not, and a rebuild gives back exactly the database."""
    _url, storage, sessions, open_sessions = stack
    rng = random.Random(3)
    async with sessions() as session:
        await _create_index(session, "a:1")
        await _create_index(session, "b:1")
        await session.commit()
    live: list[str] = []
    for i in range(5):
        await _random_step(sessions, rng, i, live)
    crashed = "CRASHED".ljust(26, "S")
    with crash_at(step), pytest.raises(SimulatedCrash):
        async with sessions() as session:
            await _add_split(session, rng, crashed, "a:1", "published")
            await session.execute(text("UPDATE splits SET state = 'marked_for_deletion' WHERE split_id = :s"),
                                  {"s": live[0]})
            await session.commit()
    committed = STEPS.index(step) >= STEPS.index("before-ship")
    splits = {json.loads(r)["split_id"] for r in (await _dump(sessions))["splits"]}
    assert (crashed in splits) == committed
    shipped = await ship_pending(sessions, storage, grace=timedelta(0))
    assert bool(shipped) == (step == "before-ship")
    report = await verify(sessions, storage)
    assert report.agrees, report.as_json()
    rebuilt = open_sessions(await databases(), storage)
    await rebuild(rebuilt, storage, NOW)
    assert await _dump(rebuilt) == await _dump(sessions)
