"""No poison pill in planner-api's passes: a split the GC cannot delete (outside the storage root, or a directory
where its file should be), an index whose stored config no longer validates (retention, compaction planning) is
skipped, counted and listed, the rest of the pass is done, a second pass updates the same records, and a mended
entry's record goes. An outage of the object store or of PostgreSQL stops the pass with one line, recording
nothing."""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from strata_frame.maintenance.skips import quiet_on_outage
from strata_metastore.engine import create_engine, session_factory
from strata_planner.compaction.dependencies import planner_services_of
from strata_planner.compaction.retention import RetentionSchedule
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll
from tests.skips_helpers import break_config, execute, listed_skips, mend_config, recorded_gauge, skipped_total

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def _mark_for_deletion(database_url: str, split_ids: list[str]) -> None:
    # An hour ago: past the GC's grace period (600 s) at the test clock's present.
    await execute(database_url, "UPDATE splits SET state = 'marked_for_deletion', "
                                "marked_for_deletion_at = now() - interval '1 hour' WHERE split_id = ANY(:ids)",
                  ids=split_ids)


async def _split_uris(indexer, keys, index_id: str) -> dict[str, str]:
    listing = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()
    return {s["split_id"]: s["uri"] for s in listing["splits"]}


async def test_gc_skips_what_it_cannot_delete_and_deletes_the_rest(indexer, planner, keys, storage, planner_clock,
                                                                  database_url, tmp_path):
    index_id = await create_index(indexer, keys)
    window = open_window()
    outside, undeletable, healthy = [await ingest_split(indexer, keys, index_id, window, 10, seed=i)
                                     for i in range(3)]
    uris = await _split_uris(indexer, keys, index_id)
    # (a) a split a metastore kept from an earlier storage root; (b) a directory where a split's file should be.
    elsewhere = tmp_path / "previous-root" / f"{outside}.parquet"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"not ours to delete")
    await execute(database_url, "UPDATE splits SET uri = :u WHERE split_id = :s", u=elsewhere.as_uri(), s=outside)
    in_the_way = Path(storage.resolve(uris[undeletable]))
    in_the_way.unlink()
    (in_the_way / "left-by-hand").mkdir(parents=True)
    await _mark_for_deletion(database_url, [outside, undeletable, healthy])
    gc = planner_services_of(planner.app).gc
    before = {r: await skipped_total(planner, "gc", r) for r in ("PathOutsideRoot", "IsADirectoryError")}
    try:
        report = await gc.collect(planner_clock())
        assert report.skipped >= 2
        assert not storage.exists(uris[healthy]) and elsewhere.exists() and in_the_way.is_dir()
        assert set(await _split_uris(indexer, keys, index_id)) == {outside, undeletable}, "a skipped row stays"
        first = {s["entry"]: s for s in await listed_skips(planner, keys, "compaction", index_id=index_id)}
        assert set(first) == {outside, undeletable}
        assert (first[outside]["pass"], first[outside]["reason_class"]) == ("gc", "PathOutsideRoot")
        assert first[undeletable]["reason_class"] == "IsADirectoryError"
        assert all(s["attempts"] == 1 for s in first.values())
        for reason in before:
            assert await skipped_total(planner, "gc", reason) == before[reason] + 1
        assert (await recorded_gauge(planner, "gc")) >= 2

        planner_clock.advance(1)
        await gc.collect(planner_clock())
        second = {s["entry"]: s for s in await listed_skips(planner, keys, "compaction", index_id=index_id,
                                                           **{"pass": "gc"})}
        assert {e: (s["skip_id"], s["attempts"]) for e, s in second.items()} == \
            {e: (s["skip_id"], 2) for e, s in first.items()}, "the same rows, counted again"
        assert all(second[e]["last_seen_at"] > first[e]["last_seen_at"] for e in first)

        shutil.rmtree(in_the_way)
        await gc.collect(planner_clock())
        third = await listed_skips(planner, keys, "compaction", index_id=index_id)
        assert [(s["entry"], s["attempts"]) for s in third] == [(outside, 3)], "a deleted entry's record goes"
    finally:
        await execute(database_url, "DELETE FROM splits WHERE split_id = :s", s=outside)
        await execute(database_url, "DELETE FROM maintenance_skips WHERE entry = :s", s=outside)


async def test_listing_refuses_another_apis_pass(planner, keys):
    response = await planner.get("/v1/compaction/maintenance/skips", params={"pass": "janitor"},
                                 headers=keys.header(keys.admin))
    assert response.status_code == 422 and response.headers["content-type"] == "application/problem+json"
    response = await planner.get("/v1/compaction/maintenance/skips", headers=keys.header(keys.writer))
    assert response.status_code == 403


async def test_an_object_store_outage_stops_the_pass_without_recording(indexer, planner, keys, storage,
                                                                       planner_clock, database_url, caplog):
    index_id = await create_index(indexer, keys)
    split_ids = [await ingest_split(indexer, keys, index_id, open_window(), 10, seed=i) for i in range(3)]
    await _mark_for_deletion(database_url, split_ids)
    gc = planner_services_of(planner.app).gc
    root = Path(storage.root_path)
    away = root.with_name(root.name + "-away")
    # The whole store stops answering: its root is no longer a directory.
    root.rename(away)
    root.write_bytes(b"")
    try:
        with caplog.at_level(logging.WARNING, logger="strata.maintenance"):
            assert await quiet_on_outage("gc", lambda: gc.collect(planner_clock()))() is None
    finally:
        root.unlink()
        away.rename(root)
    stopped = [r for r in caplog.records if r.name == "strata.maintenance"]
    assert len(stopped) == 1 and stopped[0].exc_info is None, "one line, no traceback"
    assert await listed_skips(planner, keys, "compaction", index_id=index_id) == []
    # Nothing was judged: the rows wait for the next pass, which deletes them once the store answers.
    report = await gc.collect(planner_clock())
    assert report.splits_deleted >= 3
    assert await listed_skips(planner, keys, "compaction", index_id=index_id) == []


async def test_a_database_outage_stops_the_pass_with_one_line(planner, planner_clock, caplog):
    # Nothing listens on port 9 of the loopback: every connection is refused.
    engine = create_engine("postgresql+asyncpg://strata@127.0.0.1:9/strata")
    services = planner_services_of(planner.app)
    sessions = session_factory(engine)
    passes = replace(services.gc.passes, sessions=sessions)
    gc = replace(services.gc, sessions=sessions, passes=passes)
    retention = replace(services.retention, sessions=sessions, passes=passes)
    try:
        with caplog.at_level(logging.WARNING, logger="strata.maintenance"):
            assert await quiet_on_outage("gc", lambda: gc.collect(planner_clock()))() is None
            assert await quiet_on_outage("retention", RetentionSchedule(retention).tick)() is None
    finally:
        await engine.dispose()
    lines = [r for r in caplog.records if r.name == "strata.maintenance"]
    assert [r.getMessage().split(":")[0] for r in lines] == ["gc stopped", "retention stopped"]
    assert all(r.exc_info is None for r in lines)


async def test_retention_skips_an_index_whose_config_no_longer_validates(indexer, planner, keys, database_url):
    retention = {"period_secs": 86_400, "interval_secs": 60}
    bad, good = [await create_index(indexer, keys, retention=retention) for _ in range(2)]
    await break_config(database_url, bad)
    retention = planner_services_of(planner.app).retention
    try:
        first_outcomes = await RetentionSchedule(retention).tick()
        assert good in {o.index_id for o in first_outcomes} and bad not in {o.index_id for o in first_outcomes}
        [first] = await listed_skips(planner, keys, "compaction", index_id=bad, **{"pass": "retention"})
        assert (first["reason_class"], first["attempts"]) == ("ValidationError", 1)
        assert "written_by_an_older_release" in first["reason"]
        await RetentionSchedule(retention).tick()
        [second] = await listed_skips(planner, keys, "compaction", index_id=bad, **{"pass": "retention"})
        assert (second["skip_id"], second["attempts"]) == (first["skip_id"], 2)
    finally:
        await mend_config(database_url, bad)
    await RetentionSchedule(retention).tick()
    assert await listed_skips(planner, keys, "compaction", index_id=bad) == []


async def test_one_index_whose_planning_raises_does_not_stop_the_others(indexer, planner, keys, database_url):
    bad, good = [await create_index(indexer, keys) for _ in range(2)]
    window = open_window()
    for index_id in (bad, good):
        for seed in range(3):  # merge_factor 3: a merge to plan
            await ingest_split(indexer, keys, index_id, window, 10, seed=seed)
    await break_config(database_url, bad)
    try:
        await poll(planner, keys, "skips-worker", capacity=1)
        jobs = (await planner.get("/v1/compaction/jobs", params={"index_id": good},
                                  headers=keys.header(keys.worker))).json()["jobs"]
        assert len(jobs) == 1, "the good index is planned"
        [first] = await listed_skips(planner, keys, "compaction", index_id=bad)
        assert (first["pass"], first["reason_class"], first["attempts"]) == (
            "compaction-planning", "ValidationError", 1)
        await poll(planner, keys, "skips-worker", capacity=1)
        [second] = await listed_skips(planner, keys, "compaction", index_id=bad)
        assert (second["skip_id"], second["attempts"]) == (first["skip_id"], 2)
    finally:
        await mend_config(database_url, bad)
    await poll(planner, keys, "skips-worker", capacity=1)
    assert await listed_skips(planner, keys, "compaction", index_id=bad) == [], "planned once mended"
    jobs = (await planner.get("/v1/compaction/jobs", params={"index_id": bad},
                              headers=keys.header(keys.worker))).json()["jobs"]
    assert len(jobs) == 1
