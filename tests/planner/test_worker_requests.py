"""A worker outside the API (`strata worker`) counts each job's object-store requests where the job runs and
reports them with the job's end: the API that owns the job adds them to its /metrics, as it does the embedded
runner's."""

from __future__ import annotations

import re

import pytest

from tests.planner.compaction_helpers import create_index, ingest_split, open_window, run_triggered_merge

pytestmark = [pytest.mark.spark]


def _merge_count(metrics: str, kind: str) -> float:
    found = re.search(rf'strata_object_store_requests_total\{{kind="{kind}",operation="merge"\}} ([0-9.e+]+)',
                      metrics)
    return float(found.group(1)) if found else 0.0


async def test_a_standalone_workers_merge_is_counted_in_the_apis_metrics(indexer, planner, keys, spark_factory):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(3):
        await ingest_split(indexer, keys, index_id, window, 20, seed=seed)
    before = (await planner.get("/metrics")).text
    # The runner `strata worker` runs: its own executor and Spark session, the API reached over HTTP only.
    job = await run_triggered_merge(planner, keys, spark_factory, index_id)
    assert job["status"] == "success", job
    after = (await planner.get("/metrics")).text
    outputs = len(job["output_split_ids"])
    # Each output is a multipart upload (3 PUTs) and a move (a copy PUT and the parent's marker PUT, a DELETE).
    assert _merge_count(after, "put") - _merge_count(before, "put") == 5 * outputs
    assert _merge_count(after, "delete") - _merge_count(before, "delete") == outputs
    # Each of the three inputs is opened and read.
    assert _merge_count(after, "head") - _merge_count(before, "head") >= 3
    assert _merge_count(after, "get") - _merge_count(before, "get") >= 3
