"""Queries and merges: a query sees a merge's inputs or its outputs, never both and never neither (the merge
publishes in one transaction and a plan reads the published set in one statement); a query planned before a
merge publishes still completes, reading the inputs the garbage collector keeps for its grace period."""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
import pytest

from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from strata_query.calls import QueryCall
from strata_query.dependencies import query_service_of
from strata_query.execution.scan_request import scan_request
from tests.planner.compaction_helpers import create_index, ingest_split, open_window

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]
TERMINAL = {"success", "excluded", "cancelled"}


async def _count(query, keys, index_id: str) -> int:
    response = await query.post("/v1/query", headers=keys.header(keys.admin),
                                json={"sql": f'SELECT count(*) AS n FROM "{index_id}"'})
    assert response.status_code == 200, response.text
    return response.json()["rows"][0]["n"]


async def _merge(planner, keys, spark_factory, index_id: str, delay: float = 0.0):
    key = planner.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
    runner = CompactionRunner(planner, worker_id="consistency", slots=1, executor=MergeExecutor(spark_factory),
                              api_key=key, poll_interval_secs=0.2, merge_delay_secs=delay)
    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                   headers=keys.header(keys.admin))).json()["created_job_ids"]
    try:
        deadline = time.monotonic() + 240
        while True:
            await runner.step()
            job = (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()
            if job["status"] in TERMINAL:
                return job
            assert time.monotonic() < deadline, job
            await asyncio.sleep(0.2)
    finally:
        await runner.shutdown()


async def test_queries_during_a_merge_see_inputs_or_outputs_never_both_nor_neither(indexer, planner, query, keys,
                                                                                   spark_factory):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(3):
        await ingest_split(indexer, keys, index_id, window, 400, seed=seed)
    counts = [await _count(query, keys, index_id)]
    merge = asyncio.create_task(_merge(planner, keys, spark_factory, index_id))
    while not merge.done():
        counts.append(await _count(query, keys, index_id))
    job = await merge
    counts.append(await _count(query, keys, index_id))
    assert job["status"] == "success", job
    assert set(counts) == {1200}, counts
    assert len(counts) >= 3


async def test_a_query_planned_before_a_merge_publishes_still_completes(indexer, planner, query, keys, spark_factory):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(3):
        await ingest_split(indexer, keys, index_id, window, 300, seed=seed)
    service = query_service_of(query.app)
    plan = (await service.explain(QueryCall(tenant=None, sql=f'SELECT count(*) AS n FROM "{index_id}"'))).plan
    assert plan.total_files == 3
    job = await _merge(planner, keys, spark_factory, index_id)
    assert job["status"] == "success", job
    # The plan still names the three inputs, now marked for deletion but kept through the grace period.
    engines = service.runtime.engines
    for engine in (engines.distributed, engines.in_process):
        request = scan_request("01PLANNEDBEFOREMERGE000000", plan, engine.dialect)
        stream = await asyncio.to_thread(engine.open, request)
        assert pa.Table.from_batches(list(stream), stream.schema).to_pylist() == [{"n": 900}], engine.name
    assert await _count(query, keys, index_id) == 900


async def test_queries_while_rows_arrive_and_a_merge_publishes_never_fail_and_counts_agree(indexer, planner, query,
                                                                                          keys, spark_factory):
    """The defect this guards: the first stage's "before" came from a 30 s cache, so files ingested since made a
    stage report more files after it than before, and the metrics raised a 500. Now every count of a plan comes
    from one snapshot."""
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(3):
        await ingest_split(indexer, keys, index_id, window, 200, seed=seed)
    sql = f'SELECT count(*) AS n FROM "{index_id}"'
    done = asyncio.Event()
    failures: list[str] = []
    plans: list[dict] = []

    async def keep_asking() -> None:
        while not done.is_set():
            explain = await query.post("/v1/query/explain", json={"sql": sql}, headers=keys.header(keys.admin))
            answer = await query.post("/v1/query", json={"sql": sql}, headers=keys.header(keys.admin))
            for response in (explain, answer):
                if response.status_code != 200:
                    failures.append(response.text)
            plans.append(explain.json())

    async def keep_ingesting() -> None:
        for seed in range(3, 9):
            await ingest_split(indexer, keys, index_id, window, 100, seed=seed)

    asker = asyncio.create_task(keep_asking())
    await asyncio.gather(keep_ingesting(), _merge(planner, keys, spark_factory, index_id))
    done.set()
    await asker
    assert failures == []
    assert len(plans) >= 3
    for plan in plans:
        stages = plan["stages"]
        for stage in stages:
            assert stage["files_after"] <= stage["files_before"], stage
            assert stage["row_groups_after"] <= stage["row_groups_before"], stage
            assert stage["bytes_after"] <= stage["bytes_before"], stage
        # One funnel in one unit: what a stage starts from is what the stage before it kept.
        for before, after in zip(stages, stages[1:], strict=False):
            assert (after["files_before"], after["row_groups_before"], after["bytes_before"]) == \
                (before["files_after"], before["row_groups_after"], before["bytes_after"]), (before, after)
    assert await _count(query, keys, index_id) == 3 * 200 + 6 * 100

    # The first stage starts from the whole index, whatever the time range keeps (here nothing): its files, row
    # groups and the bytes of those row groups, as the index lists its published splits.
    published = (await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "published", "limit": 1000},
                                   headers=keys.header(keys.admin))).json()["splits"]
    empty = (await query.post("/v1/query/explain", headers=keys.header(keys.admin),
                              json={"sql": f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs < 0'})).json()
    first = empty["stages"][0]
    assert (first["files_before"], first["row_groups_before"], first["bytes_before"]) == (
        len(published), sum(len(s["row_groups"]) for s in published),
        sum(sum(rg["byte_length"] for rg in s["row_groups"]) or s["size_bytes"] for s in published))
    assert (first["files_after"], first["row_groups_after"], first["bytes_after"]) == (0, 0, 0)
