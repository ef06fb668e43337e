"""The scheduler through its HTTP protocol on real PostgreSQL, with a manual clock: planning (dry run and
trigger), claims (a split in at most one live job), leases and fencing tokens, expiry and reassignment, stale
writes refused, the failure threshold, cancellation, and capacity-proportional planning."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import create_async_engine

from tests.helpers import db_snapshot
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def _index_with_splits(indexer, keys, n: int, rows: int = 20) -> tuple[str, int, list[str]]:
    index_id = await create_index(indexer, keys)
    window = open_window()
    split_ids = [await ingest_split(indexer, keys, index_id, window, rows, seed=i) for i in range(n)]
    return index_id, window, split_ids


async def test_plan_is_a_dry_run_with_reasons(indexer, planner, keys, database_url):
    index_id, window, split_ids = await _index_with_splits(indexer, keys, 5)
    before = await db_snapshot(database_url)
    response = await planner.post(f"/v1/indexes/{index_id}/compaction/plan", json={},
                                  headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["dry_run"] is True and plan["created_job_ids"] == []
    [op] = plan["operations"]
    assert op["window_start"] == window and len(op["split_ids"]) == 4 and op["kind"] == "level"
    [left] = set(split_ids) - set(op["split_ids"])
    assert plan["skipped"] == {left: "level_below_merge_factor"}
    assert await db_snapshot(database_url) == before

    final = (await planner.post(f"/v1/indexes/{index_id}/compaction/plan", json={"final": True},
                                headers=keys.header(keys.admin))).json()
    [final_op] = final["operations"]
    assert final_op["kind"] == "final" and len(final_op["split_ids"]) == 4  # max_merge_factor bounds fan-in
    assert list(final["skipped"].values()) == ["alone_in_window"]


async def test_trigger_claims_each_split_once(indexer, planner, keys, database_url):
    index_id, _, split_ids = await _index_with_splits(indexer, keys, 4)
    first = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                headers=keys.header(keys.admin))).json()
    assert len(first["created_job_ids"]) == 1
    second = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))).json()
    assert second["created_job_ids"] == []
    assert set(second["skipped"].values()) == {"in_live_job"}

    # The database itself refuses a second live claim, whatever a planner believes.
    engine = create_async_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text(
                "INSERT INTO compaction_jobs (job_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema,"
                " window_duration_secs, window_start, kind, level, status, failures, failure_log, progress,"
                " input_split_ids, input_rows, input_bytes, output_split_ids) SELECT '01ZZZZZZZZZZZZZZZZZZZZZZZZ',"
                " index_uid, source_id, partition_id, doc_mapping_uid, sort_schema, window_duration_secs,"
                " window_start, 'level', 0, 'unassigned', 0, '[]', 0, '{}', 0, 0, '{}' FROM compaction_jobs LIMIT 1"))
            with pytest.raises(IntegrityError):
                await connection.execute(text(
                    "INSERT INTO compaction_job_inputs (job_id, split_id, live) VALUES "
                    "('01ZZZZZZZZZZZZZZZZZZZZZZZZ', :split, true)"), {"split": split_ids[0]})
    finally:
        await engine.dispose()


async def test_poll_assigns_with_lease_and_increasing_tokens(indexer, planner, keys):
    index_id, _, _ = await _index_with_splits(indexer, keys, 8)
    await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
    first = await poll(planner, keys, "w1", capacity=1)
    second = await poll(planner, keys, "w2", capacity=5)
    assert len(first["assignments"]) == 1 and len(second["assignments"]) == 1
    a, b = first["assignments"][0], second["assignments"][0]
    assert a["job_id"] != b["job_id"]
    assert b["fencing_token"] > a["fencing_token"]
    assert a["lease_secs"] == 15.0
    assert len(a["inputs"]) == 4 and all(i["uri"].startswith("file://") for i in a["inputs"])
    assert a["output_uri_prefix"].endswith(f"/merges/{a['job_id']}/{a['fencing_token']}")
    assert (await poll(planner, keys, "w3", capacity=3))["assignments"] == []


async def test_expired_lease_reassigns_with_larger_token_and_refuses_the_old_one(indexer, planner, keys,
                                                                                 planner_clock):
    index_id, _, _ = await _index_with_splits(indexer, keys, 4)
    await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
    [old] = (await poll(planner, keys, "w1", capacity=1))["assignments"]

    planner_clock.advance(7)
    refreshed = await poll(planner, keys, "w1", capacity=0, updates=[
        {"job_id": old["job_id"], "fencing_token": old["fencing_token"], "status": "in_progress", "stage": "merging"}])
    assert refreshed["updates"][0]["accepted"] is True
    planner_clock.advance(14)  # within the refreshed lease
    assert (await poll(planner, keys, "w2", capacity=1))["assignments"] == []

    planner_clock.advance(16)  # past it: w1 stopped reporting
    [new] = (await poll(planner, keys, "w2", capacity=1))["assignments"]
    assert new["job_id"] == old["job_id"] and new["fencing_token"] > old["fencing_token"]

    late = await poll(planner, keys, "w1", capacity=0, updates=[
        {"job_id": old["job_id"], "fencing_token": old["fencing_token"], "status": "in_progress"}])
    assert late["updates"][0]["accepted"] is False and "stale" in late["updates"][0]["reason"]
    direct = await planner.post(f"/v1/compaction/jobs/{old['job_id']}/status", headers=keys.header(keys.worker),
                                json={"job_id": old["job_id"], "fencing_token": old["fencing_token"],
                                      "status": "failure", "error": "late"})
    assert direct.status_code == 409

    job = (await planner.get(f"/v1/compaction/jobs/{old['job_id']}", headers=keys.header(keys.worker))).json()
    assert job["status"] == "in_progress" and job["worker_id"] == "w2" and job["failures"] == 1
    assert "lease expired" in job["failure_log"][0]["reason"]


async def test_failures_past_the_threshold_exclude_the_job(indexer, planner, keys):
    index_id, _, _ = await _index_with_splits(indexer, keys, 4)
    await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
    for attempt in range(3):
        [job] = (await poll(planner, keys, "w", capacity=1))["assignments"]
        result = await poll(planner, keys, "w", capacity=0, updates=[
            {"job_id": job["job_id"], "fencing_token": job["fencing_token"], "status": "failure",
             "error": f"boom {attempt}"}])
        assert result["updates"][0]["accepted"] is True
    detail = (await planner.get(f"/v1/compaction/jobs/{job['job_id']}", headers=keys.header(keys.worker))).json()
    assert detail["status"] == "excluded" and detail["failures"] == 3 and detail["last_error"] == "boom 2"
    assert (await poll(planner, keys, "w", capacity=1))["assignments"] == []


async def test_cancel_refuses_the_worker_and_releases_inputs(indexer, planner, keys):
    index_id, _, split_ids = await _index_with_splits(indexer, keys, 4)
    await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
    [job] = (await poll(planner, keys, "w", capacity=1))["assignments"]
    assert (await planner.post(f"/v1/compaction/jobs/{job['job_id']}/cancel",
                               headers=keys.header(keys.worker))).status_code == 403
    cancelled = await planner.post(f"/v1/compaction/jobs/{job['job_id']}/cancel", headers=keys.header(keys.admin))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = await planner.post(f"/v1/compaction/jobs/{job['job_id']}/cancel", headers=keys.header(keys.admin))
    assert again.status_code == 409
    refused = await poll(planner, keys, "w", capacity=0, updates=[
        {"job_id": job["job_id"], "fencing_token": job["fencing_token"], "status": "success", "outputs": []}])
    assert refused["updates"][0]["accepted"] is False and "cancelled" in refused["updates"][0]["reason"]
    replanned = (await planner.post(f"/v1/indexes/{index_id}/compaction/plan", json={},
                                    headers=keys.header(keys.admin))).json()
    assert sorted(replanned["operations"][0]["split_ids"]) == sorted(split_ids)


async def test_deleting_an_index_cancels_its_live_jobs(indexer, planner, keys):
    index_id, _, split_ids = await _index_with_splits(indexer, keys, 8)
    created = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                  headers=keys.header(keys.admin))).json()["created_job_ids"]
    [running] = (await poll(planner, keys, "w", capacity=1))["assignments"]
    indexing = (await indexer.get("/v1/indexing/jobs", params={"index_id": index_id},
                                  headers=keys.header(keys.writer))).json()["jobs"]
    assert len(created) == 2 and sorted(j["split_id"] for j in indexing) == sorted(split_ids)

    deleted = await indexer.delete(f"/v1/indexes/{index_id}", headers=keys.header(keys.admin))
    assert deleted.status_code == 204
    for job_id in created:
        job = (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()
        assert (job["status"], job["stage"]) == ("cancelled", "index_deleted")
    for job in indexing:
        job = (await indexer.get(f"/v1/indexing/jobs/{job['job_id']}", headers=keys.header(keys.worker))).json()
        assert (job["status"], job["stage"]) == ("cancelled", "index_deleted")
    refused = await poll(planner, keys, "w", capacity=0, updates=[
        {"job_id": running["job_id"], "fencing_token": running["fencing_token"], "status": "success", "outputs": []}])
    assert refused["updates"][0]["accepted"] is False and "cancelled" in refused["updates"][0]["reason"]


async def test_polling_plans_new_jobs_in_proportion_to_capacity(indexer, planner, keys):
    """A poll plans up to plan_ahead (8) jobs per free slot, and no pass at all while enough wait."""
    index_ids = [(await _index_with_splits(indexer, keys, 3))[0] for _ in range(3)]

    async def unassigned() -> list[dict]:
        return (await planner.get("/v1/compaction/jobs", params={"status": "unassigned"},
                                  headers=keys.header(keys.worker))).json()["jobs"]

    first = await poll(planner, keys, "w", capacity=2)
    assert len(first["assignments"]) == 2, "two jobs for two free slots"
    assert len({a["index_uid"] for a in first["assignments"]}) == 2
    [ahead] = await unassigned()  # the third index's merge, planned in the same pass
    await _index_with_splits(indexer, keys, 3)
    second = await poll(planner, keys, "w", capacity=1)
    assert [a["job_id"] for a in second["assignments"]] == [ahead["job_id"]]
    assert await unassigned() == [], "one job waited for the one free slot: no pass, the new index waits"
    third = await poll(planner, keys, "w", capacity=1)
    assert len(third["assignments"]) == 1, "the queue ran out: a pass plans the new index"
    assert len(index_ids) == 3


async def test_trigger_errors(planner, keys):
    assert (await planner.post("/v1/indexes/nope/compaction/trigger", json={},
                               headers=keys.header(keys.admin))).status_code == 404
    assert (await planner.post("/v1/indexes/nope/compaction/trigger", json={},
                               headers=keys.header(keys.writer))).status_code == 403
    bad = await planner.post("/v1/indexes/nope/compaction/trigger", json={"from": 10, "to": 5},
                             headers=keys.header(keys.admin))
    assert bad.status_code in (404, 422)
    assert (await planner.post("/v1/compaction/poll", json={"worker_id": "w", "capacity": -1},
                               headers=keys.header(keys.worker))).status_code == 422


async def test_metrics_report_backlog_and_write_amplification(indexer, planner, keys):
    from prometheus_client import CollectorRegistry, generate_latest

    from strata_planner.compaction.metrics import CompactionMetrics

    index_id, _, _ = await _index_with_splits(indexer, keys, 4)
    await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
    registry = CollectorRegistry()
    metrics = CompactionMetrics(registry)
    await metrics.refresh(planner.app.state.strata.sessions, planner.app.state.strata.clock())
    text = generate_latest(registry).decode()
    assert 'strata_compaction_jobs{status="unassigned"} 1.0' in text
    # Nothing merged yet: every published byte of this index has been written once.
    assert f'strata_compaction_write_amplification{{index_id="{index_id}"}} 1.0' in text


async def test_a_planner_pass_shares_its_budget_between_indexes(indexer, planner, keys):
    """One index's backlog cannot take a whole pass (and starve another's merges, a final one included): with a
    budget of two and two indexes that each need two merges, each index gets one."""
    from strata_planner.compaction.scheduler import plan_incrementally

    index_ids = [(await _index_with_splits(indexer, keys, 8))[0] for _ in range(2)]
    state = planner.app.state.strata
    async with state.sessions() as session:
        assert await plan_incrementally(session, state.clock(), budget=2) == 2
        await session.commit()
    for index_id in index_ids:
        jobs = (await planner.get("/v1/compaction/jobs", params={"index_id": index_id},
                                  headers=keys.header(keys.worker))).json()["jobs"]
        assert len(jobs) == 1, (index_id, jobs)


async def test_a_pass_that_read_only_the_heads_of_a_window_leaves_it_for_the_next_pass(indexer, planner, keys,
                                                                                       planner_clock):
    """With a budget of one merge a pass reads the 4 smallest of the window's 8 splits (max_merge_factor 4) and
    creates one merge; the other 4 may make another, so the window stays changed and the next pass plans it at
    once, without waiting for the first merge to publish."""
    from datetime import UTC, datetime

    from strata_metastore.repositories import IndexRepository
    from strata_planner.compaction.scheduler import _plan_one

    index_id, _, split_ids = await _index_with_splits(indexer, keys, 8)
    # The planner's clock past the splits' landing: a pass then clears the window's flag unless it must not.
    planner_clock.now = datetime.now(UTC)
    state = planner.app.state.strata
    for _ in range(2):
        async with state.sessions() as session:
            index = await IndexRepository(session).get_live(index_id)
            assert await _plan_one(session, index, state.clock(), 1) == 1
            await session.commit()
    jobs = (await planner.get("/v1/compaction/jobs", params={"index_id": index_id},
                              headers=keys.header(keys.worker))).json()["jobs"]
    assert sorted(s for job in jobs for s in job["input_split_ids"]) == sorted(split_ids)
    async with state.sessions() as session:
        index = await IndexRepository(session).get_live(index_id)
        assert await _plan_one(session, index, state.clock(), 1) == 0, "nothing is left to merge"
