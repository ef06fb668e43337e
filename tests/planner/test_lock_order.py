"""Lock order between an indexing poll that publishes several builds and a merge publish holding one of their
files, on the real PostgreSQL: both commit, neither is aborted for a deadlock nor run again.

Before the poll locked all of its builds' files up front (`QueueSpec.lock_splits`), each build locked its file
only when its turn came, after the previous build's snapshot had taken the index's plan generation (the
`artifact_snapshots` trigger). A merge holding its inputs then waited on that row for its outputs' insert while
the poll waited for one of those inputs: the deadlock a soak with local slots logged three times
(docs/benchmarks.md, "Publishing a poll's merges as one batch"). Here the interleaving is forced: the merge's
transaction locks its inputs, the poll starts and is seen waiting on a lock, then the merge publishes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text

import strata_frame.jobqueue.service as queue_service
from strata_core.domain.job_statuses import JobStatus
from strata_indexer.indexing.schemas import IndexingUpdate
from strata_indexer.services import indexer_services_of
from strata_metastore.conflicts import retrying_conflicts
from strata_metastore.indexing_models import IndexingJobRow
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.repositories import SplitRepository
from strata_planner.compaction.dependencies import planner_services_of
from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import COMPACTION_PROTOCOL
from strata_planner.compaction.schemas import Assignment, StatusUpdate
from tests.planner.compaction_helpers import NoSpark, create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.usefixtures("clock_at_present")]


@pytest.fixture
def poll_attempts(monkeypatch) -> list[int]:
    """Every attempt of a poll's transaction (`retrying_conflicts` runs one again after a deadlock)."""
    attempts: list[int] = []

    async def counted(session, transaction, tries: int = 3):
        async def attempt():
            attempts.append(1)
            return await transaction()
        return await retrying_conflicts(session, attempt, tries)

    monkeypatch.setattr(queue_service, "retrying_conflicts", counted)
    return attempts


async def _waiting_on_a_row_lock(sessions, timeout: float = 30) -> str:
    """The statement of a backend of this database waiting on a row's lock (the indexing poll's)."""
    deadline = asyncio.get_running_loop().time() + timeout
    async with sessions() as watcher:
        while True:
            waiting = (await watcher.execute(text(
                "SELECT query FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"))).scalars().all()
            await watcher.rollback()
            if waiting:
                return waiting[0]
            assert asyncio.get_running_loop().time() < deadline, "the indexing poll never waited on a lock"
            await asyncio.sleep(0.05)


async def test_an_indexing_poll_of_several_builds_and_a_merge_holding_one_of_their_files_both_commit(
        indexer, planner, keys, local_pool, poll_attempts):
    index_id = await create_index(indexer, keys)
    window = open_window()
    inputs = [await ingest_split(indexer, keys, index_id, window, 30, seed=seed) for seed in range(3)]
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    assert len(trigger.json()["created_job_ids"]) == 1, trigger.text
    # Ingested after the merge was planned: no job claims it, so only the indexing poll locks it.
    outside = await ingest_split(indexer, keys, index_id, window, 30, seed=9)

    [merge] = [Assignment.model_validate(a) for a in (await poll(planner, keys, "lock-order", 1))["assignments"]]
    assert sorted(i.split_id for i in merge.inputs) == sorted(inputs)
    [(merged, _)] = MergeExecutor(NoSpark(), local=local_pool, local_max_bytes=1 << 30).run_batch([merge])
    merge_success = StatusUpdate.model_validate({
        "job_id": merge.job_id, "fencing_token": merge.fencing_token, "status": "success",
        **COMPACTION_PROTOCOL.success_fields(merged)})

    indexing = indexer_services_of(indexer.app)
    planning = planner_services_of(planner.app)
    now = datetime.now(UTC)
    # The two builds leased by hand: a poll hands out at most `indexing_max_in_progress_per_tenant`, oldest
    # first. The file no merge holds is reported first: under the old order its snapshot took the index's plan
    # generation before the poll locked the merge's input.
    async with planning.sessions() as session:
        repo = IndexingRepository(session)
        jobs = {job.split_id: job for job in (await session.execute(select(IndexingJobRow).where(
            IndexingJobRow.split_id.in_([outside, inputs[0]]), IndexingJobRow.status == JobStatus.UNASSIGNED)
            .with_for_update())).scalars().all()}
        await repo.queue.lease([jobs[outside], jobs[inputs[0]]], "lock-order", now, timedelta(minutes=5))
        updates = [IndexingUpdate(job_id=jobs[s].job_id, fencing_token=jobs[s].fencing_token, status="success",
                                  artifacts=[], skipped=[]) for s in (outside, inputs[0])]
        await session.commit()

    async with planning.sessions() as merge_session:
        # The merge's transaction holds its inputs (as `publish_merge` locks them) ...
        await SplitRepository(merge_session).lock_in_order(sorted(inputs))
        poll_task = asyncio.create_task(queue_service.apply_updates(indexer.app.state.strata.sessions,
                                                                    indexing.queue, updates, now))
        try:
            # ... while the indexing poll waits for one of them ...
            waiting = await _waiting_on_a_row_lock(planning.sessions)
            assert "FOR UPDATE" in waiting, waiting
            # ... then publishes: its outputs' insert takes the index's plan generation.
            published = await planning.queue.publish(merge_session, merge_success, now)
            await merge_session.commit()
        except BaseException:
            poll_task.cancel()
            raise
    results = await asyncio.wait_for(poll_task, 60)

    assert published.job.status is JobStatus.SUCCESS
    assert [r.accepted for r in results] == [True, True], results
    assert len(poll_attempts) == 1, "the indexing poll was aborted (a deadlock) and run again"
    async with planning.sessions() as reader:
        snapshots = (await reader.execute(text(
            "SELECT split_id FROM artifact_snapshots WHERE split_id = ANY(:ids) AND published"),
            {"ids": [outside, inputs[0]]})).scalars().all()
    assert sorted(snapshots) == sorted([outside, inputs[0]])
