"""Lose PostgreSQL, lose nothing (README, "Losing PostgreSQL"), on a local directory and on S3 (moto's server).

An index is ingested into, given a delete and paused; a second index is ingested into. Then, while writers keep
ingesting, the database is dropped (DROP DATABASE ... WITH (FORCE)), created again empty, and rebuilt from the
bucket alone (`strata_metastore.rebuild`); the same running APIs then serve from it. Every request answered
200 has its rows exactly once, no other request's rows are there, every answer equals DuckDB's over the published
files with the delete applied, the operator state came back, writes go on, and `verify` finds PostgreSQL and the
bucket agreeing. (Merges and artifact builds before a rebuild are tests/e2e/test_object_storage_journey.py's.)"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import duckdb
import pytest
from sqlalchemy.engine import make_url

from strata_metastore import migrate
from tests.e2e.reference_answers import QUERIES, files_table, normal
from tests.fixtures.apps import AppStack, app_stack
from tests.fixtures.postgres import _admin
from tests.helpers import ndjson
from tests.indexer.indexing_helpers import create_indexed_index, ingest, rows_for
from tests.planner.compaction_helpers import open_window

pytestmark = [pytest.mark.spark]
DELETED = "service IN ('service_03', 'service_07')"
ROWS_PER_REQUEST = 25


@pytest.fixture(scope="module", params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def rebuild_settings(request, settings, pg_databases, tmp_path_factory):
    database_url = pg_databases.create("strata_lost")
    migrate.upgrade(database_url)
    if request.param == "s3":
        storage_uri = request.getfixturevalue("s3_server").storage_uri(f"lost-{uuid.uuid4().hex[:8]}")
    else:
        storage_uri = tmp_path_factory.mktemp("lost-objects").as_uri()
    return settings.model_copy(update={"database_url": database_url, "storage_uri": storage_uri})


async def _published(stack: AppStack, keys, index_id: str) -> list[str]:
    response = await stack.indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "published", "limit": 1000},
                                       headers=keys.header(keys.writer))
    assert response.status_code == 200, response.text
    return [s["uri"] for s in response.json()["splits"]]


async def _answer(stack: AppStack, keys, sql: str, engine: str) -> list[tuple]:
    response = await stack.query.post("/v1/query", json={"sql": sql, "engine": engine},
                                      headers={**keys.header(keys.admin), "Accept": "application/json"})
    assert response.status_code == 200, (engine, response.text)
    return normal(tuple(r.values()) for r in response.json()["rows"])


class Writers:
    """Writers that never stop: each request's rows carry a host of their own, so where they went is countable."""

    def __init__(self, stack: AppStack, keys, index_id: str, window: int) -> None:
        self.stack, self.keys, self.index_id, self.window = stack, keys, index_id, window
        self.answered: dict[str, int] = {}  # host -> status
        self.stop = asyncio.Event()

    async def run(self, writer: int) -> None:
        n = 0
        while not self.stop.is_set():
            host = f"w{writer}-{n:04d}"
            rows = [{**row, "host": host} for row in rows_for(self.window, ROWS_PER_REQUEST, seed=n)]
            response = await self.stack.indexer.post(
                f"/v1/indexes/{self.index_id}/ingest", content=ndjson(rows),
                headers={**self.keys.header(self.keys.writer), "Content-Type": "application/x-ndjson"})
            assert response.status_code in (200, 503), response.text  # a lost database is a 503, never a 500
            self.answered[host] = response.status_code
            n += 1
            await asyncio.sleep(0.02)

    def acknowledged(self) -> set[str]:
        return {h for h, status in self.answered.items() if status == 200}


async def test_the_database_dropped_under_writers_is_rebuilt_from_the_bucket(rebuild_settings, pg_databases,
                                                                            keys):
    async with app_stack(rebuild_settings) as stack:
        stack.clock.now = datetime.now(UTC)
        window = open_window()
        index_id = await create_indexed_index(stack.indexer, keys, query={"default_lookback_secs": 3 * 86400})
        other_id = await create_indexed_index(stack.indexer, keys, query={"default_lookback_secs": 3 * 86400})
        for seed in range(3):
            await ingest(stack.indexer, keys, index_id, rows_for(window, 200, seed=seed))
        accepted = await stack.planner.post(f"/v1/indexes/{index_id}/deletes", json={"where": DELETED},
                                            headers=keys.header(keys.admin))
        assert accepted.status_code == 202, accepted.text
        paused = await stack.planner.post(f"/v1/indexes/{index_id}/compaction/pause", headers=keys.header(keys.admin))
        assert paused.status_code == 200, paused.text
        await ingest(stack.indexer, keys, other_id, rows_for(window, 50, seed=9))
        before = {index_id: await _published(stack, keys, index_id), other_id: await _published(stack, keys, other_id)}

        writers = Writers(stack, keys, other_id, window)
        running = [asyncio.create_task(writers.run(i)) for i in range(2)]
        await asyncio.sleep(1.0)
        name = make_url(rebuild_settings.database_url).database
        await _admin(pg_databases.admin_url, f'DROP DATABASE "{name}" WITH (FORCE)')
        await asyncio.sleep(1.0)
        writers.stop.set()
        await asyncio.gather(*running)
        assert writers.acknowledged() and len(writers.acknowledged()) < len(writers.answered), \
            "some writes were answered before the drop, and some refused after it"

        await _admin(pg_databases.admin_url, f'CREATE DATABASE "{name}"')
        await asyncio.to_thread(migrate.upgrade, rebuild_settings.database_url)
        # The operator's call (`strata metastore rebuild` does the same without an API): planner-api runs it.
        started = await stack.planner.post("/v1/metastore/rebuild", json={}, headers=keys.header(keys.admin))
        assert started.status_code == 202, started.text
        while (run := (await stack.planner.get("/v1/metastore/rebuild", headers=keys.header(keys.admin))).json()
               )["status"] == "running":
            await asyncio.sleep(0.2)
        assert run["status"] == "succeeded", run
        report = run["report"]
        assert report["rows"]["indexes"] >= 2 and report["coverage_reset"] == 0, report
        assert run["entries_done"] == run["entries_total"] == report["entries_applied"]
        again = await stack.planner.post("/v1/metastore/rebuild", json={}, headers=keys.header(keys.admin))
        assert again.status_code == 409 and "already holds indexes" in again.json()["detail"], again.text

        # The same running APIs serve from the rebuilt metastore.
        assert await _published(stack, keys, index_id) == before[index_id]
        files = await _published(stack, keys, other_id)
        assert set(before[other_id]) <= set(files)
        expected_rows = {h: ROWS_PER_REQUEST for h in writers.acknowledged()}
        assert _count_by_host(files_table(stack.storage, files)) == expected_rows, \
            "every answered request's rows exactly once, and no refused request's"

        reference = duckdb.connect()
        reference.register("data", files_table(stack.storage, before[index_id]))
        for sql, duck_sql in QUERIES:
            where = f"NOT ({DELETED})"
            duck = (duck_sql or sql).format(i=f"(SELECT * FROM data WHERE {where})")
            expected = normal(reference.execute(duck).fetchall())
            # Spark once: both engines' answers after a rebuild are the object storage journey's to compare.
            for engine in ("local", "spark") if sql == QUERIES[0][0] else ("local",):
                assert await _answer(stack, keys, sql.format(i=f'"{index_id}"'), engine) == expected, (engine, sql)
        index = (await stack.indexer.get(f"/v1/indexes/{index_id}", headers=keys.header(keys.admin))).json()
        assert index["compaction_paused_at"] is not None
        status = await stack.planner.get(f"/v1/indexes/{index_id}/deletes/{accepted.json()['delete_id']}",
                                         headers=keys.header(keys.admin))
        assert status.status_code == 200 and status.json()["status"] in ("pending", "running"), status.text

        await ingest(stack.indexer, keys, other_id, rows_for(window, 10, seed=11))  # writes go on
        verified = await stack.planner.post("/v1/metastore/verify", headers=keys.header(keys.admin))
        assert verified.status_code == 200 and verified.json()["agrees"], verified.text


def _count_by_host(table) -> dict[str, int]:
    counts: dict[str, int] = {}
    for host in table.column("host").to_pylist():
        if host.startswith("w"):
            counts[host] = counts.get(host, 0) + 1
    return counts
