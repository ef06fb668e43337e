"""A runner killed with SIGKILL in the middle of a merge loses nothing: its lease expires, another runner takes
the job with a larger fencing token, the first runner's late writes are refused, and the window ends with every
row exactly once. The killed runner is a real `strata worker` process talking HTTP to a real planner-api."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import httpx
import pyarrow.parquet as pq
import pytest

from strata_planner.app import create_app
from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from tests.fixtures.http_server import serve_in_thread
from tests.planner.compaction_helpers import create_index, ingest_split, open_window

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


def _rows(storage, uris) -> Counter:
    return Counter(tuple(sorted(r.items())) for uri in uris for r in pq.read_table(storage.open_input(uri)).to_pylist())


async def test_sigkilled_runner_loses_nothing(indexer, keys, settings, storage, spark_factory, tmp_path):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 25, seed=i)
    listed = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()["splits"]
    rows_before = _rows(storage, [s["uri"] for s in listed])

    planner_settings = settings.model_copy(update={"compaction_lease_secs": 3.0, "compaction_worker_slots": 0})
    app = create_app(planner_settings, background=False)
    worker_log = tmp_path / "worker.log"
    with serve_in_thread(app) as url:
        admin = httpx.AsyncClient(base_url=url, headers=keys.header(keys.admin), timeout=60)
        [job_id] = (await admin.post(f"/v1/indexes/{index_id}/compaction/trigger", json={})).json()["created_job_ids"]

        env = {**os.environ, "STRATA_API_KEY": keys.worker, "STRATA_SPARK_REMOTE": settings.spark_remote,
               "STRATA_FAULT_MERGE_DELAY_SECS": "120", "STRATA_COMPACTION_POLL_INTERVAL_SECS": "0.3",
               "STRATA_HOME": str(tmp_path)}
        with open(worker_log, "w") as log:
            worker = subprocess.Popen([sys.executable, "-m", "strata_services.cli", "worker", "--url", url,
                                       "--worker-id", "doomed"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while True:
                job = (await admin.get(f"/v1/compaction/jobs/{job_id}")).json()
                if job["worker_id"] == "doomed" and job["stage"] == "merging":
                    break
                assert worker.poll() is None and time.monotonic() < deadline, worker_log.read_text()
                await asyncio.sleep(0.2)
            doomed_token = job["fencing_token"]
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
        finally:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()

        client = httpx.AsyncClient(base_url=url, timeout=60)
        runner = CompactionRunner(client, worker_id="rescuer", slots=1, executor=MergeExecutor(spark_factory),
                                  api_key=keys.worker, poll_interval_secs=0.3)
        try:
            deadline = time.monotonic() + 180
            while True:
                await runner.step()
                job = (await admin.get(f"/v1/compaction/jobs/{job_id}")).json()
                if job["status"] == "success":
                    break
                assert job["status"] == "in_progress", job
                assert time.monotonic() < deadline, job
                await asyncio.sleep(0.3)
        finally:
            await runner.shutdown()
            await client.aclose()

        assert job["worker_id"] is None or job["worker_id"] == "rescuer"
        assert job["fencing_token"] > doomed_token
        assert job["failures"] == 1 and "lease expired" in job["failure_log"][0]["reason"]
        late = await admin.post(f"/v1/compaction/jobs/{job_id}/status", headers=keys.header(keys.worker), json={
            "job_id": job_id, "fencing_token": doomed_token, "status": "success", "outputs": []})
        assert late.status_code == 409
        await admin.aclose()

    published = (await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "published"},
                                   headers=keys.header(keys.writer))).json()["splits"]
    assert [s["split_id"] for s in published] == job["output_split_ids"]
    assert _rows(storage, [s["uri"] for s in published]) == rows_before  # every row exactly once
