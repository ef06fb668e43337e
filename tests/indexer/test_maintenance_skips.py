"""No poison pill in indexer-api's passes: an index whose artifacts cannot be listed is skipped by the janitor
while the others are reconciled; a job whose index's stored config no longer validates is not handed out (a failed
attempt, recorded) while other indexes' jobs are. Each is listed with its reason and counted, a second pass
updates the same record, and a mended entry's record goes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from strata_indexer.indexing.artifact_checks import artifact_prefix
from tests.indexer.artifact_fixtures import build_and_store, split_row
from tests.indexer.indexing_helpers import create_indexed_index, ingest, rows_for
from tests.planner.compaction_helpers import open_window
from tests.skips_helpers import break_config, execute, listed_skips, mend_config, skipped_total

pytestmark = pytest.mark.usefixtures("clock_at_present")


async def _janitor(indexer, keys) -> dict:
    response = await indexer.post("/v1/indexing/janitor", headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    return response.json()


async def _index_uid(indexer, keys, index_id: str) -> str:
    return (await indexer.get(f"/v1/indexes/{index_id}", headers=keys.header(keys.admin))).json()["index_uid"]


async def test_janitor_skips_an_index_it_cannot_list_and_reconciles_the_others(indexer, keys, storage, settings,
                                                                                planner_clock, database_url):
    blocked, healthy = [await create_indexed_index(indexer, keys) for _ in range(2)]
    window = open_window()
    await ingest(indexer, keys, blocked, rows_for(window, 50))
    gone = await split_row(indexer, keys, healthy, await ingest(indexer, keys, healthy, rows_for(window, 50)))
    # Artifacts of a file whose row was garbage-collected: the janitor's to delete after the grace period.
    orphaned = build_and_store(storage, gone)
    await execute(database_url, "DELETE FROM splits WHERE split_id = :s", s=gone["split_id"])
    # Where the blocked index's artifacts should be listed there is a file, not a directory.
    prefix = artifact_prefix(storage, await _index_uid(indexer, keys, blocked))
    in_the_way = Path(storage.resolve(prefix))
    in_the_way.parent.mkdir(parents=True, exist_ok=True)
    in_the_way.write_bytes(b"")
    planner_clock.now = datetime.now(UTC)
    planner_clock.advance(settings.janitor_grace_secs + 1)
    before = await skipped_total(indexer, "janitor", "NotADirectoryError")
    try:
        report = await _janitor(indexer, keys)
        assert {a["uri"] for a in orphaned} <= set(report["deleted"])
        [first] = await listed_skips(indexer, keys, "indexing", index_id=blocked)
        assert (first["pass"], first["entry"], first["reason_class"], first["attempts"]) == (
            "janitor", prefix, "NotADirectoryError", 1)
        assert await skipped_total(indexer, "janitor", "NotADirectoryError") == before + 1

        planner_clock.advance(1)
        await _janitor(indexer, keys)
        [second] = await listed_skips(indexer, keys, "indexing", index_id=blocked, **{"pass": "janitor"})
        assert (second["skip_id"], second["attempts"]) == (first["skip_id"], 2)
        assert second["last_seen_at"] > first["last_seen_at"]
    finally:
        in_the_way.unlink()
    await _janitor(indexer, keys)
    assert await listed_skips(indexer, keys, "indexing", index_id=blocked) == []


async def _poll(indexer, keys, capacity: int) -> list[dict]:
    response = await indexer.post("/v1/indexing/poll", headers=keys.header(keys.worker),
                                  json={"worker_id": "skips-worker", "capacity": capacity, "updates": []})
    assert response.status_code == 200, response.text
    return response.json()["assignments"]


async def _job_of(indexer, keys, index_id: str) -> dict:
    [job] = (await indexer.get("/v1/indexing/jobs", params={"index_id": index_id},
                               headers=keys.header(keys.worker))).json()["jobs"]
    return job


async def test_a_job_whose_index_cannot_be_planned_is_not_handed_out_and_the_others_are(indexer, keys,
                                                                                        database_url):
    bad, good = [await create_indexed_index(indexer, keys) for _ in range(2)]
    window = open_window()
    bad_split = await ingest(indexer, keys, bad, rows_for(window, 20))
    good_split = await ingest(indexer, keys, good, rows_for(window, 20, seed=1))
    await break_config(database_url, bad)
    try:
        assigned = {a["split_id"] for a in await _poll(indexer, keys, capacity=2)}
        assert good_split in assigned and bad_split not in assigned
        [first] = await listed_skips(indexer, keys, "indexing", index_id=bad)
        assert (first["pass"], first["reason_class"], first["attempts"]) == ("indexing-planning", "ValidationError", 1)
        assert await skipped_total(indexer, "indexing-planning", "ValidationError") >= 1
        await _poll(indexer, keys, capacity=2)
        [second] = await listed_skips(indexer, keys, "indexing", index_id=bad)
        assert (second["skip_id"], second["attempts"]) == (first["skip_id"], 2)
    finally:
        await mend_config(database_url, bad)
    job = await _job_of(indexer, keys, bad)
    assert job["job_id"] == first["entry"] and job["failures"] == 2
    assert "cannot be planned: ValidationError" in job["last_error"]
    assigned = {a["split_id"] for a in await _poll(indexer, keys, capacity=2)}
    assert bad_split in assigned, "handed out once its index is mended"
    assert await listed_skips(indexer, keys, "indexing", index_id=bad) == []
