"""query-api over a real indexed dataset on the session's Spark Connect server: results equal DuckDB's over the
same files, pruning counted stage by stage, formats by Accept header, tenancy, async plans, bad input."""

from __future__ import annotations

import asyncio
import io
import json
import math
from urllib.parse import urlparse

import duckdb
import pyarrow.ipc as ipc
import pytest

from strata_query.dependencies import query_service_of
from tests.helpers import delete_index
from tests.planner.compaction_helpers import open_window
from tests.query.query_data import build_dataset

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
async def dataset(indexer, keys, spark_factory):
    data = await build_dataset(indexer, keys, spark_factory, open_window() - 1800)
    yield data
    await delete_index(indexer, keys, data.index_id)


def _duck(dataset, sql: str) -> list[tuple]:
    """The reference answer: DuckDB over the same Parquet files (every published split of the index)."""
    paths = [urlparse(uri).path for uri in dataset.published_uris]
    connection = duckdb.connect()
    connection.execute(f"CREATE VIEW data AS SELECT * FROM read_parquet({paths!r}, union_by_name = true)")
    return connection.execute(sql.replace(dataset.table, "data")).fetchall()


def _normal(rows) -> list[tuple]:
    def cell(v):
        if isinstance(v, float):
            return None if math.isnan(v) else round(v, 6)
        return v
    return sorted((tuple(cell(v) for v in row) for row in rows), key=repr)


async def _query(query, keys, sql: str, key=None, accept="application/json", **extra):
    return await query.post("/v1/query", json={"sql": sql, **extra},
                            headers={**keys.header(key or keys.admin), "Accept": accept})


QUERIES = [
    "SELECT count(*) FROM {i}",
    "SELECT host, count(*) AS n FROM {i} WHERE host = 'host-03' GROUP BY host",
    "SELECT service, count(*), min(value), max(value) FROM {i} WHERE host IN ('host-01', 'host-30') GROUP BY service",
    "SELECT count(*) FROM {i} WHERE value > 90 AND service = 'db'",
    "SELECT metric_name, avg(value) AS a FROM {i} WHERE timestamp_secs BETWEEN {w} AND {w} + 899 GROUP BY metric_name",
    "SELECT count(*) FROM {i} WHERE value IS NULL",
    "SELECT count(*) FROM {i} WHERE NOT (service = 'api' OR host LIKE 'host-1%')",
    "SELECT host, sum(value) FROM {i} WHERE timestamp_secs >= {w} + 900 AND host != 'host-10' GROUP BY host",
    "SELECT count(*) FROM {i} WHERE text_match(message, 'disk full')",
    "SELECT timestamp_secs, host, value FROM {i} WHERE host = 'host-39' ORDER BY timestamp_secs, value LIMIT 5",
]
DUCK_TEXT = "regexp_matches(lower(message), '(^|[^a-z0-9])disk([^a-z0-9]|$)') AND " \
            "regexp_matches(lower(message), '(^|[^a-z0-9])full([^a-z0-9]|$)')"


@pytest.mark.parametrize("template", QUERIES)
async def test_results_equal_duckdb_over_the_same_rows(query, keys, dataset, template):
    sql = template.format(i=dataset.table, w=dataset.window)
    response = await _query(query, keys, sql)
    assert response.status_code == 200, response.text
    body = response.json()
    got = [tuple(row.values()) for row in body["rows"]]
    reference = sql.replace("text_match(message, 'disk full')", DUCK_TEXT)
    assert _normal(got) == _normal(_duck(dataset, reference)), sql
    assert body["summary"]["files_scanned"] == int(response.headers["x-strata-files-scanned"])


async def test_explain_counts_each_stage_and_prunes_on_equality(query, keys, dataset):
    response = await query.post("/v1/query/explain", headers=keys.header(keys.admin), json={
        "sql": f"SELECT * FROM {dataset.table} WHERE host = 'host-03' AND timestamp_secs >= {dataset.window}"})
    assert response.status_code == 200, response.text
    plan = response.json()
    stages = {s["stage"]: s for s in plan["stages"]}
    assert list(stages) == ["time_range", "split_min_max", "zone_maps", "blooms_bitmaps", "full_text",
                            "read_shaping"]
    for before, after in zip(plan["stages"], plan["stages"][1:], strict=False):
        assert after["files_before"] == before["files_after"]
    # host-03 lives in the first window's first file only (hosts are partitioned by file in the dataset).
    assert plan["total_files"] < stages["time_range"]["files_after"]
    assert plan["time_range"]["source"] == "where" and plan["time_range"]["intervals"][0][0] == dataset.window
    for part in plan["files"]:
        assert part["columns"] == sorted(part["columns"]) and "host" in part["columns"]
        assert len(part["byte_ranges"]) == len(part["row_groups"])
    assert plan["total_bytes"] == sum(p["bytes"] for p in plan["files"]) > 0


async def test_without_a_time_bound_the_default_lookback_applies_and_the_plan_says_so(query, keys, dataset):
    plan = (await query.post("/v1/query/explain", headers=keys.header(keys.admin),
                             json={"sql": f"SELECT count(*) FROM {dataset.table}"})).json()
    assert plan["time_range"]["source"] == "default_lookback"
    assert plan["time_range"]["default_lookback_secs"] == 3 * 86400


async def test_a_file_without_published_artifacts_is_pruned_with_parquet_statistics(query, keys, dataset):
    plan = (await query.post("/v1/query/explain", headers=keys.header(keys.admin), json={
        "sql": f"SELECT * FROM {dataset.table} WHERE timestamp_secs >= {dataset.window + 1800}"})).json()
    assert {p["split_id"]: p["pruned_with"] for p in plan["files"]}[dataset.unindexed_split_id] == \
        "parquet_statistics"


@pytest.mark.parametrize("accept", ["application/vnd.apache.arrow.stream", "application/x-ndjson"])
async def test_results_stream_as_arrow_or_ndjson(query, keys, dataset, accept):
    # Spark orders nulls first, DuckDB last: compare on non-null values.
    sql = (f"SELECT host, value FROM {dataset.table} WHERE host = 'host-05' AND value IS NOT NULL "
           "ORDER BY value LIMIT 50")
    response = await _query(query, keys, sql, accept=accept)
    assert response.status_code == 200 and response.headers["content-type"].startswith(accept)
    if accept.endswith("arrow.stream"):
        rows = ipc.open_stream(io.BytesIO(response.content)).read_all().to_pylist()
    else:
        rows = [json.loads(line) for line in response.text.splitlines()]
    assert _normal([tuple(r.values()) for r in rows]) == _normal(_duck(dataset, sql))


async def test_a_tenant_sees_only_its_partition_whatever_the_sql_says(query, keys, dataset):
    mine = await _query(query, keys, f"SELECT count(*) AS n FROM {dataset.table}", key=keys.query_acme)
    assert mine.json()["rows"] == [{"n": len([r for r in dataset.rows if r["partition_id"] == "acme"])}]
    theirs = await _query(query, keys, f"SELECT count(*) AS n FROM {dataset.table} "
                                       f"WHERE partition_id = 'default'", key=keys.query_acme)
    assert theirs.json()["rows"] == [{"n": 0}]
    plan = (await query.post("/v1/query/explain", headers=keys.header(keys.query_acme),
                             json={"sql": f"SELECT * FROM {dataset.table}"})).json()
    assert {p["partition_id"] for p in plan["files"]} == {"acme"} and plan["tenant"] == "acme"


async def test_async_plans_complete_and_match_explain(query, keys, dataset):
    sql = f"SELECT * FROM {dataset.table} WHERE host IN ('host-01', 'host-02')"
    submitted = await query.post("/v1/query/plans", headers=keys.header(keys.admin), json={"sql": sql})
    assert submitted.status_code == 202 and submitted.json()["status"] == "submitted"
    plan_id = submitted.json()["plan_id"]
    for _ in range(100):
        status = (await query.get(f"/v1/query/plans/{plan_id}", headers=keys.header(keys.admin))).json()
        if status["status"] != "submitted":
            break
        await asyncio.sleep(0.05)
    assert status["status"] == "completed"
    explained = (await query.post("/v1/query/explain", headers=keys.header(keys.admin), json={"sql": sql})).json()
    assert [f["split_id"] for f in status["plan"]["files"]] == [f["split_id"] for f in explained["files"]]
    # Cancelling a finished plan keeps its status; another tenant cannot see it.
    assert (await query.delete(f"/v1/query/plans/{plan_id}", headers=keys.header(keys.admin))).json()["status"] \
        == "completed"
    assert (await query.get(f"/v1/query/plans/{plan_id}", headers=keys.header(keys.query_acme))).status_code == 404


@pytest.mark.parametrize(("sql", "status", "needle"), [
    ("SELECT count(* FROM {i}", 400, "line 1"),
    ("SELECT nope FROM {i}", 422, "nope"),
    ("SELECT * FROM not_an_index", 422, "not_an_index"),
    ("SELECT * FROM {i} WHERE text_match(value, 'x')", 422, "value"),
])
async def test_bad_queries_are_clear_errors(query, keys, dataset, sql, status, needle):
    response = await _query(query, keys, sql.format(i=dataset.table))
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert needle in response.text


async def test_no_key_is_401_and_a_timeout_interrupts_the_query(query, keys, dataset):
    assert (await query.post("/v1/query", json={"sql": "SELECT 1"})).status_code == 401
    response = await _query(query, keys, f"SELECT host, count(*) FROM {dataset.table} GROUP BY host",
                            timeout_secs=0.001)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"].endswith("/query-timeout")
    assert "interrupted" in problem["detail"] and "time limit of 0.001 s" in problem["detail"]
    assert query_service_of(query.app).registry.running_queries == {}


async def test_a_plan_over_the_file_limit_is_a_422_with_the_limit(settings, keys, dataset):
    import httpx
    from asgi_lifespan import LifespanManager

    from strata_query.app import create_app

    app = create_app(settings.model_copy(update={"query_max_files": 2}))
    async with LifespanManager(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                                       base_url="http://q") as client:
        response = await client.post("/v1/query/explain", headers=keys.header(keys.admin),
                                     json={"sql": f"SELECT * FROM {dataset.table}"})
    assert response.status_code == 422 and "limit of 2" in response.json()["detail"]


async def test_spans_and_metrics_of_a_query(query, keys, dataset):
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    response = await _query(query, keys, f"SELECT count(*) FROM {dataset.table} WHERE host = 'host-07'")
    assert response.status_code == 200
    names = {span.name for span in exporter.get_finished_spans()}
    assert {"plan_build", "index_prune", "fetch_parquet", "execute", "serialize_result"} <= names
    metrics = (await query.get("/metrics")).text
    for family in ("strata_query_phase_seconds", "strata_query_pruned_total", "strata_query_bytes_scanned_total",
                   "strata_query_rows_scanned_total"):
        assert family in metrics
    assert 'strata_query_pruned_total{stage="blooms_bitmaps",unit="files"}' in metrics


@pytest.mark.parametrize("engine", ["local", "spark"])
async def test_delete_interrupts_a_running_query(settings, keys, dataset, engine):
    import httpx
    from asgi_lifespan import LifespanManager

    from strata_query.app import create_app

    app = create_app(settings.model_copy(update={"fault_query_scan_delay_secs": 30.0}))
    async with LifespanManager(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://q",
                                                       timeout=60) as client:
        running_queries = query_service_of(app).registry.running_queries
        started = asyncio.get_running_loop().time()
        running = asyncio.create_task(_query(client, keys, f"SELECT count(*) FROM {dataset.table}", engine=engine))
        while not running_queries:
            await asyncio.sleep(0.05)
        [query_id] = running_queries
        await asyncio.sleep(1.0)  # let Spark start the scan tasks
        cancel = await client.delete(f"/v1/query/{query_id}", headers=keys.header(keys.admin))
        assert cancel.status_code == 202
        response = await running
        assert response.status_code == 409 and query_id in response.json()["detail"], response.text
        # Interrupted, not waited out: well before the injected 30 s.
        assert asyncio.get_running_loop().time() - started < 25
        assert running_queries == {}
        unknown = await client.delete(f"/v1/query/{query_id}", headers=keys.header(keys.admin))
        assert unknown.status_code == 404


async def test_a_small_finished_result_is_sent_whole_and_a_large_one_streams(query, keys, dataset):
    small = await _query(query, keys, f"SELECT host, count(*) AS n FROM {dataset.table} GROUP BY host")
    assert small.status_code == 200 and "content-length" in small.headers
    assert _normal(tuple(r.values()) for r in small.json()["rows"]) == _normal(
        _duck(dataset, f"SELECT host, count(*) AS n FROM {dataset.table} GROUP BY host"))
    sql = f"SELECT host, timestamp_secs, value FROM {dataset.table}"
    for accept in ("application/json", "application/x-ndjson"):
        large = await _query(query, keys, sql, accept=accept, engine="local")
        assert large.status_code == 200 and "content-length" not in large.headers
        rows = large.json()["rows"] if accept == "application/json" else [
            json.loads(line) for line in large.text.splitlines()]
        assert len(rows) == len(_duck(dataset, sql)) > 1_000
