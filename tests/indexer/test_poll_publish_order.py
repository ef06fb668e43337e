"""An indexing poll that reports several builds checks every build's artifacts and writes every manifest before
the first snapshot row is written (`QueueSpec.prepare`), on the real PostgreSQL and a real build.

A snapshot row takes its index's plan generation (the `artifact_snapshots` trigger) until the poll commits, and an
ingest's publish waits on that row. When each build was checked in its own turn, the later builds' reads and
hashes of every artifact and their manifest writes (each a request to the object store) ran while the poll held
it. What is published is unchanged: the manifest lists exactly the registered artifacts, and a build whose
artifact fails its check is refused alone, with no manifest written for it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import event

import strata_indexer.indexing.scheduler as indexing_scheduler
import strata_indexer.indexing.snapshots as indexing_snapshots
from strata_frame.jobqueue.local_jobs import LocalJobPool
from strata_frame.jobqueue.service import apply_updates
from strata_indexer.indexing.runner import INDEXING_PROTOCOL, IndexBuildExecutor
from strata_indexer.indexing.schemas import IndexingAssignment, IndexingUpdate
from strata_indexer.services import indexer_services_of
from strata_metastore.indexing_repository import IndexingRepository
from tests.indexer.indexing_helpers import artifacts_of, create_indexed_index, ingest, rows_for
from tests.planner.compaction_helpers import NoSpark, open_window

pytestmark = [pytest.mark.usefixtures("clock_at_present")]


@pytest.fixture
def events(monkeypatch) -> list[tuple[str, str]]:
    """(what, split id) as the poll goes: an artifact check, a manifest write, a snapshot row."""
    seen: list[tuple[str, str]] = []
    check, write, snapshot = (indexing_scheduler.check_artifacts, indexing_snapshots.write_manifest,
                              IndexingRepository.publish_snapshots)

    def checking(storage, split_id, *args):
        seen.append(("check", split_id))
        return check(storage, split_id, *args)

    async def writing(storage, split, *args):
        seen.append(("manifest", split.split_id))
        return await write(storage, split, *args)

    async def snapshotting(self, snapshots, *args):
        seen.extend(("snapshot", s.split.split_id) for s in snapshots)
        return await snapshot(self, snapshots, *args)

    monkeypatch.setattr(indexing_scheduler, "check_artifacts", checking)
    monkeypatch.setattr(indexing_snapshots, "write_manifest", writing)
    monkeypatch.setattr(IndexingRepository, "publish_snapshots", snapshotting)
    return seen


async def _built(indexer, keys, index_id: str, files: int) -> list[tuple[IndexingAssignment, object]]:
    """`files` new files of the index leased in one poll and built for real in a local process."""
    window = open_window()
    for seed in range(files):
        await ingest(indexer, keys, index_id, rows_for(window, 40, seed=seed))
    response = await indexer.post("/v1/indexing/poll", headers=keys.header(keys.worker),
                                  json={"worker_id": "publish-order", "capacity": files, "updates": []})
    assert response.status_code == 200, response.text
    assignments = [IndexingAssignment.model_validate(a) for a in response.json()["assignments"]]
    assert len(assignments) == files, response.text
    pool = LocalJobPool(1, niceness=5)
    try:
        executor = IndexBuildExecutor(NoSpark(), upload_attempts=1, upload_backoff_secs=0, local=pool,
                                      local_max_bytes=1 << 30)
        return [(assignment, result) for assignment, (result, _) in
                zip(assignments, executor.run_batch(assignments), strict=True)]
    finally:
        pool.close()


def _success(assignment: IndexingAssignment, result) -> IndexingUpdate:
    return IndexingUpdate.model_validate({
        "job_id": assignment.job_id, "fencing_token": assignment.fencing_token, "status": "success",
        **INDEXING_PROTOCOL.success_fields(result)})


async def test_every_build_of_a_poll_is_checked_and_its_manifest_written_before_the_first_snapshot(
        indexer, keys, events):
    index_id = await create_indexed_index(indexer, keys)
    built = await _built(indexer, keys, index_id, 2)
    updates = [_success(assignment, result) for assignment, result in built]
    services = indexer_services_of(indexer.app)

    results = await apply_updates(indexer.app.state.strata.sessions, services.queue, updates, datetime.now(UTC))

    assert [r.accepted for r in results] == [True, True], results
    splits = sorted(a.split_id for a, _ in built)
    first_snapshot = next(i for i, (what, _) in enumerate(events) if what == "snapshot")
    assert sorted(s for what, s in events[:first_snapshot] if what == "check") == splits, events
    assert sorted(s for what, s in events[:first_snapshot] if what == "manifest") == splits, events
    assert sorted(s for what, s in events if what == "snapshot") == splits, events
    # Each check and manifest once: a publish does not do again what the poll prepared.
    assert len(events) == 6, events
    storage = indexer.app.state.strata.storage
    for split_id in splits:
        listing = await artifacts_of(indexer, keys, split_id)
        assert listing["snapshot"]["published"], listing
        with storage.open_input(listing["snapshot"]["manifest_uri"]) as file:
            manifest = json.loads(file.read())
        assert manifest["split_id"] == split_id
        assert sorted(a["uri"] for a in manifest["artifacts"]) == sorted(a["uri"] for a in listing["artifacts"])


async def test_a_build_whose_artifact_fails_its_check_is_refused_alone_and_gets_no_manifest(
        indexer, keys, events):
    index_id = await create_indexed_index(indexer, keys)
    built = await _built(indexer, keys, index_id, 2)
    updates = [_success(assignment, result) for assignment, result in built]
    # The second build's first artifact claims another content than the object holds.
    broken = updates[1].artifacts[0]
    updates[1].artifacts[0] = broken.model_copy(update={"content_hash": "0" * len(broken.content_hash)})
    services = indexer_services_of(indexer.app)

    results = await apply_updates(indexer.app.state.strata.sessions, services.queue, updates, datetime.now(UTC))

    assert results[0].accepted and not results[1].accepted, results
    assert "publish refused" in results[1].reason and "artifacts[0]" in results[1].reason, results[1].reason
    good, bad = built[0][0].split_id, built[1][0].split_id
    assert ("manifest", bad) not in events and ("snapshot", bad) not in events, events
    assert (await artifacts_of(indexer, keys, good))["snapshot"]["published"]
    assert not (await artifacts_of(indexer, keys, bad)).get("snapshot", {}).get("published"), \
        await artifacts_of(indexer, keys, bad)


@pytest.fixture
def statements(indexer):
    """Every SQL statement the indexer's engine sends, in order."""
    engine = indexer.app.state.strata.sessions.kw["bind"].sync_engine
    sent: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    yield sent
    event.remove(engine, "before_cursor_execute", record)


async def test_a_polls_builds_are_published_with_one_statement_per_kind_and_a_stale_one_is_refused_alone(
        indexer, keys, statements):
    index_id = await create_indexed_index(indexer, keys)
    services = indexer_services_of(indexer.app)
    sessions = indexer.app.state.strata.sessions

    def inserts(table: str) -> int:
        return sum(1 for s in statements if s.startswith(f"INSERT INTO {table} "))

    first = await _built(indexer, keys, index_id, 2)
    first_updates = [_success(assignment, result) for assignment, result in first]
    statements.clear()
    assert [r.accepted for r in await apply_updates(sessions, services.queue, first_updates, datetime.now(UTC))] \
        == [True, True]
    # One insert per kind for both builds (one at a time, there was one per build and kind).
    assert (inserts("index_artifacts"), inserts("artifact_snapshots")) == (1, 1), statements
    first_listing = await artifacts_of(indexer, keys, first[0][0].split_id)

    # The next poll's builds, with the first poll's first report sent again: its job has ended, so its token no
    # longer owns it, and it must change nothing while the others publish.
    second = await _built(indexer, keys, index_id, 2)
    updates = [_success(second[0][0], second[0][1]), first_updates[0], _success(second[1][0], second[1][1])]
    statements.clear()
    results = await apply_updates(sessions, services.queue, updates, datetime.now(UTC))

    assert [r.accepted for r in results] == [True, False, True], results
    assert (inserts("index_artifacts"), inserts("artifact_snapshots")) == (1, 1), statements
    assert await artifacts_of(indexer, keys, first[0][0].split_id) == first_listing
    for assignment, result in (*first, *second):
        listing = await artifacts_of(indexer, keys, assignment.split_id)
        assert listing["snapshot"]["published"], listing
        assert len(listing["artifacts"]) == len(result.artifacts), listing
        assert all(a["in_published_snapshot"] for a in listing["artifacts"]), listing
        assert listing["snapshot"]["artifact_count"] == len(result.artifacts), listing
        job = (await indexer.get(f"/v1/indexing/jobs/{assignment.job_id}", headers=keys.header(keys.admin))).json()
        assert (job["status"], job["artifact_count"]) == ("success", len(result.artifacts)), job
