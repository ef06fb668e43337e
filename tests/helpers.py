"""Builders shared by the integration tests: index configs, request bodies, and before/after snapshots."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from strata_shared.errors import PROBLEM_BASE
from strata_shared.storage import ObjectStore

NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"


def unique_index_id(prefix: str = "idx") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def metrics_index(index_id: str, **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "index_id": index_id,
        "fields": [
            {"name": "metric_name", "type": "string"},
            {"name": "service", "type": "string"},
            {"name": "host", "type": "string"},
            {"name": "timestamp_secs", "type": "i64"},
            {"name": "value", "type": "f64"},
        ],
        "timestamp_field": "timestamp_secs",
        "sort_schema": "metric_name,service,host,timestamp_secs@v1",
        "window_duration_secs": 900,
        "compaction_start_time": 0,
        "late_data_acceptance_secs": 3600,
    }
    config.update(overrides)
    return config


def assert_problem(response, status: int, slug: str) -> dict[str, Any]:
    """The response is an RFC 9457 problem with this status and type; returns its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == PROBLEM_BASE + slug
    assert body["status"] == status
    return body


def ndjson(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def arrow_stream(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


async def db_snapshot(database_url: str) -> dict[str, Any]:
    """Row counts and a digest of every metastore table: equal snapshots mean nothing was written."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            out = {}
            for table in ("indexes", "splits", "split_column_stats"):
                rows = (await connection.execute(text(f"SELECT md5(string_agg(t::text, '|' ORDER BY t::text)), "
                                                      f"count(*) FROM {table} t"))).one()
                out[table] = tuple(rows)
            return out
    finally:
        await engine.dispose()


def storage_snapshot(storage: ObjectStore) -> list[str]:
    return storage.list_files()
