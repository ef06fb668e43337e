"""A compaction runner that stops gives its leases back, against a real planner-api on PostgreSQL and Spark: a job
it holds but has not started is handed to another worker at once, a running one finishes within the shutdown
timeout (published) or is released after it; no failure is counted, and a late result under the old token is
refused."""

from __future__ import annotations

import asyncio
import threading

import pytest

from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


class HeldAtStart:
    """The real merge executor, with each merge held once inside `run` (started, as the runner sees it) until the
    test lets it through, or ends it without merging."""

    def __init__(self, inner: MergeExecutor) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.merge = True

    def run(self, assignment):
        self.entered.set()
        self.gate.wait(timeout=120)
        if not self.merge:
            raise RuntimeError("the test ended before this merge was let through")
        return self.inner.run(assignment)

    def interrupt(self, assignment) -> None:
        self.inner.interrupt(assignment)


async def _job(planner, keys, job_id: str) -> dict:
    return (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()


async def _runner_running_one_job(planner, indexer, keys, spark_factory, *, shutdown_timeout_secs: float):
    """A runner with one job inside its executor, and the index whose window holds four more splits."""
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in range(4):
        await ingest_split(indexer, keys, index_id, window, 20, seed=seed)
    executor = HeldAtStart(MergeExecutor(spark_factory))
    key = planner.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
    runner = CompactionRunner(planner, worker_id="stopping", slots=2, executor=executor, api_key=key,
                              poll_interval_secs=0.2, shutdown_timeout_secs=shutdown_timeout_secs)
    [running] = (await runner.step()).assignments
    assert await asyncio.to_thread(executor.entered.wait, 60)
    return runner, executor, index_id, window, running


async def test_a_stopping_runner_hands_back_its_unstarted_job_at_once_and_finishes_the_running_one(
        indexer, planner, keys, spark_factory):
    runner, executor, index_id, window, running = await _runner_running_one_job(
        planner, indexer, keys, spark_factory, shutdown_timeout_secs=120)
    try:
        for seed in range(4, 8):
            await ingest_split(indexer, keys, index_id, window, 20, seed=seed)
        # The second job is assigned but held before its executor starts (the fault injection's start delay).
        runner.start_delay_secs = 3600
        [waiting] = (await runner.step()).assignments
        assert waiting.job_id != running.job_id

        stopping = asyncio.create_task(runner.shutdown())
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            handed = (await poll(planner, keys, "rescuer", capacity=1))["assignments"]
            if handed:
                break
            assert asyncio.get_running_loop().time() < deadline, "the unstarted job was not handed back"
            await asyncio.sleep(0.1)
        [again] = handed
        assert again["job_id"] == waiting.job_id and again["fencing_token"] > waiting.fencing_token
        assert not stopping.done(), "the runner still waits for its running job"
        assert (await _job(planner, keys, running.job_id))["worker_id"] == "stopping"

        executor.gate.set()
        await asyncio.wait_for(stopping, timeout=180)
        finished = await _job(planner, keys, running.job_id)
        assert finished["status"] == "success" and finished["failures"] == 0, finished
        handed_back = await _job(planner, keys, waiting.job_id)
        assert handed_back["failures"] == 0 and handed_back["failure_log"] == []

        stale = await planner.post(f"/v1/compaction/jobs/{waiting.job_id}/status", headers=keys.header(keys.worker),
                                   json={"job_id": waiting.job_id, "fencing_token": waiting.fencing_token,
                                         "status": "success", "outputs": []})
        assert stale.status_code == 409, stale.text
    finally:
        executor.merge = False
        executor.gate.set()
        await runner.shutdown(timeout_secs=0)


async def test_a_running_job_past_the_shutdown_timeout_is_released_without_a_failure(
        indexer, planner, keys, spark_factory):
    runner, executor, _, _, running = await _runner_running_one_job(planner, indexer, keys, spark_factory,
                                                                     shutdown_timeout_secs=1.0)
    try:
        await asyncio.wait_for(runner.shutdown(), timeout=30)
        released = await _job(planner, keys, running.job_id)
        assert released["status"] == "unassigned" and released["stage"] == "released", released
        assert released["failures"] == 0 and released["worker_id"] is None

        # The attempt's result, should its thread still report one, is refused; the job is handed out again.
        late = await poll(planner, keys, "stopping", capacity=0, updates=[
            {"job_id": running.job_id, "fencing_token": running.fencing_token, "status": "success", "outputs": []}])
        assert late["updates"][0]["accepted"] is False
        [again] = (await poll(planner, keys, "rescuer", capacity=1))["assignments"]
        assert again["job_id"] == running.job_id and again["fencing_token"] > running.fencing_token
    finally:
        executor.merge = False
        executor.gate.set()
