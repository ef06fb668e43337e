"""Retention through planner-api on real PostgreSQL (and a real query on the kept files): exactly the windows
whose end is older than the period go, a window straddling the cutoff stays whole and no row newer than the
period is dropped (TW-1: a split's rows lie in its window); a live merge on a dropped window is cancelled first
and its worker refused; a query planned before the drop finishes on the files the grace period keeps; the
periodic pass follows each index's interval; what went shows in the windows listing and the metrics."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from asgi_lifespan import LifespanManager
from prometheus_client import CollectorRegistry, generate_latest

from strata_core.domain.windows import retention_cutoff, window_expired
from strata_planner.compaction.dependencies import planner_services_of
from strata_planner.compaction.metrics import CompactionMetrics
from strata_planner.compaction.retention import RetentionSchedule
from strata_query.dependencies import query_service_of
from tests.planner.compaction_helpers import create_index, ingest_split, poll

pytestmark = [pytest.mark.spark]
W = 900
PERIOD = 3600


def test_the_rule_keeps_a_window_straddling_the_cutoff():
    cutoff = retention_cutoff(now_secs=10 * W + 450, period_secs=PERIOD)
    assert cutoff == 6 * W + 450
    assert window_expired(5 * W, W, cutoff)  # ends at 6W, before the cutoff
    assert not window_expired(6 * W, W, cutoff)  # straddles it: stays whole
    assert window_expired(5 * W, W, 6 * W)  # ends exactly at the cutoff: every row is older
    assert not window_expired(6 * W, W, 6 * W)


@pytest.fixture
def aligned_clock(planner_clock) -> int:
    """The manual clock half-way through a window; returns that window's start (A). With a one-hour period the
    cutoff is A - 3150: window A - 4500 ends before it, window A - 3600 straddles it."""
    now = int(datetime.now(UTC).timestamp())
    start = now - now % W
    planner_clock.now = datetime.fromtimestamp(start + 450, UTC)
    return start


async def _windows(planner, keys, index_id: str) -> dict:
    response = await planner.get(f"/v1/indexes/{index_id}/windows", headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    return response.json()


async def _splits(indexer, keys, index_id: str, state: str) -> list[dict]:
    response = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": state, "limit": 1000},
                                 headers=keys.header(keys.writer))
    return response.json()["splits"]


async def test_retention_drops_exactly_the_expired_windows_and_cancels_their_live_merge(
        indexer, planner, keys, aligned_clock, planner_clock):
    a = aligned_clock
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=6 * 3600,
                                  retention={"period_secs": PERIOD, "interval_secs": 60})
    old, edge, straddling, recent = a - 8 * W, a - 5 * W, a - 4 * W, a
    old_splits = [await ingest_split(indexer, keys, index_id, old, 20, seed=i) for i in range(3)]
    for window in (edge, straddling, recent):
        await ingest_split(indexer, keys, index_id, window, 20, seed=7)
    admin = keys.header(keys.admin)

    # A merge of the old window is running when retention comes.
    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={"from": old, "to": old + 1},
                                   headers=admin)).json()["created_job_ids"]
    [merge] = (await poll(planner, keys, "w", capacity=1))["assignments"]
    assert merge["job_id"] == job_id

    dry = await planner.post(f"/v1/indexes/{index_id}/retention/apply", json={"dry_run": True}, headers=admin)
    assert dry.status_code == 200, dry.text
    assert dry.json()["cutoff"] == a + 450 - PERIOD
    assert [(w["window_start"], w["splits"]) for w in dry.json()["windows"]] == [(old, 3), (edge, 1)]
    assert dry.json()["windows"][0]["cancelled_job_ids"] == [job_id]
    page = await _windows(planner, keys, index_id)
    assert (page["retention_period_secs"], page["retention_cutoff"]) == (PERIOD, a + 450 - PERIOD)
    listing = {w["window_start"]: w for w in page["windows"]}
    assert {s for s, w in listing.items() if w["expired"]} == {old, edge}
    assert len(await _splits(indexer, keys, index_id, "published")) == 6, "a dry run changes nothing"

    registry = CollectorRegistry()
    retention = planner_services_of(planner.app).retention
    retention.observe = CompactionMetrics(registry).observe_retention
    try:
        applied = await planner.post(f"/v1/indexes/{index_id}/retention/apply", json={}, headers=admin)
    finally:
        retention.observe = None
    assert applied.status_code == 200, applied.text
    report = applied.json()
    assert [w["window_start"] for w in report["windows"]] == [old, edge] and report["splits"] == 4
    assert report["windows"][0]["cancelled_job_ids"] == [job_id]

    published = await _splits(indexer, keys, index_id, "published")
    assert sorted(s["window_start"] for s in published) == [straddling, recent]
    # TW-1: every row left is newer than the window end the cutoff allowed; none newer than the period went.
    cutoff = report["cutoff"]
    marked = await _splits(indexer, keys, index_id, "marked_for_deletion")
    assert {s["split_id"] for s in marked} >= set(old_splits)
    assert all(s["time_range_end"] < cutoff for s in marked)
    assert any(s["time_range_start"] < cutoff for s in published if s["window_start"] == straddling)

    job = (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()
    assert (job["status"], job["stage"]) == ("cancelled", "window_dropped")
    refused = await poll(planner, keys, "w", capacity=0, updates=[
        {"job_id": job_id, "fencing_token": merge["fencing_token"], "status": "success", "outputs": []}])
    assert refused["updates"][0]["accepted"] is False

    listing = {w["window_start"]: w for w in (await _windows(planner, keys, index_id))["windows"]}
    assert listing[old]["dropped_at"] is not None and listing[old]["splits"] == 0
    assert listing[old]["marked_for_deletion"] == 3 and listing[straddling]["dropped_at"] is None
    metrics = generate_latest(registry).decode()
    assert f'strata_retention_windows_dropped_total{{index_id="{index_id}"}} 2.0' in metrics
    assert f'strata_retention_splits_dropped_total{{index_id="{index_id}"}} 4.0' in metrics

    # Nothing is left to drop; an index without retention refuses apply.
    again = (await planner.post(f"/v1/indexes/{index_id}/retention/apply", json={}, headers=admin)).json()
    assert again["windows"] == []
    plain = await create_index(indexer, keys)
    refused_apply = await planner.post(f"/v1/indexes/{plain}/retention/apply", json={}, headers=admin)
    assert refused_apply.status_code == 409 and "no retention" in refused_apply.json()["detail"]


async def test_delete_windows_older_than_a_time_and_its_errors(indexer, planner, keys, aligned_clock):
    a = aligned_clock
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=6 * 3600)
    for window in (a - 3 * W, a - 2 * W, a):
        await ingest_split(indexer, keys, index_id, window, 20)
    admin = keys.header(keys.admin)
    path = f"/v1/indexes/{index_id}/windows"
    # Ending exactly at older_than counts as older.
    dry = (await planner.delete(path, params={"older_than": a - 2 * W, "dry_run": "true"}, headers=admin)).json()
    assert [w["window_start"] for w in dry["windows"]] == [a - 3 * W] and dry["dry_run"] is True
    as_time = datetime.fromtimestamp(a - W, UTC).isoformat()
    done = (await planner.delete(path, params={"older_than": as_time}, headers=admin)).json()
    assert [w["window_start"] for w in done["windows"]] == [a - 3 * W, a - 2 * W]
    future = await planner.delete(path, params={"older_than": a + 3 * W}, headers=admin)
    assert future.status_code == 422 and "future" in future.text
    assert (await planner.delete(path, params={"older_than": a}, headers=keys.header(keys.writer))).status_code == 403
    assert (await planner.delete(path, headers=admin)).status_code == 422
    assert (await planner.delete("/v1/indexes/nope/windows", params={"older_than": a},
                                 headers=admin)).status_code == 404


async def test_a_query_planned_before_the_drop_finishes_on_the_kept_files(indexer, planner, keys, settings,
                                                                          aligned_clock, storage, planner_clock):
    from strata_query.app import create_app

    a = aligned_clock
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=6 * 3600)
    for seed in range(2):
        await ingest_split(indexer, keys, index_id, a - 8 * W, 50, seed=seed)
    await ingest_split(indexer, keys, index_id, a, 30)
    uris = [s["uri"] for s in await _splits(indexer, keys, index_id, "published") if s["window_start"] == a - 8 * W]
    sql = f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {a - 10 * W}'

    app = create_app(settings.model_copy(update={"fault_query_scan_delay_secs": 3.0}))
    async with LifespanManager(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://q",
                                                       timeout=60) as query:
        running_queries = query_service_of(app).registry.running_queries
        running = asyncio.create_task(query.post("/v1/query", json={"sql": sql, "engine": "local"},
                                                 headers=keys.header(keys.admin)))
        while not running_queries:  # planned: its files are chosen, the scan waits
            assert not running.done(), running.result().text
            await asyncio.sleep(0.05)
        dropped = await planner.delete(f"/v1/indexes/{index_id}/windows", params={"older_than": a - 4 * W},
                                       headers=keys.header(keys.admin))
        assert dropped.json()["splits"] == 2
        # A garbage collector pass inside the grace period keeps the files.
        await planner_services_of(planner.app).gc.collect(planner_clock())
        response = await running
        assert response.status_code == 200, response.text
        assert response.json()["rows"] == [{"n": 130}], "the query read the dropped files, still there"

        after = await query.post("/v1/query", json={"sql": sql}, headers=keys.header(keys.admin))
        assert after.json()["rows"] == [{"n": 30}], "a query planned after the drop does not see them"
    assert all(storage.exists(u) for u in uris)
    past_grace = planner_clock() + timedelta(seconds=settings.gc_grace_secs + 1)
    await planner_services_of(planner.app).gc.collect(past_grace)
    assert not any(storage.exists(u) for u in uris), "the garbage collector removes them after the grace"


async def test_the_periodic_pass_follows_each_index_interval(indexer, planner, keys, aligned_clock, planner_clock):
    a = aligned_clock
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=6 * 3600,
                                  retention={"period_secs": PERIOD, "interval_secs": 600})
    kept = await create_index(indexer, keys, late_data_acceptance_secs=6 * 3600)
    for idx in (index_id, kept):
        await ingest_split(indexer, keys, idx, a - 8 * W, 20)
    schedule = RetentionSchedule(planner_services_of(planner.app).retention)
    first = {o.index_id: o for o in await schedule.tick()}
    assert len(first[index_id].windows) == 1 and kept not in first, "an index without retention keeps its data"

    # A window that expires later (the straddling one, once the clock passes A + 900) waits for the index's next
    # interval.
    await ingest_split(indexer, keys, index_id, a - 4 * W, 20)
    planner_clock.advance(500)
    assert index_id not in {o.index_id for o in await schedule.tick()}
    planner_clock.advance(100)
    [late] = [o for o in await schedule.tick() if o.index_id == index_id]
    assert [w.window_start for w in late.windows] == [a - 4 * W]
