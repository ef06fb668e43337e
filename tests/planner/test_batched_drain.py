"""Draining a backlog of tiny merges in batches, against a real planner-api on PostgreSQL, merges in the worker's
local process (no Spark job): a poll publishes several results in one transaction yet each stays fenced and all or
nothing (a stale token is refused, an unusable result is rolled back alone and counted as a failed attempt, the
others are published), and a runner with local slots runs its merges several per call to its local process, every
row published exactly once (MC-1 at the level of the index)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from asgi_lifespan import LifespanManager

from strata_core.query.predicate import Const
from strata_core.query.predicate_json import predicate_to_data
from strata_frame.jobqueue.local_jobs import LocalJobPool
from strata_metastore.delete_models import DeleteRow, DeleteSplitRow
from strata_metastore.verify import verify
from strata_planner.app import create_app
from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import COMPACTION_PROTOCOL, CompactionRunner
from strata_planner.compaction.schemas import Assignment
from tests.planner.compaction_helpers import NoSpark, create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.usefixtures("clock_at_present")]


async def _published(indexer, keys, index_id: str) -> dict[str, int]:
    listed = (await indexer.get(f"/v1/indexes/{index_id}/splits", params={"limit": 1000, "state": "published"},
                                headers=keys.header(keys.writer))).json()["splits"]
    return {s["split_id"]: s["num_rows"] for s in listed}


async def _job(planner, keys, job_id: str) -> dict:
    return (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()


def _success(assignment: Assignment, result, **changes) -> dict:
    return {"job_id": assignment.job_id, "fencing_token": assignment.fencing_token, "status": "success",
            **COMPACTION_PROTOCOL.success_fields(result), **changes}


async def test_one_poll_publishes_several_results_each_fenced_and_all_or_nothing(indexer, planner, keys,
                                                                                   local_pool):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(8):
        await ingest_split(indexer, keys, index_id, window, 30, seed=seed)
    before = await _published(indexer, keys, index_id)
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    assert len(trigger.json()["created_job_ids"]) == 2, trigger.text
    polled = await poll(planner, keys, "batch", capacity=2)
    first, second = (Assignment.model_validate(a) for a in polled["assignments"])
    executor = MergeExecutor(NoSpark(), local=local_pool, local_max_bytes=1 << 30)
    [(merged_first, _), (merged_second, _)] = executor.run_batch([first, second])

    wrong_size = _success(second, merged_second)
    wrong_size["outputs"][0]["size_bytes"] += 1
    answer = await poll(planner, keys, "batch", capacity=0, updates=[
        _success(first, merged_first, fencing_token=first.fencing_token - 1),  # stale: refused, changes nothing
        _success(first, merged_first),
        wrong_size,  # unusable: its publish is rolled back and counted as a failed attempt
    ])
    stale, published, refused = answer["updates"]
    assert not stale["accepted"] and "fencing token" in stale["reason"]
    assert published["accepted"], published
    assert not refused["accepted"] and "publish refused" in refused["reason"]

    done, failed = await _job(planner, keys, first.job_id), await _job(planner, keys, second.job_id)
    assert done["status"] == "success"
    assert failed["status"] == "unassigned" and failed["failures"] == 1
    assert "does not have the reported size" in failed["last_error"]
    after = await _published(indexer, keys, index_id)
    first_inputs = {i.split_id for i in first.inputs}
    assert first_inputs.isdisjoint(after)  # replaced by the merge's outputs
    assert {i.split_id for i in second.inputs} <= set(after)  # untouched: still published as they were
    assert set(done["output_split_ids"]) <= set(after)
    assert sum(after.values()) == sum(before.values()) == 8 * 30  # every row exactly once

    # A result reported again under the token that already published it is refused too.
    again = await poll(planner, keys, "batch", capacity=0, updates=[_success(first, merged_first)])
    assert not again["updates"][0]["accepted"] and "success" in again["updates"][0]["reason"]


class Batches(MergeExecutor):
    """The merge executor, counting the batches it runs."""

    def __init__(self, pool: LocalJobPool) -> None:
        super().__init__(NoSpark(), local=pool, local_max_bytes=1 << 30)
        self.sizes: list[int] = []

    def run_batch(self, assignments):
        self.sizes.append(len(assignments))
        return super().run_batch(assignments)


async def test_a_runner_with_local_slots_drains_a_backlog_in_batches_every_row_published_once(
        indexer, planner, keys, local_pool):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(16):
        await ingest_split(indexer, keys, index_id, window, 20, seed=seed)
    before = await _published(indexer, keys, index_id)
    executor = Batches(local_pool)
    key = planner.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
    runner = CompactionRunner(planner, worker_id="batches", slots=1, executor=executor, api_key=key,
                              poll_interval_secs=0.1, local_slots=4, local_batch=4)
    try:
        for _ in range(200):
            await runner.step()
            if not runner.running and len(await _published(indexer, keys, index_id)) < 4:
                break
            await runner._wait(_never())
        else:
            raise AssertionError(f"not drained: {await _published(indexer, keys, index_id)}")
    finally:
        await runner.shutdown()
    assert max(executor.sizes) > 1, executor.sizes  # several merges in one call to the local process
    after = await _published(indexer, keys, index_id)
    assert sum(after.values()) == sum(before.values()) == 16 * 20
    assert set(after).isdisjoint(before)


def _never():
    import asyncio

    return asyncio.Event()


async def test_a_poll_publishes_its_clean_merges_as_one_batch_and_each_other_job_alone(indexer, keys, settings,
                                                                                       planner_clock, local_pool):
    """The poll's successes go through the batch publish (one statement per kind for all of them); a stale token,
    an output failing its checks and an input covered by a delete since the merge was planned each leave their
    job out of the batch, nothing of it written, and are refused or superseded one at a time; the other merges are
    published, every row exactly once (MC-1), and the commit log records it all."""
    # Five jobs in progress at once on one index: above the default caps.
    app = create_app(settings.model_copy(update={"compaction_max_in_progress_per_tenant": 10,
                                                 "compaction_max_in_progress_per_index": 10}),
                     background=False, clock=planner_clock)
    async with LifespanManager(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                                       base_url="http://planner-api", timeout=60) as planner:
        await _publish_clean_batch(indexer, planner, app.state.strata, keys, local_pool)


async def _publish_clean_batch(indexer, planner, state, keys, local_pool) -> None:
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(20):
        await ingest_split(indexer, keys, index_id, window, 30, seed=seed)
    before = await _published(indexer, keys, index_id)
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    assert len(trigger.json()["created_job_ids"]) == 5, trigger.text
    polled = await poll(planner, keys, "batch", capacity=5)
    jobs = [Assignment.model_validate(a) for a in polled["assignments"]]
    executor = MergeExecutor(NoSpark(), local=local_pool, local_max_bytes=1 << 30)
    merged = [result for result, _ in executor.run_batch(jobs)]
    clean_a, clean_b, stale, wrong, covered = jobs

    # A delete accepted after the merges were planned covers one input of `covered` (DL-4): its merge must not
    # publish. The delete's predicate matches no row: it is its coverage of the split that matters here.
    async with state.sessions() as session:
        delete = DeleteRow(delete_id="01JBATCHDELETECOVERSONEINP", index_uid=clean_a.index_uid, partition_id=None,
                           where_sql="FALSE", predicate=predicate_to_data(Const(False)), cutoff_generation=0,
                           status="pending", accepted_at=datetime.now(UTC))
        session.add(delete)
        await session.flush()
        session.add(DeleteSplitRow(delete_id=delete.delete_id, split_id=covered.inputs[0].split_id,
                                   index_uid=clean_a.index_uid, state="pending", rows_before=30))
        await session.commit()

    wrong_size = _success(wrong, merged[3])
    wrong_size["outputs"][0]["size_bytes"] += 1
    answer = await poll(planner, keys, "batch", capacity=0, updates=[
        _success(clean_a, merged[0]), _success(stale, merged[2], fencing_token=stale.fencing_token - 1),
        wrong_size, _success(covered, merged[4]), _success(clean_b, merged[1])])
    a, s, w, c, b = answer["updates"]
    assert a["accepted"] and b["accepted"] and c["accepted"], answer
    assert not s["accepted"] and "fencing token" in s["reason"]
    assert not w["accepted"] and "publish refused" in w["reason"]

    statuses = {j.job_id: await _job(planner, keys, j.job_id) for j in jobs}
    assert statuses[clean_a.job_id]["status"] == statuses[clean_b.job_id]["status"] == "success"
    assert statuses[covered.job_id]["stage"] == "superseded_by_delete"
    assert statuses[stale.job_id]["status"] == "in_progress"  # untouched: its token still owns it
    assert statuses[wrong.job_id]["status"] == "unassigned" and statuses[wrong.job_id]["failures"] == 1
    after = await _published(indexer, keys, index_id)
    for done in (clean_a, clean_b):
        assert {i.split_id for i in done.inputs}.isdisjoint(after)
        assert set(statuses[done.job_id]["output_split_ids"]) <= set(after)
    for left in (stale, wrong, covered):
        assert {i.split_id for i in left.inputs} <= set(after)
    assert sum(after.values()) == sum(before.values()) == 20 * 30  # every row exactly once

    # The stale token's job still publishes under its own token, alone in its poll.
    again = await poll(planner, keys, "batch", capacity=0, updates=[_success(stale, merged[2])])
    assert again["updates"][0]["accepted"], again
    report = await verify(state.sessions, state.storage)
    assert not report.drift["rows_only_in_postgres"] and not report.drift["rows_only_in_bucket"], report.as_json()


async def test_one_batch_publishes_merges_of_several_indexes_and_windows(indexer, planner, keys, local_pool):
    """One poll's batch spanning two indexes and three windows: every lock and write of the batch covers all of
    them (the indexes' delete locks, the windows marked compacted), each merge published, every row once."""
    first, second = await create_index(indexer, keys), await create_index(indexer, keys)
    now = open_window()
    layout = [(first, now), (first, now - 900), (second, now)]
    before = {}
    for index_id, window in layout:
        for seed in range(4):
            await ingest_split(indexer, keys, index_id, window, 25, seed=seed)
    for index_id in (first, second):
        before[index_id] = await _published(indexer, keys, index_id)
        trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                     headers=keys.header(keys.admin))
        assert trigger.status_code == 200, trigger.text
    polled = await poll(planner, keys, "batch", capacity=8)
    jobs = [Assignment.model_validate(a) for a in polled["assignments"]]
    assert len(jobs) == 3 and len({(j.index_uid, j.window_start) for j in jobs}) == 3, jobs
    executor = MergeExecutor(NoSpark(), local=local_pool, local_max_bytes=1 << 30)
    answer = await poll(planner, keys, "batch", capacity=0,
                        updates=[_success(job, result) for job, (result, _) in zip(jobs, executor.run_batch(jobs),
                                                                                   strict=True)])
    assert all(u["accepted"] for u in answer["updates"]), answer
    for job in jobs:
        done = await _job(planner, keys, job.job_id)
        assert done["status"] == "success", done
    for index_id in (first, second):
        after = await _published(indexer, keys, index_id)
        assert set(after).isdisjoint(before[index_id])
        assert sum(after.values()) == sum(before[index_id].values())
    windows = (await planner.get(f"/v1/indexes/{first}/windows", params={"limit": 10},
                                 headers=keys.header(keys.admin))).json()["windows"]
    assert len(windows) == 2 and all(w.get("last_compacted_at") for w in windows), windows
