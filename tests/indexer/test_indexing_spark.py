"""Indexing jobs end to end through real Spark Connect builds: every published file gets one job and a
published snapshot of its artifacts, visible all at once while readers poll; a storage that fails the first
uploads is retried through; a worker that dies mid-build leaves nothing visible and the job is taken again."""

from __future__ import annotations

import asyncio
import json

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from strata_core.artifacts import load_artifact
from strata_indexer.services import indexer_services_of
from tests.indexer.indexing_helpers import (
    EXPECTED,
    artifacts_of,
    create_indexed_index,
    ingest,
    job_of,
    make_runner,
    rows_for,
    run_until_indexed,
)
from tests.planner.compaction_helpers import open_window

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


def _published_identities(listing: dict) -> set[tuple[str, str]]:
    return {(a["artifact_type"], a["column"]) for a in listing["artifacts"] if a["in_published_snapshot"]}


async def test_every_published_file_gets_a_published_snapshot(indexer, keys, storage, spark_factory):
    index_id = await create_indexed_index(indexer, keys)
    window = open_window()
    split_ids = [await ingest(indexer, keys, index_id, rows_for(window, 300, seed=i)) for i in range(2)]
    lag = (await indexer.get("/v1/indexing/lag", headers=keys.header(keys.writer))).json()["indexes"]
    [mine] = [entry for entry in lag if entry["index_id"] == index_id]
    assert mine["files_waiting"] == 2 and mine["oldest_waiting_secs"] is not None
    for split_id in split_ids:
        job = await job_of(indexer, keys, split_id)
        assert (job["status"], job["reason"]) == ("unassigned", "published")
        assert not (await artifacts_of(indexer, keys, split_id))["snapshot"]["published"]

    jobs = await run_until_indexed(indexer, keys, make_runner(indexer, spark_factory), split_ids)
    assert [j["status"] for j in jobs] == ["success", "success"], jobs
    assert all(j["artifact_count"] == len(EXPECTED) for j in jobs)

    for split_id in split_ids:
        listing = await artifacts_of(indexer, keys, split_id)
        assert listing["snapshot"]["published"] and listing["snapshot"]["artifact_count"] == len(EXPECTED)
        assert _published_identities(listing) == EXPECTED
        manifest = json.loads(storage.open_input(listing["snapshot"]["manifest_uri"]).read())
        assert {(a["artifact_type"], a["column"]) for a in manifest["artifacts"]} == EXPECTED
        assert manifest["split_id"] == split_id
        # The stored bitmap answers exactly which row groups hold a value.
        split = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()
        uri = next(s["uri"] for s in split["splits"] if s["split_id"] == split_id)
        parquet = pq.ParquetFile(storage.open_input(uri))
        [bitmap] = [a for a in listing["artifacts"] if (a["artifact_type"], a["column"]) == ("bitmap", "service")]
        _, artifact = load_artifact(storage.open_input(bitmap["uri"]).read())
        service = parquet.read_row_group(0, ["service"])["service"][0].as_py()
        expected_groups = {g for g in range(parquet.num_row_groups)
                           if pc.any(pc.equal(parquet.read_row_group(g, ["service"])["service"], service)).as_py()}
        assert expected_groups and artifact.row_groups_containing([service]) == expected_groups

    lag = (await indexer.get("/v1/indexing/lag", headers=keys.header(keys.writer))).json()["indexes"]
    assert not [entry for entry in lag if entry["index_id"] == index_id]
    state = indexer.app.state.strata
    await indexer_services_of(indexer.app).metrics.refresh(state.sessions, state.clock())
    metrics = (await indexer.get("/metrics")).text
    assert "strata_indexing_lag_files" in metrics and f'index_id="{index_id}"' not in metrics


async def test_snapshot_visibility_is_all_or_nothing_while_readers_poll(indexer, keys, spark_factory):
    index_id = await create_indexed_index(indexer, keys)
    split_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 500))
    observations: list[tuple[bool, set]] = []
    done = asyncio.Event()

    async def reader() -> None:
        while not done.is_set():
            listing = await artifacts_of(indexer, keys, split_id)
            observations.append((listing["snapshot"]["published"], _published_identities(listing),
                                 len(listing["artifacts"])))
            await asyncio.sleep(0.01)

    task = asyncio.create_task(reader())
    try:
        [job] = await run_until_indexed(indexer, keys, make_runner(indexer, spark_factory), [split_id])
    finally:
        done.set()
        await task
    assert job["status"] == "success"
    observations.append((True, _published_identities(await artifacts_of(indexer, keys, split_id)), len(EXPECTED)))
    # Registration and publication are one transaction: a reader sees no artifact, or all of them published.
    for observed in observations:
        assert observed in [(False, set(), 0), (True, EXPECTED, len(EXPECTED))], observations
    assert any(not published for published, _, _ in observations)


async def test_a_storage_failing_the_first_uploads_is_retried_through(indexer, keys, spark_factory):
    index_id = await create_indexed_index(indexer, keys)
    split_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 200))
    runner = make_runner(indexer, spark_factory, upload_failures=3, attempts=5)
    [job] = await run_until_indexed(indexer, keys, runner, [split_id])
    assert job["status"] == "success" and job["failures"] == 0, job
    assert _published_identities(await artifacts_of(indexer, keys, split_id)) == EXPECTED


async def test_uploads_that_keep_failing_fail_the_attempt_and_publish_nothing(indexer, keys, spark_factory):
    index_id = await create_indexed_index(indexer, keys)
    split_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 200))
    runner = make_runner(indexer, spark_factory, upload_failures=1000, attempts=2)
    for _ in range(200):
        await runner.step()
        job = await job_of(indexer, keys, split_id)
        if job["failures"] >= 1:
            break
        await asyncio.sleep(0.1)
    await runner.shutdown()
    # The failed attempt is counted and the job goes back to the queue (the same poll may hand it out again).
    assert job["failures"] == 1 and job["status"] in ("unassigned", "in_progress"), job
    assert "injected storage failure" in job["last_error"]
    listing = await artifacts_of(indexer, keys, split_id)
    assert not listing["snapshot"]["published"] and listing["artifacts"] == []


async def test_a_worker_that_dies_mid_build_leaves_nothing_visible_and_the_job_is_taken_again(
        indexer, keys, spark_factory, planner_clock, settings):
    index_id = await create_indexed_index(indexer, keys)
    split_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 200))
    # The doomed worker takes the job and never reports again (as if killed).
    taken = (await indexer.post("/v1/indexing/poll", headers=keys.header(keys.worker),
                                json={"worker_id": "doomed", "capacity": 1})).json()
    [assignment] = [a for a in taken["assignments"] if a["split_id"] == split_id]
    # The indexing queue's own lease, not compaction's.
    assert taken["lease_secs"] == assignment["lease_secs"] == settings.indexing_lease_secs
    assert not (await artifacts_of(indexer, keys, split_id))["snapshot"]["published"]

    planner_clock.advance(settings.indexing_lease_secs + 1)
    [job] = await run_until_indexed(indexer, keys, make_runner(indexer, spark_factory, worker_id="rescuer"),
                                    [split_id])
    assert job["status"] == "success" and job["failures"] == 1 and job["fencing_token"] > assignment["fencing_token"]
    assert "lease expired" in job["failure_log"][0]["reason"]
    # The doomed worker's late report is refused: the job is no longer its own.
    late = (await indexer.post("/v1/indexing/poll", headers=keys.header(keys.worker), json={
        "worker_id": "doomed", "capacity": 0,
        "updates": [{"job_id": assignment["job_id"], "fencing_token": assignment["fencing_token"],
                     "status": "success", "artifacts": []}]})).json()
    assert late["updates"][0]["accepted"] is False and late["updates"][0]["reason"] == "job is success"
    assert _published_identities(await artifacts_of(indexer, keys, split_id)) == EXPECTED


async def test_per_tenant_limit_on_jobs_in_progress(indexer, keys, settings):
    index_id = await create_indexed_index(indexer, keys)
    window = open_window()
    # More files than the limit, so it is what stops the poll, not the backlog.
    busy = [await ingest(indexer, keys, index_id, rows_for(window, 20, seed=i), partition="busy")
            for i in range(settings.indexing_max_in_progress_per_tenant + 2)]
    quiet = await ingest(indexer, keys, index_id, rows_for(window, 20), partition="quiet")
    taken = (await indexer.post("/v1/indexing/poll", headers=keys.header(keys.worker),
                                json={"worker_id": "greedy", "capacity": 10})).json()["assignments"]
    per_tenant = {}
    for a in taken:
        per_tenant[a["partition_id"]] = per_tenant.get(a["partition_id"], 0) + 1
    assert per_tenant == {"busy": settings.indexing_max_in_progress_per_tenant, "quiet": 1}
    assert {a["split_id"] for a in taken} <= {*busy, quiet}
