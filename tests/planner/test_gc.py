"""The garbage collector: inputs of a published merge stay readable for the grace period, then their files and
rows go; merge outputs no split references (a stale or failed attempt) go once older than the grace period."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from sqlalchemy import text
from ulid import ULID

from strata_jobs.merge import run_merge
from strata_planner.compaction.dependencies import planner_services_of
from strata_planner.compaction.executor import merge_spec
from strata_planner.compaction.runner import output_splits
from strata_planner.compaction.schemas import Assignment
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def test_gc_waits_for_the_grace_period_then_deletes_inputs_and_orphans(indexer, planner, keys, storage,
                                                                            planner_clock):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 10, seed=i)
    await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
    [raw] = (await poll(planner, keys, "w", capacity=1))["assignments"]
    assignment = Assignment.model_validate(raw)
    result = run_merge(merge_spec(assignment))  # the kernel, in-process: this test is about what follows
    outputs = [o.model_dump(mode="json") for o in output_splits(result)]
    done = await poll(planner, keys, "w", capacity=0, updates=[
        {"job_id": assignment.job_id, "fencing_token": assignment.fencing_token, "status": "success",
         "outputs": outputs}])
    assert done["updates"][0]["accepted"] is True, done

    # An attempt that never published left a file behind in the staging prefix.
    orphan = f"{assignment.output_uri_prefix}/{ULID()}.parquet"
    storage.write_bytes(orphan, b"unpublished")
    state = planner.app.state.strata
    gc = planner_services_of(planner.app).gc
    inputs = [i.uri for i in assignment.inputs]

    report = await gc.collect(planner_clock())
    assert all(storage.exists(u) for u in inputs), "inside the grace period"

    old = time.time() - state.settings.gc_grace_secs - 60
    os.utime(storage.resolve(orphan), (old, old))
    report = await gc.collect(planner_clock() + timedelta(seconds=state.settings.gc_grace_secs + 1))
    # Other tests' merges may have inputs past the grace too: the GC is global, so count at least ours.
    assert report.splits_deleted >= 3 and report.orphans_deleted >= 1
    assert not any(storage.exists(u) for u in inputs) and not storage.exists(orphan)
    assert all(storage.exists(o["uri"]) for o in outputs), "published outputs stay"
    listed = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()["splits"]
    assert [s["split_id"] for s in listed] == [o["split_id"] for o in outputs]

    again = await gc.collect(planner_clock() + timedelta(seconds=state.settings.gc_grace_secs + 1))
    assert (again.splits_deleted, again.orphans_deleted) == (0, 0)
    job = (await planner.get(f"/v1/compaction/jobs/{assignment.job_id}", headers=keys.header(keys.worker))).json()
    assert len(job["input_split_ids"]) == 3, "the job keeps its history after its inputs are collected"


async def test_gc_keeps_the_files_a_query_still_running_may_read(indexer, planner, keys, storage, planner_clock):
    """A query that started before a merge replaced its inputs may still read them (a Spark scan on a loaded
    machine outlasted a 150 s grace in the fleet journey): past the grace, the collector keeps them until the
    query ends, unless its replica is dead or it has held them for `gc_max_query_hold_secs`."""
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 10, seed=i)
    state = planner.app.state.strata
    gc = planner_services_of(planner.app).gc
    before_merge = ULID.from_datetime(planner_clock() - timedelta(seconds=5))
    async with state.sessions() as session:
        await session.execute(text("INSERT INTO running_queries (query_id, tenant, owner) VALUES (:q, NULL, 'q-1')"),
                              {"q": str(before_merge)})
        await session.commit()
    try:
        await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
        [raw] = (await poll(planner, keys, "w", capacity=1))["assignments"]
        assignment = Assignment.model_validate(raw)
        outputs = [o.model_dump(mode="json") for o in output_splits(run_merge(merge_spec(assignment)))]
        done = await poll(planner, keys, "w", capacity=0, updates=[
            {"job_id": assignment.job_id, "fencing_token": assignment.fencing_token, "status": "success",
             "outputs": outputs}])
        assert done["updates"][0]["accepted"] is True, done
        inputs = [i.uri for i in assignment.inputs]
        past_grace = planner_clock() + timedelta(seconds=state.settings.gc_grace_secs + 1)

        await gc.collect(past_grace)
        assert all(storage.exists(u) for u in inputs), "a query that started before the merge still runs"

        later = past_grace + timedelta(seconds=state.settings.gc_max_query_hold_secs)
        await gc.collect(later)
        assert not any(storage.exists(u) for u in inputs), "held no longer than gc_max_query_hold_secs"
    finally:
        async with state.sessions() as session:
            await session.execute(text("DELETE FROM running_queries WHERE owner = 'q-1'"))
            await session.commit()


async def test_gc_ignores_a_dead_replicas_running_queries_and_collects_once_the_query_ends(
        indexer, planner, keys, storage, planner_clock):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 10, seed=i)
    state = planner.app.state.strata
    gc = planner_services_of(planner.app).gc
    dead, ending = (str(ULID.from_datetime(planner_clock() - timedelta(seconds=s))) for s in (9, 8))
    async with state.sessions() as session:
        await session.execute(text("INSERT INTO running_queries (query_id, tenant, owner, seen_at) VALUES "
                                   "(:dead, NULL, 'q-dead', now() - interval '1 hour'), (:ending, NULL, 'q-2', now())"),
                              {"dead": dead, "ending": ending})
        await session.commit()
    try:
        await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
        [raw] = (await poll(planner, keys, "w", capacity=1))["assignments"]
        assignment = Assignment.model_validate(raw)
        outputs = [o.model_dump(mode="json") for o in output_splits(run_merge(merge_spec(assignment)))]
        await poll(planner, keys, "w", capacity=0, updates=[
            {"job_id": assignment.job_id, "fencing_token": assignment.fencing_token, "status": "success",
             "outputs": outputs}])
        inputs = [i.uri for i in assignment.inputs]
        past_grace = planner_clock() + timedelta(seconds=state.settings.gc_grace_secs + 1)
        await gc.collect(past_grace)
        assert all(storage.exists(u) for u in inputs), "the live replica's query still runs"

        async with state.sessions() as session:
            await session.execute(text("DELETE FROM running_queries WHERE owner = 'q-2'"))
            await session.commit()
        await gc.collect(past_grace)
        assert not any(storage.exists(u) for u in inputs), "only a dead replica's row is left: it holds nothing"
    finally:
        async with state.sessions() as session:
            await session.execute(text("DELETE FROM running_queries WHERE owner IN ('q-dead', 'q-2')"))
            await session.commit()
