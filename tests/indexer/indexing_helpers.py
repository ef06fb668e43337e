"""Steps shared by the indexing tests: an index of the sample metrics with log messages and every artifact type
configured, a runner driven by hand."""

from __future__ import annotations

import asyncio

from strata_indexer.indexing.runner import IndexBuildExecutor, indexing_runner
from strata_services.sample_data import metrics_index_config, metrics_rows
from tests.helpers import ndjson, unique_index_id

ARTIFACTS = {
    "zone_map_columns": [],
    "bloom_columns": [{"column": "host", "false_positive_rate": 0.01}, {"column": "metric_name"}],
    "bitmap_columns": ["service", "metric_name"],
    "bitmap_max_distinct_values": 100,
    "full_text_columns": ["message"],
}
FIELDS = metrics_index_config("fields", messages=True)["fields"]
# Every file gets zone maps (all columns), two blooms, two bitmaps and one full-text index.
EXPECTED = {("zone_map", ""), ("bloom", "host"), ("bloom", "metric_name"), ("bitmap", "service"),
            ("bitmap", "metric_name"), ("full_text", "")}
TERMINAL = {"success", "excluded", "cancelled"}


async def create_indexed_index(indexer, keys, **overrides) -> str:
    index_id = unique_index_id("art")
    config = metrics_index_config(index_id, messages=True, artifacts=ARTIFACTS, **overrides)
    response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    return index_id


def rows_for(window: int, count: int, seed: int = 0) -> list[dict]:
    """Sample rows with messages in the window starting at `window`."""
    return metrics_rows(count, start=window, span_secs=900, seed=seed, messages=True).to_pylist()


async def ingest(indexer, keys, index_id: str, rows: list[dict], partition: str = "default") -> str:
    response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=ndjson(rows),
                                  params={"partition_id": partition},
                                  headers={**keys.header(keys.writer), "Content-Type": "application/x-ndjson"})
    assert response.status_code == 200, response.text
    [split] = response.json()["splits"]
    return split["split_id"]


def make_runner(indexer, spark_factory, *, slots: int = 2, worker_id: str = "test-indexer",
                upload_failures: int = 0, attempts: int = 5):
    key = indexer.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
    executor = IndexBuildExecutor(spark_factory, upload_attempts=attempts, upload_backoff_secs=0.01,
                                  fault_upload_failures=upload_failures)
    return indexing_runner(indexer, executor, worker_id=worker_id, slots=slots, api_key=key, poll_interval_secs=0.2)


async def job_of(indexer, keys, split_id: str) -> dict:
    response = await indexer.get("/v1/indexing/jobs", params={"split_id": split_id},
                                 headers=keys.header(keys.writer))
    assert response.status_code == 200, response.text
    return response.json()["jobs"][-1]


async def run_until_indexed(indexer, keys, runner, split_ids: list[str], timeout: float = 180) -> list[dict]:
    """Step the runner until every file's latest job is terminal; returns those jobs."""
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        while True:
            await runner.step()
            jobs = [await job_of(indexer, keys, s) for s in split_ids]
            if all(j["status"] in TERMINAL for j in jobs):
                return jobs
            assert asyncio.get_running_loop().time() < deadline, jobs
            await asyncio.sleep(0.2)
    finally:
        await runner.shutdown()


async def artifacts_of(indexer, keys, split_id: str) -> dict:
    response = await indexer.get(f"/v1/splits/{split_id}/artifacts", headers=keys.header(keys.writer))
    assert response.status_code == 200, response.text
    return response.json()
