"""Builders shared by the integration tests: request bodies, problems, and before/after snapshots. Index configs
and rows come from the product's `strata_services.sample_data`."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import hypothesis
import pyarrow as pa
import pyarrow.ipc as ipc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from strata_core.errors import PROBLEM_BASE
from strata_core.storage import ObjectStore

NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"


def examples(ci_count: int) -> int:
    """A property test's example count under the active hypothesis profile (tests/conftest.py): `ci_count` in
    `ci`, whose default is hypothesis's 100, and in proportion in the others."""
    return max(1, round(ci_count * hypothesis.settings.default.max_examples / 100))


def unique_index_id(prefix: str = "idx") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def delete_index(indexer, keys, index_id: str) -> None:
    """What a module's shared dataset does when the module ends (a test's own indexes are deleted for it:
    tests/fixtures/apps.py)."""
    response = await indexer.delete(f"/v1/indexes/{index_id}", headers=keys.header(keys.admin))
    assert response.status_code == 204, response.text


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
