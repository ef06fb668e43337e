"""Every Strata job on a real Spark standalone cluster whose executors have only a bare Python (pyarrow, numpy,
pandas; no Strata, no pyroaring, tantivy, zstandard ...): the code travels with the Spark Connect session.

A master, one worker and a Spark Connect server on it are started from the pyspark package, with executors
running a virtualenv made at test time. Through it: a merge (MC-1..MC-4 on the output), an artifact build of the
merged file, and pruned queries whose results equal the local server's. Without the bundle, the same jobs fail
with the missing module named in one line: a merge records it as its failure reason, a query answers 502.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from asgi_lifespan import LifespanManager

from strata_core.config import Settings
from strata_core.domain.sort_key import is_sorted
from strata_core.domain.sort_schema import SortSchema
from strata_frame.spark.session import SparkSessionFactory
from strata_query.dependencies import query_service_of
from strata_services.local.spark_cluster import ClusterShape, LocalSparkCluster, bare_executor_python
from tests.helpers import assert_problem
from tests.indexer.indexing_helpers import (
    EXPECTED,
    create_indexed_index,
    ingest,
    make_runner,
    rows_for,
    run_until_indexed,
)
from tests.planner.compaction_helpers import SMALL_POLICY, open_window, run_triggered_merge

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]
MISSING_MODULE = "ModuleNotFoundError: No module named 'strata_jobs'"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSparkCluster]:
    work = tmp_path_factory.mktemp("spark-cluster")
    python = bare_executor_python(work / "bare-executor")
    cluster = LocalSparkCluster(work, python=str(python),
                                shape=ClusterShape(workers=1, cores_per_worker=2, memory_per_worker="1536m",
                                                   executor_memory="1g", driver_memory="1g"))
    # start() stops what it started when it fails; the finally stops everything whatever the tests do.
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def cluster_factory(cluster: LocalSparkCluster, job_bundle_dir: Path) -> Iterator[SparkSessionFactory]:
    factory = SparkSessionFactory(cluster.remote, bundle_dir=job_bundle_dir)
    try:
        yield factory
    finally:
        factory.close()


async def _app_client(app) -> AsyncIterator[httpx.AsyncClient]:
    async with LifespanManager(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://query-api",
                                     timeout=120) as client:
            client.app = app
            yield client


@pytest.fixture
async def cluster_query(settings: Settings, cluster: LocalSparkCluster) -> AsyncIterator[httpx.AsyncClient]:
    """query-api on the same metastore and storage as the other apps, executing on the cluster."""
    from strata_query.app import create_app

    async for client in _app_client(create_app(settings.model_copy(update={"spark_remote": cluster.remote}))):
        yield client


def _rows(storage, uris: list[str]) -> Counter:
    rows: Counter = Counter()
    for uri in uris:
        for row in pq.read_table(storage.open_input(uri)).to_pylist():
            rows[tuple(sorted(row.items()))] += 1
    return rows


async def _splits(indexer, keys, index_id: str, state: str) -> list[dict]:
    response = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"limit": 1000, "state": state},
                                 headers=keys.header(keys.writer))
    return response.json()["splits"]


async def _answer(client, keys, sql: str) -> tuple[int, list]:
    # Forced onto Spark: these plans are small enough for query-api's own engine, and the point is the executors.
    response = await client.post("/v1/query", json={"sql": sql, "engine": "spark"},
                                 headers={**keys.header(keys.admin), "Accept": "application/json"})
    assert response.status_code == 200, response.text
    assert response.headers["x-strata-engine"] == "spark"
    body = response.json()
    return int(response.headers["x-strata-files-scanned"]), sorted(map(repr, body["rows"]))


async def test_merge_build_and_query_run_on_executors_with_only_a_bare_python(
        indexer, planner, query, cluster_query, keys, storage, cluster_factory):
    index_id = await create_indexed_index(indexer, keys, merge_policy=SMALL_POLICY)
    window = open_window()
    batches = [rows_for(window, 400, seed=seed) for seed in range(3)]
    for batch in batches:
        await ingest(indexer, keys, index_id, batch)
    inputs = await _splits(indexer, keys, index_id, "published")
    rows_before = _rows(storage, [s["uri"] for s in inputs])

    job = await run_triggered_merge(planner, keys, cluster_factory, index_id)
    assert job["status"] == "success", job
    [output] = await _splits(indexer, keys, index_id, "published")
    assert _rows(storage, [output["uri"]]) == rows_before  # MC-1, MC-2
    table = pq.read_table(storage.open_input(output["uri"]))
    assert is_sorted(table, SortSchema.parse("metric_name,service,host,timestamp_secs@v1"))  # MC-3
    assert set(table.column_names) == {"metric_name", "service", "host", "message", "timestamp_secs",
                                       "value"}  # MC-4
    assert cluster_factory.shipments == 1

    [built] = await run_until_indexed(indexer, keys, make_runner(indexer, cluster_factory), [output["split_id"]])
    assert built["status"] == "success", built
    assert built["artifact_count"] == len(EXPECTED)

    table_name = f'"{index_id}"'
    host, service = batches[0][0]["host"], batches[0][0]["service"]
    for sql in (f"SELECT count(*) AS n FROM {table_name}",
                f"SELECT host, count(*) AS n FROM {table_name} WHERE host = '{host}' GROUP BY host",
                f"SELECT service, max(value) AS m FROM {table_name} WHERE text_match(message, 'cache') "
                f"GROUP BY service",
                f"SELECT metric_name, host, value FROM {table_name} WHERE service = '{service}' AND value > 60"):
        on_cluster, on_local = await _answer(cluster_query, keys, sql), await _answer(query, keys, sql)
        assert on_cluster == on_local, sql
        assert on_cluster[1], sql  # every query matches rows: equal answers are not two empty ones


async def test_without_the_bundle_a_merge_fails_naming_the_missing_module(
        indexer, planner, keys, cluster: LocalSparkCluster):
    index_id = await create_indexed_index(indexer, keys, merge_policy=SMALL_POLICY)
    window = open_window()
    for seed in range(3):
        await ingest(indexer, keys, index_id, rows_for(window, 50, seed=seed))
    bare = SparkSessionFactory(cluster.remote)  # no bundle_dir: nothing of Strata reaches the executors
    try:
        job = await run_triggered_merge(planner, keys, bare, index_id, until=lambda j: j["failures"] >= 1)
    finally:
        bare.close()
    cause = job["last_error"].splitlines()[0]
    assert cause == f"spark job failed: {MISSING_MODULE}", job["last_error"]
    await planner.post(f"/v1/compaction/jobs/{job['job_id']}/cancel", headers=keys.header(keys.admin))


async def test_without_the_bundle_a_query_answers_502_naming_the_missing_module(
        indexer, keys, cluster_query, cluster: LocalSparkCluster):
    index_id = await create_indexed_index(indexer, keys)
    await ingest(indexer, keys, index_id, rows_for(open_window(), 20))
    state = cluster_query.app.state.strata
    state.spark.close()
    state.spark = SparkSessionFactory(cluster.remote)  # no bundle_dir
    # The engine that runs the app's Spark queries.
    query_service_of(cluster_query.app).runtime.engines.distributed.spark = state.spark
    query = {"sql": f'SELECT count(*) FROM "{index_id}"', "engine": "spark"}
    response = await cluster_query.post("/v1/query", json=query, headers=keys.header(keys.admin))
    problem = assert_problem(response, 502, "spark-job-failed")
    assert problem["detail"] == f"spark job failed: {MISSING_MODULE}"
