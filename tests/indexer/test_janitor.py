"""The janitor reconciles storage and metastore through the deterministic names: a complete artifact left
unregistered by a crash is registered and an incomplete one deleted, both after the grace period; a registered
artifact whose object is missing sends its file back to indexing, artifacts of deleted files go; a second pass
changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from strata_core.artifacts import artifact_key
from tests.indexer.artifact_fixtures import as_request, build_and_store, split_row
from tests.indexer.indexing_helpers import artifacts_of, create_indexed_index, ingest, job_of, rows_for
from tests.planner.compaction_helpers import open_window
from tests.skips_helpers import execute

pytestmark = pytest.mark.usefixtures("clock_at_present")


async def _janitor(indexer, keys) -> dict:
    response = await indexer.post("/v1/indexing/janitor", headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    return response.json()


async def test_janitor_reconciles_and_a_second_pass_changes_nothing(indexer, keys, storage, settings,
                                                                     planner_clock, database_url):
    index_id = await create_indexed_index(indexer, keys)
    window = open_window()
    crashed, repaired, deleted = [await split_row(indexer, keys, index_id, await ingest(
        indexer, keys, index_id, rows_for(window, 100, seed=i))) for i in range(3)]

    # A crash between upload and registration: complete objects, no rows.
    uploaded = build_and_store(storage, crashed)
    # A registered artifact whose object then disappears.
    registered = build_and_store(storage, repaired)
    response = await indexer.post(f"/v1/splits/{repaired['split_id']}/artifacts", headers=keys.header(keys.writer),
                                  json={"artifacts": as_request(registered)})
    assert response.status_code == 200, response.text
    lost = next(a for a in registered if a["artifact_type"] == "bitmap")
    storage.delete(lost["uri"])
    # A crash mid-upload: a truncated object under an artifact name, and a leftover temporary.
    partial_uri = lost["uri"].rsplit("/", 1)[0] + "/" + artifact_key(repaired["split_id"], "bloom", "service", 1
                                                                       ).split("/", 1)[1]
    storage.write_bytes(partial_uri, lost["data"][: len(lost["data"]) // 2])
    temp_uri = partial_uri + ".tmp-1234"
    storage.write_bytes(temp_uri, b"partial")
    # Artifacts of a file that no longer exists (its row was garbage-collected).
    orphaned = build_and_store(storage, deleted)
    await execute(database_url, "DELETE FROM splits WHERE split_id = :s", s=deleted["split_id"])

    # Inside the grace period nothing is deleted: an upload may still be in flight. The session's manual clock is
    # set to now, after every object above was written, so the grace period is measured from their writing.
    planner_clock.now = datetime.now(UTC)
    # Nor is a complete object registered: a build may have uploaded it and be about to register it itself.
    early = await _janitor(indexer, keys)
    assert not {a["uri"] for a in uploaded} & set(early["registered"])
    assert partial_uri not in early["deleted"] and temp_uri not in early["deleted"]
    assert lost["uri"] in early["missing"] and repaired["split_id"] in early["reindexed"]

    planner_clock.advance(settings.janitor_grace_secs + 1)
    late = await _janitor(indexer, keys)
    assert {a["uri"] for a in uploaded} <= set(late["registered"])
    assert {partial_uri, temp_uri} | {a["uri"] for a in orphaned} <= set(late["deleted"])
    assert not storage.exists(partial_uri) and not any(storage.exists(a["uri"]) for a in orphaned)

    assert await _janitor(indexer, keys) == {"registered": [], "deleted": [], "missing": [], "reindexed": []}

    # The crashed file's artifacts are registered (not yet published: its indexing job publishes them).
    listing = await artifacts_of(indexer, keys, crashed["split_id"])
    assert {a["uri"] for a in listing["artifacts"]} == {a["uri"] for a in uploaded}
    assert all(a["registered_by"] == "janitor" for a in listing["artifacts"])
    # The file with a missing artifact is no longer published as indexed, and is queued for indexing again.
    repaired_listing = await artifacts_of(indexer, keys, repaired["split_id"])
    assert not repaired_listing["snapshot"]["published"]
    assert lost["uri"] not in {a["uri"] for a in repaired_listing["artifacts"]}
    job = await job_of(indexer, keys, repaired["split_id"])
    assert job["status"] == "unassigned"
