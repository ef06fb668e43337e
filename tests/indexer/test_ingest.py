"""Ingestion through the API against real PostgreSQL and storage: windows (TW-1), late data, null timestamps,
sort order of every split (MC-3 at ingestion), key_value_metadata, and bad input that leaves nothing behind."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from strata_core.domain.sort_key import is_sorted
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import read_kv_metadata
from strata_services.sample_data import metrics_index_config
from tests.helpers import (
    ARROW,
    NDJSON,
    arrow_stream,
    db_snapshot,
    ndjson,
    storage_snapshot,
    unique_index_id,
)

pytestmark = pytest.mark.spark


async def _create(indexer, keys, **overrides) -> str:
    index_id = unique_index_id()
    response = await indexer.post("/v1/indexes", json=metrics_index_config(index_id, **overrides),
                                  headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    return index_id


def _current_window(duration: int = 900) -> int:
    now = int(time.time())
    return now - now % duration


async def _ingest(indexer, keys, index_id: str, body: bytes, content_type: str = NDJSON, key: str | None = None,
                  **params):
    headers = {**keys.header(key or keys.writer), "Content-Type": content_type}
    return await indexer.post(f"/v1/indexes/{index_id}/ingest", content=body, headers=headers, params=params)


async def test_tw1_rows_split_exactly_at_window_boundaries(indexer, keys, storage):
    index_id = await _create(indexer, keys)
    w = _current_window() - 900  # the previous window, well inside the late-data window
    rows = [
        {"metric_name": "cpu", "service": "api", "host": "h1", "timestamp_secs": w - 1, "value": 1.0},
        {"metric_name": "cpu", "service": "api", "host": "h1", "timestamp_secs": w, "value": 2.0},
        {"metric_name": "cpu", "service": "api", "host": "h2", "timestamp_secs": w + 899, "value": 3.0},
        {"metric_name": "cpu", "service": "api", "host": "h1", "timestamp_secs": w + 900, "value": 4.0},
    ]
    response = await _ingest(indexer, keys, index_id, ndjson(rows))
    assert response.status_code == 200, response.text
    body = response.json()
    by_window = {s["window_start"]: s["num_rows"] for s in body["splits"]}
    assert by_window == {w - 900: 1, w: 2, w + 900: 1}
    assert body["rows_received"] == 4 and body["rows_written"] == 4 and body["rows_dropped_late"] == 0

    for split in body["splits"]:
        table = pq.read_table(storage.open_input(split["uri"]))
        starts = {t - t % 900 for t in table.column("timestamp_secs").to_pylist()}
        assert starts == {split["window_start"]}


async def test_late_rows_are_dropped_and_counted(indexer, keys):
    index_id = await _create(indexer, keys, late_data_acceptance_secs=600)
    now = int(time.time())
    rows = [{"metric_name": "m", "service": "s", "host": "h", "timestamp_secs": now - 5000, "value": 1.0},
            {"metric_name": "m", "service": "s", "host": "h", "timestamp_secs": now - 4000, "value": 1.0},
            {"metric_name": "m", "service": "s", "host": "h", "timestamp_secs": now - 10, "value": 1.0}]
    response = await _ingest(indexer, keys, index_id, ndjson(rows))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["rows_dropped_late"] == 2
    assert body["rows_written"] == 1


async def test_null_timestamps_go_to_window_zero(indexer, keys):
    index_id = await _create(indexer, keys)
    now = int(time.time())
    rows = [{"metric_name": "m", "service": "s", "host": "h", "timestamp_secs": None, "value": 1.0},
            {"metric_name": "m", "service": "s", "host": "h", "value": 2.0},
            {"metric_name": "m", "service": "s", "host": "h", "timestamp_secs": now, "value": 3.0}]
    body = (await _ingest(indexer, keys, index_id, ndjson(rows))).json()
    by_window = {s["window_start"]: s["num_rows"] for s in body["splits"]}
    assert by_window[0] == 2
    assert body["rows_null_timestamp"] == 2


async def test_mc3_every_split_is_sorted_with_null_rules(indexer, keys, storage):
    index_id = await _create(indexer, keys, sort_schema="metric_name,-host,timestamp_secs@v1")
    w = _current_window()
    rows = []
    for i, (metric, host) in enumerate([("b", "x"), (None, "y"), ("a", None), ("a", "z"), ("b", None), ("a", "x"),
                                        (None, None), ("c", "a")]):
        rows.append({"metric_name": metric, "service": "s", "host": host, "timestamp_secs": w + (i * 37) % 60,
                     "value": float(i)})
    body = (await _ingest(indexer, keys, index_id, ndjson(rows))).json()
    [split] = body["splits"]
    table = pq.read_table(storage.open_input(split["uri"]))
    assert is_sorted(table, SortSchema.parse("metric_name,-host,timestamp_secs@v1"))
    metrics = table.column("metric_name").to_pylist()
    # ascending: nulls last
    assert metrics[-2:] == [None, None]
    # within metric "a", host descending: null first
    hosts_of_a = [h for m, h in zip(metrics, table.column("host").to_pylist(), strict=True) if m == "a"]
    assert hosts_of_a == [None, "z", "x"]


async def test_kv_metadata_describes_the_split(indexer, keys, storage):
    index_id = await _create(indexer, keys)
    w = _current_window()
    rows = [{"metric_name": "cpu", "service": "api", "host": f"h{i}", "timestamp_secs": w + i, "value": i * 1.5}
            for i in range(10)]
    [split] = (await _ingest(indexer, keys, index_id, ndjson(rows))).json()["splits"]
    footer = pq.read_metadata(storage.open_input(split["uri"]))
    kv = read_kv_metadata(footer.metadata)
    assert kv["sort_schema"] == "metric_name,service,host,timestamp_secs@v1"
    assert int(kv["window_start"]) == w
    assert int(kv["window_duration_secs"]) == 900
    assert kv["split_id"] == split["split_id"]
    stats = json.loads(kv["column_stats"])
    assert stats["host"]["min"] == "h0" and stats["host"]["max"] == "h9"
    assert stats["timestamp_secs"] == {"type": "i64", "min": w, "max": w + 9, "null_count": 0,
                                       "regex": None}
    assert stats["metric_name"]["regex"] == "^(?:cpu)$"
    assert footer.row_group(0).column(0).statistics.has_min_max

    listed = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()
    [meta] = listed["splits"]
    assert meta["state"] == "published"
    assert meta["column_stats"]["value"] == {"type": "f64", "min": 0.0, "max": 13.5, "null_count": 0, "regex": None}
    assert meta["time_range_start"] == w and meta["time_range_end"] == w + 9
    assert meta["row_groups"][0]["num_rows"] == 10
    assert meta["size_bytes"] == storage.size(split["uri"])


async def test_arrow_ipc_stream_is_accepted(indexer, keys):
    index_id = await _create(indexer, keys)
    w = _current_window()
    table = pa.table({"metric_name": ["a", "b"], "service": ["s", "s"], "host": ["h", "h"],
                      "timestamp_secs": pa.array([w, w + 1], pa.int32()), "value": [1.0, 2.0]})
    response = await _ingest(indexer, keys, index_id, arrow_stream(table), ARROW)
    assert response.status_code == 200, response.text
    assert response.json()["rows_written"] == 2


@pytest.mark.parametrize(
    ("body", "content_type", "status", "fragment"),
    [
        (b'{"metric_name": "a", "timestamp_secs": 1}\n{"metric_name": \n', NDJSON, 400, "line 2"),
        (b'{"metric_name": "a"}\n{"metric_name": "b"}\n{"metric_name": 7}\n', NDJSON, 400, "line 3"),
        (b'{"metric_name": "a", "nope": 1}\n', NDJSON, 400, "'nope'"),
        (b"\xff\xff\xff\xff garbage", ARROW, 400, "arrow"),
        (b'{"metric_name": "a"}\n', "text/csv", 415, "text/csv"),
        (b"x" * (4 * 1024 * 1024 + 1), NDJSON, 413, "limit"),
    ],
    ids=["ndjson-syntax", "ndjson-type", "ndjson-unknown-field", "arrow-garbage", "media-type", "oversize"],
)
async def test_bad_ingest_bodies_change_nothing(indexer, keys, storage, database_url, body, content_type, status,
                                                fragment):
    index_id = await _create(indexer, keys)
    before = (await db_snapshot(database_url), storage_snapshot(storage))
    response = await _ingest(indexer, keys, index_id, body, content_type)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert fragment in response.json()["detail"]
    assert (await db_snapshot(database_url), storage_snapshot(storage)) == before


async def test_ingest_into_unknown_index_is_404(indexer, keys):
    response = await _ingest(indexer, keys, "no-such-index", b'{"metric_name": "a"}\n')
    assert response.status_code == 404
    assert "no-such-index" in response.json()["detail"]


async def test_ingest_needs_a_writer_key(indexer, keys):
    index_id = await _create(indexer, keys)
    assert (await indexer.post(f"/v1/indexes/{index_id}/ingest", content=b"", headers={"Content-Type": NDJSON})
            ).status_code == 401
    assert (await _ingest(indexer, keys, index_id, b"", key="wrong-key")).status_code == 401
    assert (await _ingest(indexer, keys, index_id, b"", key=keys.query_acme)).status_code == 403


async def test_tenant_bound_writer_writes_only_its_partition(indexer, keys):
    index_id = await _create(indexer, keys)
    w = _current_window()
    row = ndjson([{"metric_name": "a", "service": "s", "host": "h", "timestamp_secs": w, "value": 1.0}])
    denied = await _ingest(indexer, keys, index_id, row, key=keys.writer_acme, partition_id="globex")
    assert denied.status_code == 403
    allowed = await _ingest(indexer, keys, index_id, row, key=keys.writer_acme)
    assert allowed.status_code == 200
    listed = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()
    assert [s["partition_id"] for s in listed["splits"]] == ["acme"]


async def test_spark_reads_ingested_splits_with_its_default_reader(indexer, keys, spark_factory):
    """Queries scan splits with Spark: its vectorized Parquet reader must accept every encoding we write (it
    rejects BYTE_STREAM_SPLIT, for one)."""
    index_id = await _create(indexer, keys)
    w = _current_window()
    rows = [{"metric_name": "cpu", "service": "a", "host": f"h{i}", "timestamp_secs": w + i, "value": i / 3}
            for i in range(50)]
    [split] = (await _ingest(indexer, keys, index_id, ndjson(rows))).json()["splits"]
    frame = spark_factory.session().read.parquet(split["uri"])
    assert frame.count() == 50
    assert sorted(r["value"] for r in frame.select("value").collect()) == sorted(r["value"] for r in rows)
