"""The Time Series Benchmark Suite's 15 devops query types, written as TSBS's TimescaleDB generator writes them
(`time_bucket`, `hostname IN`, its timestamp literals, a CTE, DISTINCT ON), answer through query-api's HTTP API and
its Flight SQL door on both engines exactly as DuckDB answers them over the same published Parquet files. The
data is TSBS's cpu-only rows for 20 hosts over one hour (`bench/tsbs.py`); `bench tsbs` times the same queries."""

from __future__ import annotations

import asyncio
import io
import time
from urllib.parse import urlparse

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flight_sql
import duckdb
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from bench import tsbs
from tests.helpers import ARROW, arrow_stream, delete_index, unique_index_id

pytestmark = [pytest.mark.postgres, pytest.mark.spark]
ENGINES = ["local", "spark"]


@pytest.fixture(scope="module")
async def cpu(indexer, keys):
    """The index, its files' paths and one query of each type over it."""
    now = int(time.time())
    data = tsbs.recent(hosts=20, span_secs=3600, now=now)
    index_id = unique_index_id("tsbs")
    response = await indexer.post("/v1/indexes", json=tsbs.index_config(index_id, data, now),
                                  headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=arrow_stream(tsbs.cpu_table(data)),
                                  headers={**keys.header(keys.writer), "Content-Type": ARROW})
    assert response.status_code == 200, response.text
    listing = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "published"},
                                headers=keys.header(keys.writer))
    paths = [urlparse(s["uri"]).path for s in listing.json()["splits"]]
    assert sum(s["num_rows"] for s in listing.json()["splits"]) == data.rows
    # Seed 9 picks a host whose usage_user passes 90 within the window, so high-cpu-1 answers rows.
    yield index_id, paths, tsbs.queries(data, table=tsbs.quoted(index_id), seed=9)
    await delete_index(indexer, keys, index_id)


def _duckdb(paths: list[str], index_id: str, sql: str) -> pa.Table:
    connection = duckdb.connect()
    connection.execute(f"CREATE VIEW \"{index_id}\" AS SELECT * FROM read_parquet({paths!r}, union_by_name = true)")
    return connection.sql(tsbs.duckdb_text(sql)).to_arrow_table()


async def _http(query, keys, sql: str, engine: str) -> pa.Table:
    response = await query.post("/v1/query", json={"sql": sql, "engine": engine},
                                headers={**keys.header(keys.admin), "Accept": ARROW})
    assert response.status_code == 200, (engine, response.text)
    assert response.headers["x-strata-engine"] == engine
    return ipc.open_stream(io.BytesIO(response.content)).read_all()


def _flight(port: int, key: str, sql: str, engine: str) -> pa.Table:
    options = {adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {key}",
               "adbc.flight.sql.rpc.call_header.x-strata-engine": engine}
    with flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True, db_kwargs=options) as connection, \
            connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetch_arrow_table()


def _expected(cpu, kind: str) -> tuple[str, tuple]:
    index_id, paths, texts = cpu
    expected = tsbs.answer(_duckdb(paths, index_id, texts[kind]), kind not in tsbs.UNORDERED)
    assert expected[1], f"{kind} answers no rows over the test's data: it would check nothing"
    return texts[kind], expected


@pytest.mark.parametrize("kind", tsbs.QUERY_TYPES)
async def test_tsbs_query_answers_as_duckdb_on_both_engines_over_http_and_flight_sql(query, keys, cpu, kind):
    sql, expected = _expected(cpu, kind)
    ordered = kind not in tsbs.UNORDERED
    for engine in ENGINES:
        assert tsbs.answer(await _http(query, keys, sql, engine), ordered) == expected, (kind, engine, "http")
        over_flight = await asyncio.to_thread(_flight, query.app.state.flight.port, keys.admin, sql, engine)
        assert tsbs.answer(over_flight, ordered) == expected, (kind, engine, "flight sql")
