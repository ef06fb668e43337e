"""Shared steps of the compaction tests: an index with a small merge policy, and splits ingested into windows."""

from __future__ import annotations

import time

from tests.helpers import metrics_index, ndjson, unique_index_id

SMALL_POLICY = {"min_level_num_docs": 1000, "merge_factor": 3, "max_merge_factor": 4,
                "target_split_num_rows": 100_000, "target_split_size_bytes": 64 * 1024 * 1024}


def open_window() -> int:
    """The current window: open (not closed) for the next hour and more."""
    now = int(time.time())
    return now - now % 900


async def create_index(indexer, keys, **overrides) -> str:
    index_id = unique_index_id("cmp")
    config = metrics_index(index_id, merge_policy=SMALL_POLICY, **overrides)
    response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    return index_id


async def ingest_split(indexer, keys, index_id: str, window: int, rows: int, seed: int = 0,
                       partition: str = "default", host_prefix: str = "h") -> str:
    batch = [{"metric_name": f"m{(i * 7 + seed) % 5}", "service": f"s{(i + seed) % 3}",
              "host": f"{host_prefix}{(i * 13 + seed) % 11}", "timestamp_secs": window + (i * 31 + seed) % 900,
              "value": float(i + seed)} for i in range(rows)]
    response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=ndjson(batch),
                                  params={"partition_id": partition},
                                  headers={**keys.header(keys.writer), "Content-Type": "application/x-ndjson"})
    assert response.status_code == 200, response.text
    [split] = response.json()["splits"]
    return split["split_id"]


async def poll(planner, keys, worker: str, capacity: int, updates: list | None = None) -> dict:
    response = await planner.post("/v1/compaction/poll", headers=keys.header(keys.worker),
                                  json={"worker_id": worker, "capacity": capacity, "updates": updates or []})
    assert response.status_code == 200, response.text
    return response.json()
