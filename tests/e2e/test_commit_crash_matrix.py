"""The crash matrix through the APIs: each commit path an operator or a writer drives (create an index, pause its
compaction, register a split, accept a delete, update the index, delete it) with its writer killed at each step of
its commit (`commit_log.STEPS`: before the entry is numbered, before COMMIT, after COMMIT before the entry is in the
bucket, after). Whatever step it died at, once the ship pass has run `verify` finds PostgreSQL and the bucket
agreeing, the change is there iff its COMMIT happened, and at the end a metastore rebuilt from the bucket alone
holds exactly what PostgreSQL holds. (The protocol on its own, over random histories, is
tests/metastore/test_commit_log.py's.)"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from sqlalchemy import text
from ulid import ULID

from strata_core.domain.sort_key import sort_indices
from strata_core.domain.sort_schema import SortSchema
from strata_metastore import migrate
from strata_metastore.commit_log import LOGGED_TABLES, STEPS, SimulatedCrash, crash_at
from strata_metastore.commit_log_passes import ship_pending, write_checkpoint
from strata_metastore.engine import create_engine, session_factory
from strata_metastore.rebuild import rebuild
from strata_metastore.verify import verify
from strata_services.sample_data import METRICS_SORT_SCHEMA, metrics_index_config, metrics_rows
from tests.fixtures.apps import AppStack, app_stack
from tests.helpers import unique_index_id

COMMITTED = ("before-ship", "after-ship")


@pytest.fixture
async def stack(settings, pg_databases, tmp_path):
    def database() -> str:
        url = pg_databases.create("strata_crash")
        migrate.upgrade(url)
        return url

    own = settings.model_copy(update={"database_url": await asyncio.to_thread(database),
                                      "storage_uri": (tmp_path / "bucket").as_uri()})
    async with app_stack(own) as stack:
        stack.clock.now = datetime.now(UTC)
        yield stack


def _split_file(stack: AppStack) -> tuple[str, int]:
    now = int(datetime.now(UTC).timestamp())
    table = metrics_rows(50, start=now - now % 900, span_secs=900, seed=3)
    table = table.take(sort_indices(table, SortSchema.parse(METRICS_SORT_SCHEMA)))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    relative = f"external/{ULID()}.parquet"
    stack.storage.write_bytes(relative, sink.getvalue())
    return relative, table.num_rows


class Paths:
    """Each path as (the request on an index, SQL counting what it leaves there when committed). Every step runs
    on an index of its own, created beforehand (except for "create index"), so no step depends on another's."""

    def __init__(self, stack: AppStack, keys) -> None:
        self.stack, self.admin, self.writer = stack, keys.header(keys.admin), keys.header(keys.writer)

    async def create(self, index_id: str):
        return await self.stack.indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=self.admin)

    async def pause(self, index_id: str):
        return await self.stack.planner.post(f"/v1/indexes/{index_id}/compaction/pause", headers=self.admin)

    async def register(self, index_id: str):
        uri, rows = _split_file(self.stack)
        return await self.stack.indexer.post(f"/v1/indexes/{index_id}/splits", headers=self.writer, json={"splits": [
            {"split_id": str(ULID()), "uri": uri, "num_rows": rows, "source_id": "crash",
             "sort_schema": METRICS_SORT_SCHEMA}]})

    async def delete_rows(self, index_id: str):
        return await self.stack.planner.post(f"/v1/indexes/{index_id}/deletes", json={"where": "host = 'host-0001'"},
                                             headers=self.admin)

    async def update(self, index_id: str):
        config = {k: v for k, v in metrics_index_config(index_id).items() if k != "index_id"}
        config["retention"] = {"period_secs": 86400, "interval_secs": 3600}
        return await self.stack.indexer.put(f"/v1/indexes/{index_id}", json=config, headers=self.admin)

    async def delete_index(self, index_id: str):
        return await self.stack.indexer.delete(f"/v1/indexes/{index_id}", headers=self.admin)

    def all(self) -> dict[str, tuple[Callable[[str], Awaitable], str]]:
        of = "JOIN indexes i USING (index_uid) WHERE i.index_id = :i"
        return {
            "create index": (self.create, "SELECT count(*) FROM indexes WHERE index_id = :i"),
            "pause": (self.pause, "SELECT count(*) FROM indexes WHERE index_id = :i "
                                  "AND compaction_paused_at IS NOT NULL"),
            "register": (self.register, f"SELECT count(*) FROM splits s {of}"),
            "delete rows": (self.delete_rows, f"SELECT count(*) FROM deletes d {of}"),
            "update": (self.update, "SELECT max(version) FROM indexes WHERE index_id = :i"),
            "delete index": (self.delete_index, "SELECT count(*) FROM indexes WHERE index_id = :i "
                                                "AND deleted_at IS NOT NULL"),
        }


def _crashed(exc: BaseException) -> bool:
    """The injected crash, raised as it is or wrapped by a task group on its way out of the app."""
    if isinstance(exc, SimulatedCrash):
        return True
    return isinstance(exc, BaseExceptionGroup) and any(_crashed(e) for e in exc.exceptions)


async def _scalar(stack: AppStack, sql: str, index_id: str) -> int:
    async with stack.indexer.app.state.strata.sessions() as session:
        return (await session.execute(text(sql), {"i": index_id})).scalar_one() or 0


async def _dump(sessions) -> dict[str, list[str]]:
    async with sessions() as session:
        return {t: [r for (r,) in await session.execute(text(
            f"SELECT row_to_json(t)::text FROM {t} t ORDER BY {', '.join(key)}"))]
            for t, key in LOGGED_TABLES.items()}


async def test_every_commit_path_killed_at_every_step_leaves_bucket_and_database_agreeing(stack, keys, pg_databases):
    state = stack.indexer.app.state.strata
    paths = Paths(stack, keys)
    for path, (request, counted) in paths.all().items():
        for step in STEPS:
            index_id = unique_index_id("crash")
            if path != "create index":
                assert (await paths.create(index_id)).status_code == 201
            before = await _scalar(stack, counted, index_id)
            with crash_at(step):
                try:
                    response = await request(index_id)
                except BaseException as exc:  # noqa: BLE001 - only the injected crash is expected here
                    if not _crashed(exc):
                        raise
                    response = None
            assert response is None, (path, step, response.status_code, response.text)
            after = await _scalar(stack, counted, index_id)
            assert (after != before) == (step in COMMITTED), (path, step, before, after)
            await ship_pending(state.sessions, state.storage, grace=timedelta(0))
            report = await verify(state.sessions, state.storage)
            assert report.agrees, (path, step, report.as_json())
        # Folded once per path, so each verify replays a checkpoint and a few entries, and the rebuild below
        # reads both.
        await write_checkpoint(state.sessions, state.storage)

    def database() -> str:
        url = pg_databases.create("strata_crash_rebuilt")
        migrate.upgrade(url)
        return url

    engine = create_engine(await asyncio.to_thread(database), pool_size=2)
    try:
        rebuilt = session_factory(engine, state.storage)
        await rebuild(rebuilt, state.storage, datetime.now(UTC))
        assert await _dump(rebuilt) == await _dump(state.sessions)
    finally:
        await engine.dispose()
