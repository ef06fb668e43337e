"""Shared steps of the compaction tests: an index of the sample metrics with a small merge policy, and splits
ingested into windows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from strata_services.client import arrow_ipc
from strata_services.sample_data import SERVICES, metrics_index_config, metrics_rows
from tests.helpers import ARROW, unique_index_id

TERMINAL = {"success", "excluded", "cancelled"}
SMALL_POLICY = {"min_level_num_docs": 1000, "merge_factor": 3, "max_merge_factor": 4,
                "target_split_num_rows": 100_000, "target_split_size_bytes": 64 * 1024 * 1024}


def open_window() -> int:
    """The current window: open (not closed) for the next hour and more."""
    now = int(time.time())
    return now - now % 900


async def create_index(indexer, keys, **overrides) -> str:
    index_id = unique_index_id("cmp")
    config = metrics_index_config(index_id, merge_policy=SMALL_POLICY, **overrides)
    response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    return index_id


async def ingest_split(indexer, keys, index_id: str, window: int, rows: int, seed: int = 0,
                       partition: str = "default", services: Sequence[str] = SERVICES) -> str:
    """One split of `rows` sample rows in the window starting at `window` (of the given services only)."""
    table = metrics_rows(rows, start=window, span_secs=900, seed=seed, services=services)
    response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=arrow_ipc(table),
                                  params={"partition_id": partition},
                                  headers={**keys.header(keys.writer), "Content-Type": ARROW})
    assert response.status_code == 200, response.text
    [split] = response.json()["splits"]
    return split["split_id"]


async def poll(planner, keys, worker: str, capacity: int, updates: list | None = None) -> dict:
    response = await planner.post("/v1/compaction/poll", headers=keys.header(keys.worker),
                                  json={"worker_id": worker, "capacity": capacity, "updates": updates or []})
    assert response.status_code == 200, response.text
    return response.json()


def _ended(job: dict) -> bool:
    return job["status"] in TERMINAL


async def run_triggered_merge(planner, keys, factory, index_id: str, *, until=_ended, timeout: float = 240) -> dict:
    """Trigger compaction of the index (one job expected) and run it on Spark through `factory` with a runner
    stepped by hand, until `until(job)`; returns the job."""
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    assert trigger.status_code == 200, trigger.text
    [job_id] = trigger.json()["created_job_ids"]
    key = planner.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
    runner = CompactionRunner(planner, worker_id="merge-runner", slots=1, executor=MergeExecutor(factory),
                              api_key=key, poll_interval_secs=0.2)
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        while True:
            await runner.step()
            job = (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()
            if until(job):
                return job
            assert asyncio.get_running_loop().time() < deadline, job
            await asyncio.sleep(0.2)
    finally:
        await runner.shutdown()


class NoSpark:
    """A Spark session factory for merges that must run locally: asked for a session, the test fails."""

    def session(self):
        raise AssertionError("a tiny merge should have run locally")
