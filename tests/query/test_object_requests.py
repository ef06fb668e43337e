"""Object-store requests of queries: EXPLAIN predicts the reads the local engine makes, a query's summary and
/metrics count them, footers are fetched once across queries, and a split whose object is gone is a storage
problem naming it rather than a bare 500."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from asgi_lifespan import LifespanManager

from strata_query.app import create_app
from tests.indexer.indexing_helpers import ingest, rows_for
from tests.planner.compaction_helpers import open_window

FRESH = {"Cache-Control": "no-cache"}


async def _explain(client, keys, sql: str) -> dict:
    response = await client.post("/v1/query/explain", json={"sql": sql}, headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    return response.json()


async def _run(client, keys, sql: str) -> dict:
    response = await client.post("/v1/query", json={"sql": sql, "engine": "local"},
                                 headers={**keys.header(keys.admin), **FRESH})
    assert response.status_code == 200, response.text
    return response.json()["summary"]["object_requests"]


async def _three_files(indexer, keys, index_id: str) -> int:
    window = open_window() - 1800
    for seed in (1, 2, 3):
        await ingest(indexer, keys, index_id, rows_for(window, 300, seed=seed))
    return window


def _scan_only(requests: dict) -> dict:
    """The requests of a scan: reads only."""
    return {**requests, "puts": 0, "lists": 0, "deletes": 0, "bytes_written": 0}


async def test_explain_predicts_the_reads_of_the_local_engine(query, indexer, keys, index_id):
    window = await _three_files(indexer, keys, index_id)
    sql = (f'SELECT host, service, count(*) AS n, max(value) AS m FROM "{index_id}" '
           f"WHERE timestamp_secs >= {window - 60} AND value > 10 GROUP BY host, service")
    plan = await _explain(query, keys, sql)
    predicted = plan["object_requests"]
    assert predicted["gets"] == sum(len(reads) for f in plan["files"] for reads in f["ranged_gets"]) > 0
    assert predicted["heads"] == plan["total_files"] == 3
    # Coalescing never reads less than the column chunks, and gaps between them are small.
    assert predicted["bytes_read"] >= plan["total_bytes"]
    # Planned by EXPLAIN (footers cached, plan kept): the run's requests are its scan's alone.
    assert await _run(query, keys, sql) == _scan_only(predicted)


async def test_a_fresh_query_fetches_footers_once_and_the_next_plans_from_cache(settings, indexer, keys, index_id):
    window = await _three_files(indexer, keys, index_id)
    # No RAM tier: every run reads its row groups, so what differs between runs is what planning fetched.
    app = create_app(settings.model_copy(update={"query_hot_cache_bytes": 0}))
    async with LifespanManager(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                                       base_url="http://q") as client:
        first_sql = f'SELECT count(*) AS n, sum(value) AS s FROM "{index_id}" WHERE timestamp_secs >= {window - 60}'
        # Another statement over the same files: planned again, not served from the plan cache.
        second_sql = f'SELECT count(*) AS n, sum(value) AS s FROM "{index_id}" WHERE timestamp_secs >= {window - 61}'
        first = await _run(client, keys, first_sql)
        second = await _run(client, keys, second_sql)
        scan = (await _explain(client, keys, second_sql))["object_requests"]
        metrics = (await client.get("/metrics")).text
    # The first run opened and read each file's footer (a HEAD and a GET per file) before its scan.
    assert first["heads"] == scan["heads"] + 3
    assert first["gets"] == scan["gets"] + 3
    # The second planned from the cached footers: its requests are its scan's alone.
    assert second == _scan_only(scan)
    counted = re.search(r'strata_object_store_requests_total\{kind="get",operation="query"\} ([0-9.e+]+)', metrics)
    assert counted and float(counted.group(1)) >= first["gets"] + second["gets"]
    assert re.search(r'strata_object_store_bytes_total\{direction="read",operation="query"\} [0-9.e+]+', metrics)


async def test_a_split_whose_object_is_missing_is_a_storage_problem_naming_it(query, indexer, keys, index_id,
                                                                              settings):
    window = await _three_files(indexer, keys, index_id)
    splits = await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.admin))
    assert splits.status_code == 200, splits.text
    uri = splits.json()["splits"][0]["uri"]
    Path(urlparse(uri).path).unlink()
    response = await query.post("/v1/query", headers=keys.header(keys.admin),
                                json={"sql": f'SELECT count(*) FROM "{index_id}" WHERE timestamp_secs >= {window}'})
    assert response.status_code == 503, response.text
    problem = response.json()
    assert problem["type"].endswith("storage-unavailable")
    assert uri in problem["detail"] and "missing" in problem["detail"]


@pytest.mark.spark
async def test_a_spark_query_counts_its_executors_reads(query, indexer, keys, index_id):
    window = await _three_files(indexer, keys, index_id)
    sql = (f'SELECT host, count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {window - 60} '
           f"AND value > 10 GROUP BY host")
    plan = await _explain(query, keys, sql)
    predicted = plan["object_requests"]
    response = await query.post("/v1/query", json={"sql": sql, "engine": "spark"},
                                headers={**keys.header(keys.admin), **FRESH})
    assert response.status_code == 200, response.text
    summary = response.json()["summary"]
    assert summary["engine"] == "spark"
    counted = summary["object_requests"]
    # Planned by EXPLAIN: what the run counts is its executors' reads. Each task opens its file once and reads
    # the footer the driver's cache holds (one GET: the files' footers are under Arrow's first 64 KiB read), then
    # the same coalesced column chunks as the local engine.
    files = plan["total_files"]
    assert counted["heads"] == files == 3
    assert counted["gets"] == predicted["gets"] + files
    assert counted["bytes_read"] > predicted["bytes_read"]
    assert counted == _scan_only(counted)
    metrics = (await query.get("/metrics")).text
    spark_gets = re.search(r'strata_object_store_requests_total\{kind="head",operation="query"\} ([0-9.e+]+)',
                           metrics)
    assert spark_gets and float(spark_gets.group(1)) >= counted["heads"]
