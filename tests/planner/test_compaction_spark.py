"""Compaction end to end through a real Spark Connect merge: MC-1..MC-4 on the published outputs (nulls in sort
columns, a descending column, schema evolution), lineage and the atomic publish, ingestion into a window while
its merge runs, and a type conflict that fails the job with the column named and no input touched."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ulid import ULID

from strata_core.domain.index_uid import split_index_uid
from strata_core.domain.sort_key import is_sorted, sort_indices
from strata_core.domain.sort_schema import SortSchema
from strata_core.storage_layout import merges_dir
from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from tests.planner.compaction_helpers import create_index, ingest_split, open_window

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]
SORT = "metric_name,-host,timestamp_secs@v1"
TERMINAL = {"success", "excluded", "cancelled"}


@pytest.fixture
async def make_runner(planner, spark_factory):
    """Runners driven step by step by the test; whatever they still run is stopped afterwards."""
    runners: list[CompactionRunner] = []

    def make(*, delay: float = 0.0) -> CompactionRunner:
        key = planner.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
        runner = CompactionRunner(planner, worker_id="test-runner", slots=2,
                                  executor=MergeExecutor(spark_factory), api_key=key, poll_interval_secs=0.2,
                                  merge_delay_secs=delay)
        runners.append(runner)
        return runner

    yield make
    for runner in runners:
        await runner.shutdown()


async def _job(planner, keys, job_id: str) -> dict:
    return (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()


async def _run_until(planner, keys, runner, job_ids, done=lambda jobs: all(j["status"] in TERMINAL for j in jobs),
                     timeout: float = 240) -> list[dict]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await runner.step()
        jobs = [await _job(planner, keys, j) for j in job_ids]
        if done(jobs):
            return jobs
        assert loop.time() < deadline, jobs
        await asyncio.sleep(0.2)


async def _splits(indexer, keys, index_id: str, state: str | None = None) -> list[dict]:
    params = {"limit": 1000} | ({"state": state} if state else {})
    response = await indexer.get(f"/v1/indexes/{index_id}/splits", params=params, headers=keys.header(keys.writer))
    return response.json()["splits"]


def _rows(storage, uris: list[str]) -> Counter:
    rows: Counter = Counter()
    for uri in uris:
        table = pq.read_table(storage.open_input(uri))
        for row in table.to_pylist():
            rows[tuple(sorted(row.items()))] += 1
    return rows


def _external_split(storage_root: Path, window: int) -> tuple[str, pa.Table]:
    """A split written elsewhere without the `service` column (schema evolution, MC-4), sorted by SORT."""
    table = pa.table({"metric_name": ["m1", None, "m0", "m1"], "host": ["x", "y", None, None],
                      "timestamp_secs": pa.array([window + 5, window + 6, window + 7, window + 8], pa.int64()),
                      "value": [1.0, 2.0, 3.0, 4.0]})
    table = table.take(sort_indices(table, SortSchema.parse(SORT)))
    path = storage_root / "external" / f"{ULID()}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return f"external/{path.name}", table


async def test_mc1_to_mc4_through_a_spark_merge_with_lineage(indexer, planner, keys, storage, storage_root,
                                                            make_runner):
    index_id = await create_index(indexer, keys, sort_schema=SORT)
    window = open_window()
    ingested = [await ingest_split(indexer, keys, index_id, window, 30, seed=i) for i in range(3)]
    uri, _ = _external_split(storage_root, window)
    external_id = str(ULID())
    registered = await indexer.post(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer), json={
        "splits": [{"split_id": external_id, "uri": uri, "num_rows": 4, "sort_schema": SORT,
                   "source_id": "ingest-api"}]})
    assert registered.status_code == 200, registered.text
    inputs = {s["split_id"]: s for s in await _splits(indexer, keys, index_id)}
    rows_before = _rows(storage, [s["uri"] for s in inputs.values()])
    # Rows of the external split have no `service`: after the merge they carry a null there (MC-4).
    rows_before = Counter({tuple(sorted(dict(r, service=dict(r).get("service")).items())): n
                           for r, n in rows_before.items()})

    trigger = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                  headers=keys.header(keys.admin))).json()
    [job_id] = trigger["created_job_ids"]
    [job] = await _run_until(planner, keys, make_runner(), [job_id])
    assert job["status"] == "success", job
    assert sorted(job["input_split_ids"]) == sorted([*ingested, external_id])

    published = await _splits(indexer, keys, index_id, "published")
    marked = await _splits(indexer, keys, index_id, "marked_for_deletion")
    assert sorted(s["split_id"] for s in marked) == sorted(inputs)
    assert [s["split_id"] for s in published] == job["output_split_ids"]
    [output] = published
    assert _rows(storage, [output["uri"]]) == rows_before  # MC-1 and MC-2
    table = pq.read_table(storage.open_input(output["uri"]))
    assert is_sorted(table, SortSchema.parse(SORT))  # MC-3
    assert set(table.column_names) == {"metric_name", "service", "host", "timestamp_secs", "value"}  # MC-4
    assert output["num_merge_ops"] == 1 and output["generation"] == 1
    assert sorted(output["root_split_ids"]) == sorted(inputs)
    assert output["window_start"] == window and output["sort_schema"] == SORT

    windows = (await planner.get(f"/v1/indexes/{index_id}/windows", headers=keys.header(keys.worker))).json()
    [summary] = windows["windows"]
    assert summary["splits"] == 1 and summary["marked_for_deletion"] == 4 and summary["last_compacted_at"]


async def test_ingestion_into_a_window_goes_on_while_its_merge_runs(indexer, planner, keys, make_runner):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 10, seed=i)
    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                   headers=keys.header(keys.admin))).json()["created_job_ids"]
    runner = make_runner(delay=2.0)
    await _run_until(planner, keys, runner, [job_id], done=lambda jobs: jobs[0]["status"] == "in_progress")
    late_id = await ingest_split(indexer, keys, index_id, window, 7, seed=99)  # lands mid-merge
    [job] = await _run_until(planner, keys, runner, [job_id])
    assert job["status"] == "success"
    published = {s["split_id"]: s for s in await _splits(indexer, keys, index_id, "published")}
    assert late_id in published and published[late_id]["num_merge_ops"] == 0
    assert late_id not in job["input_split_ids"]
    plan = (await planner.post(f"/v1/indexes/{index_id}/compaction/plan", json={"final": True},
                               headers=keys.header(keys.admin))).json()
    assert sorted(plan["operations"][0]["split_ids"]) == sorted(published), "the late split merges next cycle"


async def test_type_conflict_fails_the_job_naming_the_column_and_touches_no_input(indexer, planner, keys, storage,
                                                                                  make_runner):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 10, seed=i)
    inputs = await _splits(indexer, keys, index_id)
    # Fault injection: one input's file is replaced by one whose `value` column is a string.
    victim = inputs[0]
    table = pq.read_table(storage.open_input(victim["uri"]))
    table = table.set_column(table.column_names.index("value"), "value",
                             pa.array([str(v) for v in table.column("value").to_pylist()]))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    storage.write_bytes(victim["uri"], sink.getvalue().to_pybytes())

    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                   headers=keys.header(keys.admin))).json()["created_job_ids"]
    [job] = await _run_until(planner, keys, make_runner(), [job_id],
                             done=lambda jobs: jobs[0]["failures"] >= 1)
    assert "'value'" in job["last_error"] and "MergeTypeConflict" in job["last_error"]
    after = await _splits(indexer, keys, index_id)
    assert {s["split_id"]: s["state"] for s in after} == {s["split_id"]: "published" for s in inputs}
    assert storage.list_files(merges_dir(*split_index_uid(job["index_uid"]))) == [], "no output was written"


async def test_retry_brings_an_excluded_merge_to_success_once_the_cause_is_fixed(indexer, planner, keys, storage,
                                                                                 make_runner):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 30, seed=i)
    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                   headers=keys.header(keys.admin))).json()["created_job_ids"]
    # The fault: one input file is unreadable (moved away), so every attempt fails until it is back.
    victim = (await _splits(indexer, keys, index_id))[0]["uri"]
    content = storage.open_input(victim).read()
    storage.delete(victim)
    runner = make_runner()
    [job] = await _run_until(planner, keys, runner, [job_id])
    assert job["status"] == "excluded" and job["failures"] == 3, job

    storage.write_bytes(victim, content)
    retried = await planner.post(f"/v1/compaction/jobs/{job_id}/retry", headers=keys.header(keys.admin))
    assert retried.status_code == 200 and retried.json()["status"] == "unassigned", retried.text
    [done] = await _run_until(planner, keys, runner, [job_id])
    assert done["status"] == "success" and len(done["failure_log"]) == 3, done
    assert [s["split_id"] for s in await _splits(indexer, keys, index_id, "published")] == done["output_split_ids"]
