"""Cancelling a row-level delete, on PostgreSQL and Spark: allowed while none of its rewrites has published (pending,
or running), after which queries see its rows again, its rewrite jobs are cancelled and a late report of one is
refused (409), and no rewrite is planned for it again; refused (409, saying why) once a rewrite of it has published
or it has succeeded; a tenant-bound key cancels only in its own partition; the metrics count cancelled deletes."""

from __future__ import annotations

import asyncio

import pytest

from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import output_splits
from strata_planner.compaction.schemas import Assignment
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll
from tests.planner.test_deletes import DELETED, ENGINES, _count, _delete, _matching, _splits, _status

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def _cancel(planner, keys, index_id: str, delete_id: str, key=None):
    return await planner.post(f"/v1/indexes/{index_id}/deletes/{delete_id}/cancel",
                              headers=keys.header(key or keys.admin))


async def _take_rewrite(planner, keys, worker: str, spark_factory) -> tuple[dict, list[dict]]:
    """A worker takes one rewrite and runs it on Spark, not reporting yet: the assignment and its outputs."""
    [assignment] = (await poll(planner, keys, worker, 1))["assignments"]
    assert assignment["kind"] == "rewrite", assignment
    result = await asyncio.to_thread(MergeExecutor(spark_factory).run, Assignment.model_validate(assignment))
    return assignment, [o.model_dump(mode="json") for o in output_splits(result)]


def _success(assignment: dict, outputs: list[dict]) -> dict:
    return {"job_id": assignment["job_id"], "fencing_token": assignment["fencing_token"], "status": "success",
            "outputs": outputs}


async def _rewrite_jobs(planner, keys, index_id: str) -> list[dict]:
    jobs = (await planner.get("/v1/compaction/jobs", headers=keys.header(keys.worker),
                              params={"index_id": index_id, "limit": 1000})).json()["jobs"]
    return [j for j in jobs if j["kind"] == "rewrite"]


async def test_a_pending_delete_cancelled_shows_its_rows_again(indexer, planner, query, keys):
    from prometheus_client import CollectorRegistry

    from strata_planner.compaction.metrics import CompactionMetrics

    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in (51, 52):
        await ingest_split(indexer, keys, index_id, window, 200, seed=seed)
    matching = sum(_matching(200, window, seed) for seed in (51, 52))
    registry = CollectorRegistry()
    metrics = CompactionMetrics(registry)
    await metrics.refresh(planner.app.state.strata.sessions, planner.app.state.strata.clock())
    cancelled_before = registry.get_sample_value("strata_deletes", {"status": "cancelled"})

    delete_id = (await _delete(planner, keys, index_id, {"where": DELETED})).json()["delete_id"]
    assert await _count(query, keys, index_id, DELETED, "local") == 0  # cached: the cancel must invalidate it
    cancelled = await _cancel(planner, keys, index_id, delete_id)
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    assert body["status"] == "cancelled" and body["finished_at"] and body["receipt"] is None
    for engine in ENGINES:
        assert await _count(query, keys, index_id, DELETED, engine) == matching
    plan = (await query.post("/v1/query/explain", headers=keys.header(keys.admin),
                             json={"sql": f'SELECT count(*) FROM "{index_id}"'})).json()
    assert plan["pending_deletes"] == []

    # Cancelling again answers it as it is; no rewrite is ever planned for it.
    again = await _cancel(planner, keys, index_id, delete_id)
    assert again.status_code == 200 and again.json()["status"] == "cancelled"
    await poll(planner, keys, "idle-worker", 1)
    assert await _rewrite_jobs(planner, keys, index_id) == []
    assert (await _status(planner, keys, index_id, delete_id))["status"] == "cancelled"
    await metrics.refresh(planner.app.state.strata.sessions, planner.app.state.strata.clock())
    assert registry.get_sample_value("strata_deletes", {"status": "cancelled"}) == cancelled_before + 1
    unknown = await _cancel(planner, keys, index_id, "01" + "Z" * 24)
    assert unknown.status_code == 404, unknown.text


async def test_a_running_delete_cancelled_refuses_its_rewrite_late_report(indexer, planner, query, keys,
                                                                          spark_factory):
    index_id = await create_index(indexer, keys)
    window = open_window()
    await ingest_split(indexer, keys, index_id, window, 250, seed=53)
    matching = _matching(250, window, 53)
    before = [s["split_id"] for s in await _splits(indexer, keys, index_id, "published")]
    delete_id = (await _delete(planner, keys, index_id, {"where": DELETED})).json()["delete_id"]
    assignment, outputs = await _take_rewrite(planner, keys, "slow-worker", spark_factory)
    assert (await _status(planner, keys, index_id, delete_id))["status"] == "running"

    cancelled = await _cancel(planner, keys, index_id, delete_id)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    job = (await planner.get(f"/v1/compaction/jobs/{assignment['job_id']}", headers=keys.header(keys.worker))).json()
    assert job["status"] == "cancelled" and job["stage"] == "delete_cancelled", job

    late = await planner.post(f"/v1/compaction/jobs/{assignment['job_id']}/status", headers=keys.header(keys.worker),
                              json=_success(assignment, outputs))
    assert late.status_code == 409, late.text
    await poll(planner, keys, "slow-worker", 0, [_success(assignment, outputs)])
    assert [s["split_id"] for s in await _splits(indexer, keys, index_id, "published")] == before
    assert await _count(query, keys, index_id, DELETED, "local") == matching
    # The split is free again, and no rewrite of the cancelled delete takes it.
    await poll(planner, keys, "idle-worker", 1)
    assert [j["job_id"] for j in await _rewrite_jobs(planner, keys, index_id)] == [assignment["job_id"]]


async def test_a_delete_with_a_published_rewrite_cannot_be_cancelled(indexer, planner, query, keys, spark_factory):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in (54, 55):
        await ingest_split(indexer, keys, index_id, window, 200, seed=seed)
    delete_id = (await _delete(planner, keys, index_id, {"where": DELETED})).json()["delete_id"]

    assignment, outputs = await _take_rewrite(planner, keys, "worker-a", spark_factory)
    await poll(planner, keys, "worker-a", 0, [_success(assignment, outputs)])
    status = await _status(planner, keys, index_id, delete_id)
    assert status["status"] == "running" and status["progress"]["splits_done"] == 1, status
    refused = await _cancel(planner, keys, index_id, delete_id)
    assert refused.status_code == 409, refused.text
    assert "already gone" in refused.json()["detail"]
    # Still in force on the split not rewritten yet: its matching rows stay hidden.
    assert await _count(query, keys, index_id, DELETED, "local") == 0

    assignment, outputs = await _take_rewrite(planner, keys, "worker-a", spark_factory)
    await poll(planner, keys, "worker-a", 0, [_success(assignment, outputs)])
    assert (await _status(planner, keys, index_id, delete_id))["status"] == "succeeded"
    refused = await _cancel(planner, keys, index_id, delete_id)
    assert refused.status_code == 409 and "succeeded" in refused.json()["detail"], refused.text


async def test_tenant_keys_cancel_only_in_their_partition(indexer, planner, query, keys):
    index_id = await create_index(indexer, keys)
    window = open_window()
    await ingest_split(indexer, keys, index_id, window, 100, seed=56, partition="acme")
    await ingest_split(indexer, keys, index_id, window, 100, seed=57, partition="default")
    mine = (await _delete(planner, keys, index_id, {"where": DELETED}, keys.writer_acme)).json()["delete_id"]
    theirs = (await _delete(planner, keys, index_id, {"where": DELETED, "partition_id": "default"})).json()
    assert (await _cancel(planner, keys, index_id, theirs["delete_id"], keys.writer_acme)).status_code == 404
    assert (await _cancel(planner, keys, index_id, mine, keys.query_acme)).status_code == 403
    cancelled = await _cancel(planner, keys, index_id, mine, keys.writer_acme)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled", cancelled.text
    assert await _count(query, keys, index_id, DELETED, "local", keys.query_acme) == _matching(100, window, 56)
    # The other partition's delete is untouched.
    assert (await _status(planner, keys, index_id, theirs["delete_id"]))["status"] == "pending"
    assert await _count(query, keys, index_id, f"{DELETED} AND partition_id = 'default'", "local") == 0
