"""A power loss in the middle of a delete's rewrites (DL-5 with real processes): the compaction worker and the
planner-api serving it, both real OS processes, die together by SIGKILL while a rewrite's output is written and not
yet reported, after another rewrite of the same delete has published. Ingestion never stops (into another
partition), queries keep being answered by query-api throughout. A new planner-api and a new worker then finish the
delete: it succeeds with the right receipt, the rows left are exactly the rows before minus the rows it removed
(as multisets), no query ever returns a covered deleted row, the killed attempt's output is never published, and
the killed worker's late report is refused (fencing)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import suppress

import httpx
import pyarrow.parquet as pq
import pytest

from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from strata_services.local.api_process import ApiProcess
from strata_services.local.processes import free_port
from tests.e2e.fleet import child_env
from tests.planner.compaction_helpers import create_index, ingest_split, open_window

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]
DELETED = ("service_03", "service_07")
WHERE = f"service IN {DELETED}"
COVERED_SEEDS = (61, 62, 63, 64)


def _rows(storage, uris) -> Counter:
    return Counter(tuple(sorted(r.items())) for uri in uris for r in pq.read_table(storage.open_input(uri)).to_pylist())


def _deleted(rows: Counter) -> Counter:
    return Counter({row: n for row, n in rows.items() if dict(row)["service"] in DELETED})


class Worker:
    """`strata worker` as a child process in its own process group (a SIGKILL takes its children too)."""

    def __init__(self, url: str, worker_id: str, env: dict[str, str], log_path) -> None:
        self.log_path = log_path
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "strata_services.cli", "worker", "--url", url,
                                          "--worker-id", worker_id, "--slots", "2"], env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


async def test_dl5_a_power_loss_mid_rewrite_converges_exactly(indexer, query, keys, settings, storage,
                                                              spark_factory, tmp_path):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in COVERED_SEEDS:
        await ingest_split(indexer, keys, index_id, window, 300, seed=seed)
    listed = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()["splits"]
    rows_before = _rows(storage, [s["uri"] for s in listed])
    removed = _deleted(rows_before)
    assert removed, "the sample rows hold some to delete"
    admin, worker_key = keys.header(keys.admin), keys.header(keys.worker)

    async def covered_deleted_rows_visible() -> int:
        """Deleted rows of the covered splits a query returns (ingestion during the delete goes to partition
        `late`, which the delete, accepted before it, does not cover)."""
        response = await query.post("/v1/query", headers=admin, json={
            "sql": f"SELECT count(*) AS n FROM \"{index_id}\" WHERE {WHERE} AND partition_id = 'default'"})
        assert response.status_code == 200, response.text
        return response.json()["rows"][0]["n"]

    env = child_env(settings, keys, tmp_path / "home", STRATA_COMPACTION_WORKER_SLOTS="0",
                    STRATA_COMPACTION_LEASE_SECS="3", STRATA_COMPACTION_POLL_INTERVAL_SECS="0.3",
                    STRATA_COMPACTION_LOCAL_MAX_BYTES="0", STRATA_GC_GRACE_SECS="3600")
    planner = ApiProcess("planner-api", "127.0.0.1", free_port(), env, tmp_path, "planner-api-doomed")
    worker_env = {**os.environ, **env, "STRATA_API_KEY": keys.worker}
    workers: list[Worker] = []
    late_splits: list[str] = []
    stop_writing = asyncio.Event()

    async def write_late() -> None:
        seed = 100
        while not stop_writing.is_set():
            late_splits.append(await ingest_split(indexer, keys, index_id, window, 100, seed=seed,
                                                  partition="late"))
            seed += 1
            await asyncio.sleep(0.5)

    writing: asyncio.Task | None = None
    try:
        planner.start()
        await asyncio.to_thread(planner.wait_healthy, 120)
        api = httpx.AsyncClient(base_url=planner.url, timeout=60)
        accepted = await api.post(f"/v1/indexes/{index_id}/deletes", json={"where": WHERE}, headers=admin)
        assert accepted.status_code == 202, accepted.text
        delete_id = accepted.json()["delete_id"]
        assert accepted.json()["progress"]["splits_covered"] == len(COVERED_SEEDS)
        assert await covered_deleted_rows_visible() == 0

        async def delete_status() -> dict:
            response = await api.get(f"/v1/indexes/{index_id}/deletes/{delete_id}", headers=admin)
            assert response.status_code == 200, response.text
            return response.json()

        # One rewrite publishes before the power loss: the delete is part done when it strikes.
        early = CompactionRunner(api, worker_id="early", slots=1, executor=MergeExecutor(spark_factory),
                                 api_key=keys.worker, poll_interval_secs=0.3)
        try:
            deadline = time.monotonic() + 120
            while (await delete_status())["progress"]["splits_done"] < 1:
                assert time.monotonic() < deadline, await delete_status()
                await early.step()
                await asyncio.sleep(0.2)
        finally:
            await early.shutdown()
        assert await covered_deleted_rows_visible() == 0

        # The doomed worker writes its rewrites' outputs, then holds the results (a report that never comes).
        workers.append(Worker(planner.url, "doomed", {**worker_env, "STRATA_FAULT_REPORT_DELAY_SECS": "300"},
                              tmp_path / "doomed.log"))
        deadline = time.monotonic() + 120
        while True:
            jobs = (await api.get("/v1/compaction/jobs", headers=worker_key, params={
                "index_id": index_id, "status": ["in_progress"]})).json()["jobs"]
            held = [(j["job_id"], j["fencing_token"]) for j in jobs if j["worker_id"] == "doomed"]
            written = {job: [u for u in storage.list_files() if f"/{job}/{token}/" in u] for job, token in held}
            if any(written.values()):
                break
            assert workers[0].alive() and time.monotonic() < deadline, workers[0].log_path.read_text()
            await asyncio.sleep(0.2)
        assert all(j["kind"] == "rewrite" for j in jobs if j["worker_id"] == "doomed")

        # Power loss: the worker and the planner-api serving it die at once, mid-rewrite.
        os.killpg(planner.pid, signal.SIGKILL)
        workers[0].kill()
        await asyncio.to_thread(planner.wait_stopped, 10)
        await api.aclose()
        orphans = {u for files in written.values() for u in files}
        assert orphans
        writing = asyncio.create_task(write_late())
        assert await covered_deleted_rows_visible() == 0  # query-api answers without the planner

        # Power back: the same planner-api address, a new worker.
        planner.start()
        await asyncio.to_thread(planner.wait_healthy, 120)
        api = httpx.AsyncClient(base_url=planner.url, timeout=60)
        workers.append(Worker(planner.url, "rescuer", worker_env, tmp_path / "rescuer.log"))
        deadline = time.monotonic() + 180
        while (status := await delete_status())["status"] not in ("succeeded", "failed"):
            assert await covered_deleted_rows_visible() == 0
            assert workers[1].alive() and time.monotonic() < deadline, (status, workers[1].log_path.read_text())
            await asyncio.sleep(0.5)
        assert status["status"] == "succeeded", status
        assert await covered_deleted_rows_visible() == 0
        stop_writing.set()
        await writing
        writing = None

        # The receipt: every covered split rewritten once, exactly the deleted rows removed.
        receipt = status["receipt"]
        assert receipt["splits_rewritten"] == len(COVERED_SEEDS)
        assert receipt["rows_removed"] == sum(removed.values())
        by_split = {s["split_id"]: s for s in receipt["splits"]}
        assert set(by_split) == {s["split_id"] for s in listed}
        for split in listed:
            mine = _rows(storage, [split["uri"]])
            assert by_split[split["split_id"]]["rows_removed"] == sum(_deleted(mine).values())

        # Fencing: the killed worker's late reports are refused, and its jobs finished under larger tokens.
        for job_id, token in held:
            late = await api.post(f"/v1/compaction/jobs/{job_id}/status", headers=worker_key, json={
                "job_id": job_id, "fencing_token": token, "status": "success", "outputs": []})
            assert late.status_code == 409, late.text
            job = (await api.get(f"/v1/compaction/jobs/{job_id}", headers=worker_key)).json()
            assert job["status"] == "success" and job["fencing_token"] > token, job
        await api.aclose()
    finally:
        stop_writing.set()
        if writing is not None:
            with suppress(Exception):
                await writing
        for worker in workers:
            worker.stop()
        await asyncio.to_thread(planner.stop)

    # Rows out = rows in - rows removed, as multisets (DL-1), and every late row exactly once; the killed attempt's
    # outputs were never published, and no file is published twice.
    every = (await indexer.get(f"/v1/indexes/{index_id}/splits", params={"limit": 1000},
                               headers=keys.header(keys.writer))).json()["splits"]
    published = [s for s in every if s["state"] == "published"]
    assert len({s["uri"] for s in published}) == len(published)
    assert not orphans & {s["uri"] for s in every}
    default = [s["uri"] for s in published if s["partition_id"] == "default"]
    late = [s["uri"] for s in published if s["partition_id"] == "late"]
    assert _rows(storage, default) == rows_before - removed
    assert late_splits
    ingested = {s["split_id"]: s["uri"] for s in every}
    assert _rows(storage, late) == _rows(storage, [ingested[s] for s in late_splits])
