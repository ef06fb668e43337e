"""The main journey on each storage backend: a local directory, and S3 (moto's server, which the apps and the Spark
executors reach through the standard AWS variables, as on a real deployment). Create an index, ingest, register a
split written into the store by someone else, merge on Spark (the merge checks run there), build every file's
artifacts on Spark, query on both engines with the answers DuckDB gives over the same files, check PostgreSQL
against the bucket's commit log and rebuild the metastore from the bucket alone (its queries answer the same), then
drop the window by retention, collect garbage (the replaced and dropped splits' objects leave the store, as a
listing outside Strata shows) and run the janitor (the artifacts of collected files go). On S3 nothing Strata shows
(responses, spans, logs) holds the access key id or the secret."""

from __future__ import annotations

import asyncio
import io
import re
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ulid import ULID

from strata_core.config import Settings
from strata_core.domain.sort_key import is_sorted, sort_indices
from strata_core.domain.sort_schema import SortSchema
from strata_metastore import migrate
from strata_metastore.engine import create_engine, session_factory
from strata_metastore.rebuild import rebuild
from strata_planner.compaction.dependencies import planner_services_of
from strata_services.sample_data import METRICS_SORT_SCHEMA
from tests.e2e.reference_answers import QUERIES, files_table, normal, row_multiset
from tests.e2e.shown_text import watching
from tests.fixtures.apps import AppStack, app_stack
from tests.indexer.indexing_helpers import (
    EXPECTED,
    artifacts_of,
    create_indexed_index,
    ingest,
    make_runner,
    rows_for,
    run_until_indexed,
)
from tests.planner.compaction_helpers import SMALL_POLICY, open_window, run_triggered_merge

pytestmark = [pytest.mark.spark]
RETENTION_SECS = 3600


@dataclass
class Backend:
    name: str
    stack: AppStack
    # Keys of the objects under a root-relative prefix, listed without Strata's storage code.
    objects: Callable[[str], set[str]]


@pytest.fixture(scope="module", params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def backend_settings(request, settings: Settings, pg_databases, tmp_path_factory) -> tuple[str, Settings, Callable]:
    """Settings of a stack of its own: a metastore no other test's queues, GC or janitor touch, and a storage root
    on the backend."""
    database_url = pg_databases.create("strata_journey")
    migrate.upgrade(database_url)
    if request.param == "s3":
        s3 = request.getfixturevalue("s3_server")
        prefix = f"journey-{uuid.uuid4().hex[:8]}"
        storage_uri = s3.storage_uri(prefix)

        def objects(under: str) -> set[str]:
            base = f"{prefix}/{under}"
            # pyarrow keeps empty "directory/" marker objects; only files are objects here.
            return {key[len(prefix) + 1:] for key in s3.keys(base) if not key.endswith("/")}
    else:
        root = tmp_path_factory.mktemp("journey-objects")
        storage_uri = root.as_uri()

        def objects(under: str) -> set[str]:
            return {str(p.relative_to(root)) for p in (root / under).rglob("*") if p.is_file()}
    return request.param, settings.model_copy(update={"database_url": database_url, "storage_uri": storage_uri}), \
        objects


@pytest.fixture(scope="module")
async def backend(backend_settings) -> AsyncIterator[Backend]:
    name, settings, objects = backend_settings
    async with app_stack(settings) as stack:
        yield Backend(name, stack, objects)


def _relative(stack: AppStack, uri: str) -> str:
    return stack.storage.canonical_uri(uri)[len(stack.storage.root_uri) + 1:]


def _external_split(window: int) -> tuple[bytes, int]:
    """A split some other writer sorted by the index's sort schema, with the index's columns."""
    table = pa.Table.from_pylist(rows_for(window, 300, seed=42))
    table = table.take(sort_indices(table, SortSchema.parse(METRICS_SORT_SCHEMA)))
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue(), table.num_rows


async def _splits(stack: AppStack, keys, index_id: str, state: str) -> list[dict]:
    response = await stack.indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": state, "limit": 1000},
                                       headers=keys.header(keys.writer))
    assert response.status_code == 200, response.text
    return response.json()["splits"]


def _counted(metrics: str, operation: str, kind: str) -> float:
    found = re.search(rf'strata_object_store_requests_total{{kind="{kind}",operation="{operation}"}} ([0-9.e+]+)',
                      metrics)
    return float(found.group(1)) if found else 0.0


async def _answers(stack: AppStack, keys, sql: str,
                   engines: tuple[str, ...] = ("local", "spark")) -> dict[str, list[tuple]]:
    answers = {}
    for engine in engines:
        response = await stack.query.post("/v1/query", json={"sql": sql, "engine": engine},
                                          headers={**keys.header(keys.admin), "Accept": "application/json"})
        assert response.status_code == 200, (engine, response.text)
        assert response.headers["x-strata-engine"] == engine
        answers[engine] = normal(tuple(r.values()) for r in response.json()["rows"])
    return answers


async def test_the_journey_runs_on_the_backend(backend: Backend, keys, spark_factory, caplog, tmp_path_factory,
                                               request, pg_databases):
    stack = backend.stack
    stack.clock.now = datetime.now(UTC)
    with watching(caplog, tmp_path_factory, stack.indexer, stack.planner, stack.query) as shown:
        await _journey(backend, keys, spark_factory, pg_databases)
    if backend.name == "s3":
        s3 = request.getfixturevalue("s3_server")
        shown.assert_nowhere(s3.secret_access_key, s3.access_key_id)


async def _rebuilt_from_the_bucket_answers_the_same(stack: AppStack, keys, pg_databases, table: str,
                                                    split_id: str) -> None:
    """The bucket is the record (CL-1..3): PostgreSQL agrees with its commit log, and a metastore rebuilt from the
    bucket alone, into a new database, gives every index, split and artifact snapshot back: its query-api answers
    every query exactly as this one does, on both engines."""
    verified = await stack.planner.post("/v1/metastore/verify", headers=keys.header(keys.admin))
    assert verified.status_code == 200 and verified.json()["agrees"], verified.text

    def empty_database() -> str:
        url = pg_databases.create("strata_rebuilt")
        migrate.upgrade(url)
        return url

    url = await asyncio.to_thread(empty_database)
    engine = create_engine(url, pool_size=2)
    try:
        report = await rebuild(session_factory(engine, stack.storage), stack.storage, datetime.now(UTC))
    finally:
        await engine.dispose()
    assert report.rows["splits"] == 5 and report.rows["indexes"] >= 1 and report.indexing_jobs == 0, report
    async with app_stack(stack.settings.model_copy(update={"database_url": url})) as rebuilt:
        assert await artifacts_of(rebuilt.indexer, keys, split_id) == await artifacts_of(stack.indexer, keys, split_id)
        # Every query on the local engine, the first on Spark too (the journey above compared the two engines).
        for sql, _ in QUERIES:
            engines = ("local", "spark") if sql == QUERIES[0][0] else ("local",)
            assert await _answers(rebuilt, keys, sql.format(i=table), engines) == \
                await _answers(stack, keys, sql.format(i=table), engines), sql
        verified = await rebuilt.planner.post("/v1/metastore/verify", headers=keys.header(keys.admin))
        assert verified.status_code == 200 and verified.json()["agrees"], verified.text


async def _journey(backend: Backend, keys, spark_factory, pg_databases) -> None:
    stack = backend.stack
    index_id = await create_indexed_index(stack.indexer, keys, merge_policy=SMALL_POLICY,
                                          retention={"period_secs": RETENTION_SECS, "interval_secs": 3600},
                                          query={"default_lookback_secs": 3 * 86400})
    window = open_window()
    for seed in range(3):
        await ingest(stack.indexer, keys, index_id, rows_for(window, 400, seed=seed))

    data, num_rows = _external_split(window)
    external = f"external/{ULID()}.parquet"
    stack.storage.write_bytes(external, data)
    registered = await stack.indexer.post(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer), json={
        "splits": [{"split_id": str(ULID()), "uri": external, "num_rows": num_rows, "source_id": "ingest-api",
                    "sort_schema": METRICS_SORT_SCHEMA}]})
    assert registered.status_code == 200, registered.text
    inputs = await _splits(stack, keys, index_id, "published")
    assert len(inputs) == 4 and all(s["uri"].startswith(stack.storage.root_uri + "/") for s in inputs)
    input_keys = {_relative(stack, s["uri"]) for s in inputs}
    assert external in input_keys and input_keys <= backend.objects("")
    rows_before = row_multiset(files_table(stack.storage, [s["uri"] for s in inputs]))

    # The merge runs on Spark: its Python workers read the four inputs from the store and write the output there.
    job = await run_triggered_merge(stack.planner, keys, spark_factory, index_id)
    assert job["status"] == "success", job
    [output] = await _splits(stack, keys, index_id, "published")
    merged = files_table(stack.storage, [output["uri"]])
    assert row_multiset(merged) == rows_before  # MC-1, MC-2
    assert is_sorted(merged, SortSchema.parse(METRICS_SORT_SCHEMA))  # MC-3

    # So does the artifact build: read the output from the store, write its artifacts there.
    [built] = await run_until_indexed(stack.indexer, keys, make_runner(stack.indexer, spark_factory),
                                      [output["split_id"]])
    assert built["status"] == "success", built
    listing = await artifacts_of(stack.indexer, keys, output["split_id"])
    assert listing["snapshot"]["published"] and listing["snapshot"]["artifact_count"] == len(EXPECTED)
    artifact_keys = {_relative(stack, a["uri"]) for a in listing["artifacts"]}
    assert artifact_keys <= backend.objects(f"indexes/{index_id}")

    table = f'"{index_id}"'
    reference = duckdb.connect()
    reference.register("data", merged)
    for sql, duck_sql in QUERIES:
        expected = normal(reference.execute((duck_sql or sql).format(i="data")).fetchall())
        answers = await _answers(stack, keys, sql.format(i=table))
        assert answers["local"] == answers["spark"] == expected, sql
    assert expected, "the full-text query finds the disk errors"
    await _rebuilt_from_the_bucket_answers_the_same(stack, keys, pg_databases, table, output["split_id"])

    # The merge's inputs stay through the grace period, then go from the store.
    gc_grace = stack.settings.gc_grace_secs
    planner_gc = planner_services_of(stack.planner.app).gc
    await planner_gc.collect(stack.clock())
    assert input_keys <= backend.objects("")
    report = await planner_gc.collect(stack.clock() + timedelta(seconds=gc_grace + 1))
    assert report.splits_deleted == 4
    assert not input_keys & backend.objects(""), "the replaced splits' objects are deleted"
    assert _relative(stack, output["uri"]) in backend.objects("")

    # Retention drops the window once it ends an hour before now; the GC then deletes its split.
    stack.clock.now = datetime.fromtimestamp(window + 900 + RETENTION_SECS + 60, UTC)
    applied = await stack.planner.post(f"/v1/indexes/{index_id}/retention/apply", json={},
                                       headers=keys.header(keys.admin))
    assert applied.status_code == 200, applied.text
    assert [w["window_start"] for w in applied.json()["windows"]] == [window] and applied.json()["splits"] == 1
    assert await _splits(stack, keys, index_id, "published") == []
    report = await planner_gc.collect(stack.clock() + timedelta(seconds=gc_grace + 1))
    assert report.splits_deleted == 1
    left = backend.objects(f"indexes/{index_id}")
    assert artifact_keys <= left and all(f"/artifacts/{output['split_id']}/" in k for k in left), \
        "only the collected file's artifacts (and their snapshot's manifest) are left"

    # The janitor deletes the artifacts of a file that no longer exists.
    stack.clock.advance(stack.settings.janitor_grace_secs + 1)
    janitor = await stack.indexer.post("/v1/indexing/janitor", headers=keys.header(keys.admin))
    assert janitor.status_code == 200, janitor.text
    assert {_relative(stack, u) for u in janitor.json()["deleted"]} == left
    assert backend.objects(f"indexes/{index_id}") == set()
    assert backend.objects("external") == set()

    # What each operation cost the store, in each API's /metrics.
    indexer_metrics = (await stack.indexer.get("/metrics")).text
    assert _counted(indexer_metrics, "ingest", "put") > 0 and _counted(indexer_metrics, "register", "get") > 0
    assert _counted(indexer_metrics, "janitor", "list") >= 1
    assert _counted(indexer_metrics, "janitor", "delete") >= len(left)
    assert _counted((await stack.planner.get("/metrics")).text, "gc", "delete") >= 5
    assert _counted((await stack.query.get("/metrics")).text, "query", "get") > 0
