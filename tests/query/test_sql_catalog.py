"""The SQL catalog is what Strata speaks (docs/sql.md): the page is generated from it and current, and every example
in it (the catalog's entries and the clients' queries, Grafana's macros expanded as its data sources expand them)
answers through the HTTP API on both engines exactly as DuckDB answers the same SQL over the same Parquet files.
Approximate functions are checked for their shape only (their bound is documented)."""

from __future__ import annotations

import asyncio
import io
import math
import random
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flight_sql
import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from strata_core.sql import docs
from strata_core.sql.catalog import CLIENT_EXAMPLES, ENTRIES, EXAMPLE_FIELDS
from tests.helpers import ARROW, arrow_stream, delete_index, unique_index_id
from tests.planner.compaction_helpers import open_window

ROOT = Path(__file__).resolve().parents[2]
HOSTS = [f"host-{n}" for n in range(1, 7)]
MESSAGES = ["disk full on /dev/sda1", "error 42: timeout", "ok", "Disk-Full again", "", None]


def test_the_reference_page_is_generated_from_the_catalog():
    assert (ROOT / "docs" / "sql.md").read_text() == docs.render(), (
        "docs/sql.md is stale: run .tools/bin/uv run python -m strata_core.sql.docs")


def _rows(window: int, count: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    return pa.table({
        "ts": pa.array([(window + rng.randrange(900)) * 1_000_000 + rng.randrange(1_000_000) for _ in range(count)],
                       pa.timestamp("us", tz="UTC")),
        "host": pa.array([rng.choice(HOSTS) for _ in range(count)], pa.string()),
        "service": pa.array([rng.choice(["api-gw", "db", "cache", None]) for _ in range(count)], pa.string()),
        "value": pa.array([rng.choice([None, round(rng.uniform(0, 100), 3)]) if rng.random() < 0.1
                           else round(rng.uniform(0, 100), 3) for _ in range(count)], pa.float64()),
        "code": pa.array([rng.choice([200, 200, 404, 500, None]) for _ in range(count)], pa.int64()),
        "ok": pa.array([rng.choice([True, True, False, None]) for _ in range(count)], pa.bool_()),
        "message": pa.array([rng.choice(MESSAGES) for _ in range(count)], pa.string()),
    })


@pytest.fixture(scope="module")
async def example_index(indexer, keys):
    index_id = unique_index_id("sqlcat")
    config = {"index_id": index_id, "fields": [{"name": n, "type": t} for n, t in EXAMPLE_FIELDS],
              "timestamp_field": "ts", "sort_schema": "host,ts@v1", "window_duration_secs": 900,
              "compaction_start_time": 0, "late_data_acceptance_secs": 3600,
              "query": {"default_lookback_secs": 86400}}
    response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    window = open_window() - 900
    for seed in range(2):
        response = await indexer.post(f"/v1/indexes/{index_id}/ingest",
                                      content=arrow_stream(_rows(window, 300, seed)),
                                      headers={**keys.header(keys.writer), "Content-Type": ARROW})
        assert response.status_code == 200, response.text
    listing = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "published"},
                                headers=keys.header(keys.writer))
    paths = [urlparse(s["uri"]).path for s in listing.json()["splits"]]
    yield index_id, paths, window
    await delete_index(indexer, keys, index_id)


def _cell(value):
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return round(moment.timestamp() * 1_000_000)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return "NaN" if isinstance(value, float) and math.isnan(value) else float(value)
    return value


def _values(rows) -> list[tuple]:
    """The rows in one order (floats rounded for sorting only: engines sum in different orders)."""
    cells = [tuple(_cell(v) for v in row.values()) for row in rows]
    return sorted(cells, key=lambda row: repr(tuple(round(v, 3) if isinstance(v, float) else v for v in row)))


def _same(left: list[dict], right: list[dict]) -> bool:
    a, b = _values(left), _values(right)
    return len(a) == len(b) and all(
        len(x) == len(y) and all(math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9) if isinstance(u, float)
                                 and isinstance(v, float) else u == v for u, v in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True))


_DATE_BIN = re.compile(r"date_bin\((?P<width>[^,]+),\s*(?P<ts>[^,)]+)(?:,\s*timestamp\s*'(?P<origin>[^']*)')?\)",
                       re.IGNORECASE)


def _as_duckdb(sql: str) -> str:
    """DuckDB has no date_bin: its time_bucket with date_bin's default origin, the Unix epoch."""
    return _DATE_BIN.sub(lambda m: f"time_bucket({m['width']}, {m['ts']}, TIMESTAMPTZ "
                                   f"'{(m['origin'] or '1970-01-01T00:00:00Z').replace('Z', '+00')}')", sql)


def _reference(paths: list[str], sql: str) -> list[dict]:
    sql = _as_duckdb(sql)
    connection = duckdb.connect()
    connection.execute(f"CREATE VIEW metrics AS SELECT * FROM read_parquet({paths!r}, union_by_name = true)")
    return connection.sql(sql.format(t="metrics")).to_arrow_table().to_pylist()


async def _run(query, keys, sql: str, engine: str) -> list[dict]:
    response = await query.post("/v1/query", json={"sql": sql, "engine": engine},
                                headers={**keys.header(keys.admin), "Accept": ARROW})
    assert response.status_code == 200, (engine, sql, response.text)
    return ipc.open_stream(io.BytesIO(response.content)).read_all().to_pylist()


async def spark_or_refused(query, keys, sql: str, local: list[dict]) -> list[dict]:
    """Spark's answer; a join runs on the local engine only (its answer stands for both), and asking Spark for it
    is a 422 saying so."""
    if " JOIN " not in sql.upper():
        return await _run(query, keys, sql, "spark")
    response = await query.post("/v1/query", json={"sql": sql, "engine": "spark"}, headers=keys.header(keys.admin))
    assert response.status_code == 422 and "local engine" in response.json()["detail"], response.text
    return local


def _rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


EXAMPLES = [pytest.param(e.example, e.exact, id=e.title) for e in ENTRIES] + [
    pytest.param(expanded, True, id=title) for title, _, expanded in CLIENT_EXAMPLES]


def _flight(port: int, key: str, sql: str, engine: str) -> list[dict]:
    options = {adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {key}",
               "adbc.flight.sql.rpc.call_header.x-strata-engine": engine}
    with flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True, db_kwargs=options) as connection, \
            connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetch_arrow_table().to_pylist()


@pytest.mark.spark
@pytest.mark.parametrize("expanded", [pytest.param(e, id=t) for t, _, e in CLIENT_EXAMPLES])
async def test_grafana_expansions_answer_over_flight_sql_on_both_engines(query, keys, example_index, expanded):
    index_id, paths, window = example_index
    start, end = window - 600, window + 1800
    values = {"start": _rfc3339(start), "end": _rfc3339(end), "start_s": start, "end_s": end}
    reference = _reference(paths, expanded.format(t="{t}", **values))
    sql = expanded.format(t=f'"{index_id}"', **values)
    for engine in ("local", "spark"):
        answer = await asyncio.to_thread(_flight, query.app.state.flight.port, keys.admin, sql, engine)
        assert _same(answer, reference), (engine, sql)


@pytest.mark.spark
@pytest.mark.parametrize(("example", "exact"), EXAMPLES)
async def test_every_example_answers_as_duckdb_on_both_engines(query, keys, example_index, example, exact):
    index_id, paths, window = example_index
    start, end = window - 600, window + 1800
    values = {"start": _rfc3339(start), "end": _rfc3339(end), "start_s": start, "end_s": end}
    sql = example.format(t=f'"{index_id}"', **values)
    local = await _run(query, keys, sql, "local")
    spark = await spark_or_refused(query, keys, sql, local)
    assert local, sql
    if "text_match" in example:
        assert _same(local, spark), sql
        return
    reference = _reference(paths, example.format(t="{t}", **values))
    if not exact:
        assert len(local) == len(spark) == len(reference), sql
        return
    assert _same(local, reference), (sql, _values(local)[:5], _values(reference)[:5])
    assert _same(spark, reference), (sql, _values(spark)[:5], _values(reference)[:5])
