"""Operator controls of the compaction queue through planner-api on real PostgreSQL, with a manual clock: a pause
stops planning and assignment for the index from the next poll (running jobs finish, or are cancelled with
cancel_running) and a resume restarts them; a retry puts an excluded job back in the queue with its claims and its
failure log (or cancels it when its inputs changed), one at a time or per index; the per-tenant cap on merges in
progress holds under a backlog of two tenants."""

from __future__ import annotations

from collections import Counter

import httpx
import pytest
from asgi_lifespan import LifespanManager

from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def _jobs(planner, keys, index_id: str, **params) -> list[dict]:
    response = await planner.get("/v1/compaction/jobs", params={"index_id": index_id, **params},
                                 headers=keys.header(keys.worker))
    assert response.status_code == 200, response.text
    return response.json()["jobs"]


async def _job(planner, keys, job_id: str) -> dict:
    return (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()


async def _exclude(planner, keys, job_id: str, failures: int = 3) -> dict:
    """Fail the job until the threshold excludes it (it must be the only waiting job)."""
    for attempt in range(failures):
        [job] = (await poll(planner, keys, "w", capacity=1))["assignments"]
        assert job["job_id"] == job_id
        result = await poll(planner, keys, "w", capacity=0, updates=[
            {"job_id": job_id, "fencing_token": job["fencing_token"], "status": "failure", "error": f"boom {attempt}"}])
        assert result["updates"][0]["accepted"] is True
    return await _job(planner, keys, job_id)


async def test_pause_stops_planning_and_assignment_within_one_poll_and_resume_restarts_them(indexer, planner, keys):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 20, seed=i)
    admin = keys.header(keys.admin)

    assert (await planner.post(f"/v1/indexes/{index_id}/compaction/pause",
                               headers=keys.header(keys.writer))).status_code == 403
    assert (await planner.post("/v1/indexes/nope/compaction/pause", headers=admin)).status_code == 404
    paused = await planner.post(f"/v1/indexes/{index_id}/compaction/pause", headers=admin)
    assert paused.status_code == 200, paused.text
    assert paused.json()["paused"] is True and paused.json()["paused_at"] is not None
    # The state shows in the index (indexer-api) and in the windows (planner-api).
    index = (await indexer.get(f"/v1/indexes/{index_id}", headers=admin)).json()
    assert index["compaction_paused_at"] is not None and index["indexing_paused_at"] is None
    windows = (await planner.get(f"/v1/indexes/{index_id}/windows", headers=admin)).json()
    assert windows["compaction_paused_at"] is not None

    # The next poll plans nothing for the paused index (its window stays flagged) and hands nothing out.
    assert [a for a in (await poll(planner, keys, "w", capacity=2))["assignments"] if a["index_uid"] ==
            index["index_uid"]] == []
    assert await _jobs(planner, keys, index_id) == []
    # A job created by hand (the operator's trigger) waits too.
    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                   headers=admin)).json()["created_job_ids"]
    assert (await poll(planner, keys, "w", capacity=2))["assignments"] == []

    resumed = await planner.post(f"/v1/indexes/{index_id}/compaction/resume", headers=admin)
    assert resumed.status_code == 200 and resumed.json()["paused"] is False
    assert (await indexer.get(f"/v1/indexes/{index_id}", headers=admin)).json()["compaction_paused_at"] is None
    [assigned] = (await poll(planner, keys, "w", capacity=2))["assignments"]
    assert assigned["job_id"] == job_id


async def test_pause_lets_running_jobs_finish_or_cancels_them_with_cancel_running(indexer, planner, keys):
    index_id = await create_index(indexer, keys)
    window = open_window()
    split_ids = [await ingest_split(indexer, keys, index_id, window, 20, seed=i) for i in range(8)]
    admin = keys.header(keys.admin)
    created = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                  headers=admin)).json()["created_job_ids"]
    assert len(created) == 2
    [running] = (await poll(planner, keys, "w", capacity=1))["assignments"]

    await planner.post(f"/v1/indexes/{index_id}/compaction/pause", headers=admin)
    # The running job keeps its lease (its progress is accepted); the waiting one is not handed out.
    kept = await poll(planner, keys, "w", capacity=3, updates=[
        {"job_id": running["job_id"], "fencing_token": running["fencing_token"], "status": "in_progress",
         "stage": "merging"}])
    assert kept["updates"][0]["accepted"] is True and kept["assignments"] == []

    again = await planner.post(f"/v1/indexes/{index_id}/compaction/pause", params={"cancel_running": "true"},
                               headers=admin)
    assert again.status_code == 200 and again.json()["cancelled_job_ids"] == [running["job_id"]]
    # Pausing a paused index keeps the time it was first paused.
    windows = (await planner.get(f"/v1/indexes/{index_id}/windows", headers=admin)).json()
    assert windows["compaction_paused_at"] is not None
    job = await _job(planner, keys, running["job_id"])
    assert job["status"] == "cancelled"
    refused = await poll(planner, keys, "w", capacity=0, updates=[
        {"job_id": running["job_id"], "fencing_token": running["fencing_token"], "status": "success",
         "outputs": []}])
    assert refused["updates"][0]["accepted"] is False
    # Its claims were released: the planner may take those splits again.
    plan = (await planner.post(f"/v1/indexes/{index_id}/compaction/plan", json={}, headers=admin)).json()
    running_inputs = {i["split_id"] for i in running["inputs"]}
    claimed = {s for s, reason in plan["skipped"].items() if reason == "in_live_job"}
    assert len(running_inputs) == 4 and claimed == set(split_ids) - running_inputs


async def test_retry_requeues_an_excluded_job_with_its_claims_and_failure_log(indexer, planner, keys):
    index_id = await create_index(indexer, keys)
    window = open_window()
    split_ids = [await ingest_split(indexer, keys, index_id, window, 20, seed=i) for i in range(4)]
    admin = keys.header(keys.admin)
    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                   headers=admin)).json()["created_job_ids"]
    excluded = await _exclude(planner, keys, job_id)
    assert excluded["status"] == "excluded" and excluded["failures"] == 3

    assert (await planner.post(f"/v1/compaction/jobs/{job_id}/retry",
                               headers=keys.header(keys.worker))).status_code == 403
    retried = await planner.post(f"/v1/compaction/jobs/{job_id}/retry", headers=admin)
    assert retried.status_code == 200, retried.text
    job = retried.json()
    assert (job["status"], job["failures"], job["stage"]) == ("unassigned", 0, "retried")
    assert [f["reason"] for f in job["failure_log"]] == ["boom 0", "boom 1", "boom 2"], "the failure log is kept"
    # Only an excluded job can be retried.
    assert (await planner.post(f"/v1/compaction/jobs/{job_id}/retry", headers=admin)).status_code == 409
    assert (await planner.post("/v1/compaction/jobs/01ZZZZZZZZZZZZZZZZZZZZZZZZ/retry",
                               headers=admin)).status_code == 404
    # Its claims stayed: no second job over its splits.
    plan = (await planner.post(f"/v1/indexes/{index_id}/compaction/plan", json={}, headers=admin)).json()
    assert plan["operations"] == [] and set(plan["skipped"]) == set(split_ids)
    [again] = (await poll(planner, keys, "w", capacity=1))["assignments"]
    assert again["job_id"] == job_id and again["fencing_token"] > excluded["fencing_token"]


async def test_bulk_retry_requeues_every_excluded_job_of_the_index_and_cancels_those_whose_inputs_changed(
        indexer, planner, keys, planner_clock):
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=6 * 3600)
    window = open_window()
    old_window = window - 2 * 3600
    for i in range(4):
        await ingest_split(indexer, keys, index_id, window, 20, seed=i)
        await ingest_split(indexer, keys, index_id, old_window, 20, seed=i)
    admin = keys.header(keys.admin)
    created = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                  headers=admin)).json()["created_job_ids"]
    assert len(created) == 2
    for _ in range(3):
        taken = (await poll(planner, keys, "w", capacity=2))["assignments"]
        assert sorted(a["job_id"] for a in taken) == sorted(created)
        await poll(planner, keys, "w", capacity=0, updates=[
            {"job_id": a["job_id"], "fencing_token": a["fencing_token"], "status": "failure", "error": "boom"}
            for a in taken])
    jobs = {j["job_id"]: j for j in await _jobs(planner, keys, index_id)}
    assert {j["status"] for j in jobs.values()} == {"excluded"}
    [old_job] = [j for j in jobs.values() if j["window_start"] == old_window]

    # The old window is dropped meanwhile: that job's inputs are gone, so its retry cancels it.
    dropped = await planner.delete(f"/v1/indexes/{index_id}/windows", params={"older_than": window},
                                   headers=admin)
    assert dropped.status_code == 200, dropped.text
    assert [w["window_start"] for w in dropped.json()["windows"]] == [old_window]

    result = await planner.post(f"/v1/indexes/{index_id}/compaction/jobs/retry", headers=admin)
    assert result.status_code == 200, result.text
    body = result.json()
    assert body["cancelled"] == [old_job["job_id"]]
    assert body["retried"] == [j for j in sorted(created) if j != old_job["job_id"]]
    cancelled = await _job(planner, keys, old_job["job_id"])
    assert (cancelled["status"], cancelled["stage"]) == ("cancelled", "inputs_changed")
    # Nothing left to retry.
    empty = (await planner.post(f"/v1/indexes/{index_id}/compaction/jobs/retry", headers=admin)).json()
    assert (empty["retried"], empty["cancelled"]) == ([], [])


async def test_per_tenant_cap_on_merges_in_progress_holds_under_a_backlog_of_two_tenants(
        indexer, keys, settings, planner_clock):
    from strata_planner.app import create_app

    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(12):
        await ingest_split(indexer, keys, index_id, window, 20, seed=i, partition="busy")
    for i in range(4):
        await ingest_split(indexer, keys, index_id, window, 20, seed=i, partition="quiet")
    capped = settings.model_copy(update={"compaction_max_in_progress_per_tenant": 2,
                                         "compaction_max_in_progress_per_index": 10})
    app = create_app(capped, background=False, clock=planner_clock)
    async with LifespanManager(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                                       base_url="http://planner-api", timeout=60) as planner:
        created = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                      headers=keys.header(keys.admin))).json()["created_job_ids"]
        jobs = await _jobs(planner, keys, index_id)
        assert Counter(j["partition_id"] for j in jobs) == {"busy": 3, "quiet": 1} and len(created) == 4

        # The busy tenant's three jobs come first in the queue, yet it gets two slots and the quiet one its job.
        taken = (await poll(planner, keys, "greedy", capacity=10))["assignments"]
        assert Counter(a["partition_id"] for a in taken) == {"busy": 2, "quiet": 1}
        assert (await poll(planner, keys, "greedy", capacity=10))["assignments"] == []
        # A busy job ends: the tenant's third job gets the freed slot.
        [busy] = [a for a in taken if a["partition_id"] == "busy"][:1]
        await planner.post(f"/v1/compaction/jobs/{busy['job_id']}/cancel", headers=keys.header(keys.admin))
        [third] = (await poll(planner, keys, "greedy", capacity=10))["assignments"]
        assert third["partition_id"] == "busy" and third["job_id"] not in {a["job_id"] for a in taken}


async def test_a_paused_index_backlog_does_not_stop_planning_for_other_indexes(indexer, planner, keys):
    window = open_window()
    paused_index = await create_index(indexer, keys)
    for i in range(8):
        await ingest_split(indexer, keys, paused_index, window, 20, seed=i)
    admin = keys.header(keys.admin)
    assert len((await planner.post(f"/v1/indexes/{paused_index}/compaction/trigger", json={},
                                   headers=admin)).json()["created_job_ids"]) == 2
    await planner.post(f"/v1/indexes/{paused_index}/compaction/pause", headers=admin)
    other = await create_index(indexer, keys)
    for i in range(3):
        await ingest_split(indexer, keys, other, window, 20, seed=i)
    # Two jobs wait, for a paused index: they fill none of the two free slots, so the poll plans the other's.
    taken = (await poll(planner, keys, "w", capacity=2))["assignments"]
    other_uid = (await indexer.get(f"/v1/indexes/{other}", headers=admin)).json()["index_uid"]
    assert [a["index_uid"] for a in taken] == [other_uid]
