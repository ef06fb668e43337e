"""Compaction debt through planner-api on real PostgreSQL: GET /v1/indexes/{id}/debt on ingested splits (levels,
a closed window not final, claimed splits still waiting once a merge is planned), the windows listing's debt
columns, the auth and 404 conventions, the gauges and counters on /metrics (refreshed by every replica, which only
reads), and the sampled history kept by the debt samples pass (one sample per bucket, an hour kept)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from strata_metastore.compaction_models import CompactionJobRow
from strata_planner.compaction.debt import sample_debts
from strata_planner.compaction.metrics import CompactionMetrics
from strata_planner.compaction.publish import PublishedMerge
from tests.planner.compaction_helpers import create_index, ingest_split

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]
W = 900


async def _debt(planner, keys, index_id: str, key: str | None = None) -> dict:
    response = await planner.get(f"/v1/indexes/{index_id}/debt", headers=keys.header(key or keys.writer))
    assert response.status_code == 200, response.text
    return response.json()


def _clock_window(planner_clock) -> int:
    now = int(planner_clock.now.timestamp())
    return now - now % W


async def _index_in_debt(indexer, keys, planner_clock) -> tuple[str, int, int]:
    """A window closed an hour ago (late data: 600 s) with two level-0 splits, so a final merge is due; the open
    window with two level-0 splits and one level-1 split (SMALL_POLICY: level 1 from 1,000 rows). Late rows are
    dropped at ingestion, so the closed window is written first and the clock moved on two hours."""
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=600)
    closed = _clock_window(planner_clock)
    for seed in range(2):
        await ingest_split(indexer, keys, index_id, closed, 25, seed=10 + seed)
    planner_clock.advance(2 * 3600)
    window = _clock_window(planner_clock)
    for seed, rows in enumerate((20, 30, 1500)):
        await ingest_split(indexer, keys, index_id, window, rows, seed=seed)
    return index_id, window, closed


async def test_debt_of_an_index_and_its_windows(indexer, planner, keys, planner_clock):
    index_id, window, closed = await _index_in_debt(indexer, keys, planner_clock)
    debt = await _debt(planner, keys, index_id)
    assert set(debt) == {"index_id", "measured_at", "published_splits", "compaction", "indexing"}
    c = debt["compaction"]
    assert debt["index_id"] == index_id and debt["published_splits"] == 5
    assert (c["splits_waiting"], c["closed_windows_not_final"]) == (5, 1)
    assert {level: v["splits"] for level, v in c["levels"].items()} == {"0": 4, "1": 1}
    assert c["bytes_waiting"] == sum(v["bytes"] for v in c["levels"].values()) > 0
    now = planner_clock.now.timestamp()
    assert c["oldest_closed_window_not_final_age_secs"] == pytest.approx(now - (closed + W + 600))
    # The closed window's splits were created (by the database's clock) two hours before the moved clock.
    assert 2 * 3600 - 60 <= c["oldest_waiting_split_age_secs"] < 2 * 3600 + 120
    assert (c["jobs_unassigned"], c["jobs_in_progress"], c["merges_per_sec"], c["rows_merged_per_sec"]) == (0, 0, 0, 0)
    assert c["first_merge_delay_secs"] == {"p50": None, "p90": None, "max": None, "count": 0}
    # No indexing runner in these tests: every published file still waits for its artifacts.
    assert debt["indexing"]["files_waiting"] == 5 and debt["indexing"]["jobs_in_progress"] == 0

    # The closed window's final merge is planned: its claimed splits are still debt until it publishes.
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    assert len(trigger.json()["created_job_ids"]) == 1
    c = (await _debt(planner, keys, index_id))["compaction"]
    assert (c["splits_waiting"], c["closed_windows_not_final"], c["jobs_unassigned"]) == (5, 1, 1)

    windows = (await planner.get(f"/v1/indexes/{index_id}/windows", headers=keys.header(keys.writer))).json()
    by_start = {w["window_start"]: w for w in windows["windows"]}
    assert (by_start[closed]["splits_waiting"], by_start[closed]["final"]) == (2, False)
    assert (by_start[window]["splits_waiting"], by_start[window]["final"]) == (3, False)
    assert by_start[closed]["bytes_waiting"] > 0 and by_start[closed]["oldest_waiting_split_age_secs"] >= 0


async def test_a_closed_window_with_one_split_is_final(indexer, planner, keys, planner_clock):
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=600)
    await ingest_split(indexer, keys, index_id, _clock_window(planner_clock), 25)
    planner_clock.advance(2 * 3600)
    [w] = (await planner.get(f"/v1/indexes/{index_id}/windows", headers=keys.header(keys.writer))).json()["windows"]
    # Its split will never be merged again: no debt, though it is not mature yet.
    assert (w["closed"], w["final"], w["splits_waiting"]) == (True, True, 0)
    assert (await _debt(planner, keys, index_id))["compaction"]["splits_waiting"] == 0
    assert (await _debt(planner, keys, index_id))["compaction"]["closed_windows_not_final"] == 0


async def test_debt_errors_follow_the_windows_listing(planner, keys):
    for path in ("/v1/indexes/nope/debt", "/v1/indexes/nope/debt/history"):
        missing = await planner.get(path, headers=keys.header(keys.writer))
        assert missing.status_code == 404 and missing.headers["content-type"].startswith("application/problem+json")
        assert (await planner.get(path)).status_code == 401
        assert (await planner.get(path, headers=keys.header("not-a-key"))).status_code == 401
    too_long = await planner.get("/v1/indexes/nope/debt/history", params={"minutes": 61},
                                 headers=keys.header(keys.writer))
    assert too_long.status_code == 422


async def test_gauges_in_every_replica_and_history_sampled_by_the_pass(indexer, planner, keys, planner_clock):
    index_id, _, _ = await _index_in_debt(indexer, keys, planner_clock)
    state = planner.app.state.strata
    # Two replicas: two metric sets refreshing from the same metastore in the same 10 s interval.
    registries = [CollectorRegistry() for _ in range(2)]
    replicas = [CompactionMetrics(registry) for registry in registries]
    planner_clock.now = planner_clock.now.replace(microsecond=0) - timedelta(seconds=planner_clock.now.second % 10)
    for replica in replicas:
        await replica.refresh(state.sessions, state.clock())
    text = generate_latest(registries[0]).decode()
    label = f'index_id="{index_id}"'
    assert f'strata_compaction_debt_splits{{{label},level="0"}} 4.0' in text
    assert f'strata_compaction_debt_splits{{{label},level="1"}} 1.0' in text
    assert f'strata_compaction_debt_closed_windows_not_final{{{label}}} 1.0' in text
    assert f"strata_compaction_debt_bytes{{{label},level=\"0\"}}" in text
    assert f"strata_compaction_debt_oldest_split_age_seconds{{{label}}}" in text
    assert f"strata_compaction_debt_oldest_closed_window_age_seconds{{{label}}}" in text

    # indexer-api's indexing debt: the same files as the planner's `indexing.files_waiting`, under the new names
    # and the older lag ones.
    from strata_indexer.indexing.lag import IndexingMetrics

    indexing_registry = CollectorRegistry()
    indexer_state = indexer.app.state.strata
    await IndexingMetrics(indexing_registry).refresh(indexer_state.sessions, indexer_state.clock())
    indexing = generate_latest(indexing_registry).decode()
    for name in ("strata_indexing_debt_files", "strata_indexing_lag_files"):
        assert f"{name}{{{label}}} 5.0" in indexing, name
    assert f"strata_indexing_debt_oldest_seconds{{{label}}}" in indexing

    # The refreshes only read: the history is the debt samples pass's (run once across replicas).
    history = f"/v1/indexes/{index_id}/debt/history"
    assert (await planner.get(history, headers=keys.header(keys.writer))).json()["samples"] == []
    await sample_debts(state.sessions, planner_clock())
    samples = (await planner.get(history, headers=keys.header(keys.writer))).json()["samples"]
    assert [(s["splits_waiting"], s["closed_windows_not_final"], s["indexing_files_waiting"]) for s in samples] \
        == [(5, 1, 5)]
    first = datetime.fromisoformat(samples[0]["sampled_at"])
    # Two runs in one bucket (a holder that stalled past its lease and the one that took over) keep one sample.
    planner_clock.advance(10)
    await sample_debts(state.sessions, planner_clock())
    planner_clock.advance(9.5)
    await sample_debts(state.sessions, planner_clock())
    samples = (await planner.get(history, params={"minutes": 1}, headers=keys.header(keys.writer))).json()["samples"]
    assert [datetime.fromisoformat(s["sampled_at"]) for s in samples] == [first, first + timedelta(seconds=10)]
    planner_clock.advance(120)
    await sample_debts(state.sessions, planner_clock())
    samples = (await planner.get(history, params={"minutes": 1}, headers=keys.header(keys.writer))).json()["samples"]
    assert len(samples) == 1


def test_a_published_merge_counts_its_rows_and_first_merge_delays() -> None:
    registry = CollectorRegistry()
    metrics = CompactionMetrics(registry)
    finished = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    job = CompactionJobRow(job_id="01JBJOB0000000000000000F01", index_uid="m1:01JBZZZZZZZZZZZZZZZZZZZZZZ",
                           input_rows=700, input_bytes=10, output_bytes=9, first_assigned_at=finished,
                           finished_at=finished)
    metrics.observe_success(PublishedMerge(job, [finished - timedelta(seconds=45), finished - timedelta(seconds=400)]))
    text = generate_latest(registry).decode()
    assert 'strata_compaction_merges_total{index_id="m1"} 1.0' in text
    assert 'strata_compaction_merged_rows_total{index_id="m1"} 700.0' in text
    assert 'strata_compaction_debt_first_merge_delay_seconds_count{index_id="m1"} 2.0' in text
    assert 'strata_compaction_debt_first_merge_delay_seconds_sum{index_id="m1"} 445.0' in text
    assert 'strata_compaction_debt_first_merge_delay_seconds_bucket{index_id="m1",le="60.0"} 1.0' in text
