"""Registration of externally written splits: footer checks, path confinement, idempotency by split_id, and an
all-or-nothing batch. Every refusal leaves PostgreSQL and storage as they were."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ulid import ULID

from strata_services.sample_data import metrics_index_config
from tests.helpers import db_snapshot, storage_snapshot, unique_index_id

pytestmark = pytest.mark.spark


def _window() -> int:
    now = int(time.time())
    return now - now % 900


def _write_split(storage_root: Path, name: str, timestamps: list[int | None], **extra_columns) -> str:
    rows = len(timestamps)
    table = pa.table({
        "metric_name": ["cpu"] * rows,
        "service": ["api"] * rows,
        "host": [f"h{i}" for i in range(rows)],
        "timestamp_secs": pa.array(timestamps, pa.int64()),
        "value": [float(i) for i in range(rows)],
        **extra_columns,
    })
    path = storage_root / "external" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return f"external/{name}"


async def _index(indexer, keys) -> str:
    index_id = unique_index_id("reg")
    response = await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    return index_id


async def _register(indexer, keys, index_id, splits, key=None):
    return await indexer.post(f"/v1/indexes/{index_id}/splits", json={"splits": splits},
                              headers=keys.header(key or keys.writer))


async def test_registration_reads_the_footer_and_publishes(indexer, keys, storage_root):
    index_id = await _index(indexer, keys)
    w = _window()
    uri = _write_split(storage_root, f"{ULID()}.parquet", [w + 5, w + 1, w + 700])
    split_id = str(ULID())
    response = await _register(indexer, keys, index_id, [{"split_id": split_id, "uri": uri, "num_rows": 3}])
    assert response.status_code == 200, response.text
    assert response.json() == {"registered": [split_id], "unchanged": []}

    [split] = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()["splits"]
    assert split["window_start"] == w
    assert split["time_range_start"] == w + 1 and split["time_range_end"] == w + 700
    assert split["state"] == "published"
    assert split["sort_schema"] == ""  # nobody claimed an order: never compacted, like pre-ADR data
    assert split["column_stats"]["host"]["min"] == "h0"
    assert split["uri"].startswith("file://")


async def test_same_registration_twice_is_a_no_op(indexer, keys, storage_root, database_url):
    index_id = await _index(indexer, keys)
    uri = _write_split(storage_root, f"{ULID()}.parquet", [_window()])
    item = {"split_id": str(ULID()), "uri": uri, "num_rows": 1}
    assert (await _register(indexer, keys, index_id, [item])).status_code == 200
    before = await db_snapshot(database_url)
    again = await _register(indexer, keys, index_id, [item])
    assert again.status_code == 200
    assert again.json() == {"registered": [], "unchanged": [item["split_id"]]}
    assert await db_snapshot(database_url) == before


async def test_conflicting_re_registration_is_409(indexer, keys, storage_root, storage, database_url):
    index_id = await _index(indexer, keys)
    uri = _write_split(storage_root, f"{ULID()}.parquet", [_window()])
    split_id = str(ULID())
    assert (await _register(indexer, keys, index_id, [{"split_id": split_id, "uri": uri, "num_rows": 1}])
            ).status_code == 200
    before = (await db_snapshot(database_url), storage_snapshot(storage))
    changed = await _register(indexer, keys, index_id,
                              [{"split_id": split_id, "uri": uri, "num_rows": 1, "partition_id": "other"}])
    assert changed.status_code == 409
    assert "partition_id" in changed.json()["detail"]
    same_file = await _register(indexer, keys, index_id, [{"split_id": str(ULID()), "uri": uri, "num_rows": 1}])
    assert same_file.status_code == 409
    assert "already registered" in same_file.json()["detail"]
    assert (await db_snapshot(database_url), storage_snapshot(storage)) == before


@pytest.mark.parametrize(
    ("case", "status", "field", "fragment"),
    [
        ("escape", 422, "splits.1.uri", "not under the storage root"),
        ("absolute-outside", 422, "splits.1.uri", "not under the storage root"),
        ("missing", 422, "splits.1.uri", "does not exist"),
        ("row-count", 422, "splits.1.num_rows", "footer has 2 rows"),
        ("two-windows", 422, "splits.1.uri", "TW-1"),
        ("claimed-window", 422, "splits.1.window_start", "was claimed"),
        ("undeclared-column", 422, "splits.1.uri", "'extra'"),
        ("not-parquet", 422, "splits.1.uri", "not a readable parquet"),
    ],
)
async def test_a_bad_split_rejects_the_whole_batch(indexer, keys, storage_root, storage, database_url, case, status,
                                                   field, fragment):
    index_id = await _index(indexer, keys)
    w = _window()
    good = {"split_id": str(ULID()), "uri": _write_split(storage_root, f"{ULID()}.parquet", [w]), "num_rows": 1}
    bad = {"split_id": str(ULID()), "num_rows": 2}
    if case == "escape":
        bad["uri"] = "../../etc/passwd"
    elif case == "absolute-outside":
        bad["uri"] = "file:///etc/passwd"
    elif case == "missing":
        bad["uri"] = "external/does-not-exist.parquet"
    elif case == "row-count":
        bad["uri"] = _write_split(storage_root, f"{ULID()}.parquet", [w, w + 1])
        bad["num_rows"] = 3
    elif case == "two-windows":
        bad["uri"] = _write_split(storage_root, f"{ULID()}.parquet", [w - 1, w + 1])
    elif case == "claimed-window":
        bad["uri"] = _write_split(storage_root, f"{ULID()}.parquet", [w, w + 1])
        bad["window_start"] = w - 900
    elif case == "undeclared-column":
        bad["uri"] = _write_split(storage_root, f"{ULID()}.parquet", [w, w + 1], extra=[1, 2])
    elif case == "not-parquet":
        path = storage_root / "external" / f"{ULID()}.parquet"
        path.write_bytes(b"not parquet at all")
        bad["uri"] = f"external/{path.name}"
    before = (await db_snapshot(database_url), storage_snapshot(storage))
    response = await _register(indexer, keys, index_id, [good, bad])
    assert response.status_code == status, response.text
    problem = response.json()
    assert problem["errors"][0]["field"] == field
    assert fragment in problem["detail"]
    assert (await db_snapshot(database_url), storage_snapshot(storage)) == before


async def test_duplicate_split_id_in_one_batch_is_422(indexer, keys, storage_root):
    index_id = await _index(indexer, keys)
    uri = _write_split(storage_root, f"{ULID()}.parquet", [_window()])
    item = {"split_id": str(ULID()), "uri": uri, "num_rows": 1}
    response = await _register(indexer, keys, index_id, [item, item])
    assert response.status_code == 422
    assert "twice" in response.json()["detail"]


async def test_registration_into_unknown_index_is_404(indexer, keys):
    response = await _register(indexer, keys, "nope-index", [{"split_id": str(ULID()), "uri": "x", "num_rows": 1}])
    assert response.status_code == 404


async def test_registration_needs_writer_scope(indexer, keys):
    response = await _register(indexer, keys, "any", [{"split_id": str(ULID()), "uri": "x", "num_rows": 1}],
                               key=keys.worker)
    assert response.status_code == 403
