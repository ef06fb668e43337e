"""Operator controls of the indexing queue through indexer-api (the same shared mechanism as compaction's): a
pause stops assignment of the index's builds from the next poll and a resume restarts it; a retry brings an
excluded build to success once its cause is fixed (a storage failing every upload, injected, then healthy), on
real Spark; a bulk retry requeues every excluded job of the index and cancels the one whose file is gone."""

from __future__ import annotations

import pytest

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


async def _poll(indexer, keys, capacity: int, updates: list | None = None) -> dict:
    response = await indexer.post("/v1/indexing/poll", headers=keys.header(keys.worker),
                                  json={"worker_id": "w", "capacity": capacity, "updates": updates or []})
    assert response.status_code == 200, response.text
    return response.json()


async def test_pause_stops_assignment_within_one_poll_and_resume_restarts_it(indexer, keys):
    index_id = await create_indexed_index(indexer, keys)
    split_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 50))
    admin = keys.header(keys.admin)
    assert (await indexer.post(f"/v1/indexes/{index_id}/indexing/pause",
                               headers=keys.header(keys.writer))).status_code == 403
    paused = await indexer.post(f"/v1/indexes/{index_id}/indexing/pause", headers=admin)
    assert paused.status_code == 200 and paused.json()["queue"] == "indexing", paused.text
    index = (await indexer.get(f"/v1/indexes/{index_id}", headers=admin)).json()
    assert index["indexing_paused_at"] is not None and index["compaction_paused_at"] is None

    assert (await _poll(indexer, keys, capacity=5))["assignments"] == []
    assert (await job_of(indexer, keys, split_id))["status"] == "unassigned"

    assert (await indexer.post(f"/v1/indexes/{index_id}/indexing/resume", headers=admin)).json()["paused"] is False
    [assigned] = (await _poll(indexer, keys, capacity=5))["assignments"]
    assert assigned["split_id"] == split_id

    # Paused again with cancel_running: the running build is cancelled and its worker's report refused.
    again = (await indexer.post(f"/v1/indexes/{index_id}/indexing/pause", params={"cancel_running": "true"},
                                headers=admin)).json()
    assert again["cancelled_job_ids"] == [assigned["job_id"]]
    late = await _poll(indexer, keys, capacity=0, updates=[
        {"job_id": assigned["job_id"], "fencing_token": assigned["fencing_token"], "status": "success",
         "artifacts": []}])
    assert late["updates"][0]["accepted"] is False


async def test_retry_brings_an_excluded_build_to_success_once_the_cause_is_fixed(indexer, keys, spark_factory):
    index_id = await create_indexed_index(indexer, keys)
    split_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 200))
    # Every upload fails (injected), each attempt once: three attempts exclude the job.
    broken = make_runner(indexer, spark_factory, upload_failures=1000, attempts=1)
    [job] = await run_until_indexed(indexer, keys, broken, [split_id])
    assert job["status"] == "excluded" and job["failures"] == 3, job
    assert "injected storage failure" in job["last_error"]

    retried = await indexer.post(f"/v1/indexing/jobs/{job['job_id']}/retry", headers=keys.header(keys.admin))
    assert retried.status_code == 200, retried.text
    assert (retried.json()["status"], retried.json()["failures"]) == ("unassigned", 0)

    [done] = await run_until_indexed(indexer, keys, make_runner(indexer, spark_factory), [split_id])
    assert done["job_id"] == job["job_id"] and done["status"] == "success", done
    assert len(done["failure_log"]) == 3, "the failure log is kept"
    listing = await artifacts_of(indexer, keys, split_id)
    assert listing["snapshot"]["published"]
    assert {(a["artifact_type"], a["column"]) for a in listing["artifacts"] if a["in_published_snapshot"]} == EXPECTED


async def test_bulk_retry_requeues_excluded_builds_and_cancels_the_one_whose_file_is_gone(indexer, planner, keys):
    index_id = await create_indexed_index(indexer, keys, late_data_acceptance_secs=6 * 3600)
    window = open_window()
    old_window = window - 2 * 3600
    split_ids = [await ingest(indexer, keys, index_id, rows_for(w, 30, seed=i))
                 for i, w in enumerate((old_window, window))]
    for _ in range(3):
        taken = (await _poll(indexer, keys, capacity=2))["assignments"]
        assert sorted(a["split_id"] for a in taken) == sorted(split_ids)
        await _poll(indexer, keys, capacity=0, updates=[
            {"job_id": a["job_id"], "fencing_token": a["fencing_token"], "status": "failure", "error": "boom"}
            for a in taken])
    jobs = {s: await job_of(indexer, keys, s) for s in split_ids}
    assert {j["status"] for j in jobs.values()} == {"excluded"}

    # One file is gone meanwhile: its window is dropped (planner-api), which marks it for deletion.
    gone = split_ids[0]
    dropped = await planner.delete(f"/v1/indexes/{index_id}/windows", params={"older_than": window},
                                   headers=keys.header(keys.admin))
    assert dropped.status_code == 200 and dropped.json()["splits"] == 1, dropped.text

    result = await indexer.post(f"/v1/indexes/{index_id}/indexing/jobs/retry", headers=keys.header(keys.admin))
    assert result.status_code == 200, result.text
    assert result.json()["cancelled"] == [jobs[gone]["job_id"]]
    assert result.json()["retried"] == [jobs[split_ids[1]]["job_id"]]
    cancelled = await job_of(indexer, keys, gone)
    assert (cancelled["status"], cancelled["stage"]) == ("cancelled", "inputs_changed")
    retried = await job_of(indexer, keys, split_ids[1])
    assert (retried["status"], retried["failures"], len(retried["failure_log"])) == ("unassigned", 0, 3)


async def test_a_waiting_build_whose_file_is_gone_is_cancelled_by_the_next_poll_not_handed_out(indexer, planner, keys):
    index_id = await create_indexed_index(indexer, keys, late_data_acceptance_secs=6 * 3600)
    window = open_window()
    gone = await ingest(indexer, keys, index_id, rows_for(window - 2 * 3600, 30, seed=1))
    kept = await ingest(indexer, keys, index_id, rows_for(window, 30, seed=2))
    # The older file, first in the queue, is gone before any poll: its window is dropped (marked for deletion).
    dropped = await planner.delete(f"/v1/indexes/{index_id}/windows", params={"older_than": window},
                                   headers=keys.header(keys.admin))
    assert dropped.status_code == 200 and dropped.json()["splits"] == 1, dropped.text

    taken = (await _poll(indexer, keys, capacity=1))["assignments"]

    assert [a["split_id"] for a in taken] == [kept]
    cancelled = await job_of(indexer, keys, gone)
    assert (cancelled["status"], cancelled["stage"]) == ("cancelled", "file_not_published"), cancelled
