"""Row-level deletes end to end, on PostgreSQL and Spark: accepted through the API, invisible to queries at once
on both engines (EXPLAIN names them), rewritten by fenced compaction jobs of kind `rewrite` on Spark, receipted
and verified; rows ingested after the delete untouched; a merge planned before the delete never publishes the
deleted rows back (DL-4); a rewrite whose worker lost power after writing its output, before reporting, converges
to the same result under a new token (DL-5); a covered split holding no matching row left unchanged (same id and
file, receipted apart, a stale report of it refused, later deletes still in force on it, merged as usual after);
ingestion and compaction running during the delete; tenancy; bad conditions refused with their position."""

from __future__ import annotations

import asyncio

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from strata_services.client import arrow_ipc
from strata_services.sample_data import metrics_index_config, metrics_rows
from tests.helpers import ARROW
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]
DELETED = "service IN ('service_03', 'service_07')"
ENGINES = ("local", "spark")


def _matching(rows: int, window: int, seed: int) -> int:
    table = metrics_rows(rows, start=window, span_secs=900, seed=seed)
    return int(pc.sum(pc.is_in(table.column("service"), pc.cast(["service_03", "service_07"], "string"))).as_py())


async def _count(query, keys, index_id: str, where: str, engine: str, key=None) -> int:
    response = await query.post("/v1/query", headers=keys.header(key or keys.admin),
                                json={"sql": f'SELECT count(*) AS n FROM "{index_id}" WHERE {where}', "engine": engine})
    assert response.status_code == 200, response.text
    return response.json()["rows"][0]["n"]


async def _delete(planner, keys, index_id: str, body: dict, key=None):
    return await planner.post(f"/v1/indexes/{index_id}/deletes", json=body, headers=keys.header(key or keys.admin))


async def _status(planner, keys, index_id: str, delete_id: str) -> dict:
    response = await planner.get(f"/v1/indexes/{index_id}/deletes/{delete_id}", headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
async def runner(planner, spark_factory):
    key = planner.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
    made = CompactionRunner(planner, worker_id="delete-runner", slots=2, executor=MergeExecutor(spark_factory),
                            api_key=key, poll_interval_secs=0.2)
    yield made
    await made.shutdown()


async def _run_until_done(planner, keys, runner, index_id: str, delete_id: str, timeout: float = 300) -> dict:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await runner.step()
        status = await _status(planner, keys, index_id, delete_id)
        if status["status"] in ("succeeded", "failed"):
            return status
        assert loop.time() < deadline, status
        await asyncio.sleep(0.2)


async def _splits(indexer, keys, index_id: str, state: str) -> list[dict]:
    response = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": state, "limit": 1000},
                                 headers=keys.header(keys.writer))
    return response.json()["splits"]


async def test_a_delete_is_invisible_at_once_then_rewritten_receipted_and_verified(
        indexer, planner, query, keys, storage, runner):
    index_id = await create_index(indexer, keys)
    window = open_window()
    seeds = (1, 2, 3)
    for seed in seeds:
        await ingest_split(indexer, keys, index_id, window, 300, seed=seed)
    before = {seed: _matching(300, window, seed) for seed in seeds}
    assert sum(before.values()) > 0
    assert await _count(query, keys, index_id, DELETED, "local") == sum(before.values())

    accepted = await _delete(planner, keys, index_id, {"where": DELETED, "reason": "GDPR erasure request 17"})
    assert accepted.status_code == 202, accepted.text
    delete = accepted.json()
    assert delete["status"] == "pending" and delete["progress"]["splits_covered"] == 3
    assert delete["receipt"] is None

    # Invisible at once, on both engines, and EXPLAIN says which delete applies to which file.
    for engine in ENGINES:
        assert await _count(query, keys, index_id, DELETED, engine) == 0
    assert await _count(query, keys, index_id, "TRUE", "local") == 900 - sum(before.values())
    plan = (await query.post("/v1/query/explain", headers=keys.header(keys.admin),
                             json={"sql": f'SELECT count(*) FROM "{index_id}"'})).json()
    assert [d["delete_id"] for d in plan["pending_deletes"]] == [delete["delete_id"]]
    assert all(f["pending_deletes"] == [delete["delete_id"]] for f in plan["files"])

    # Rows ingested after the delete are not covered by it.
    later = _matching(300, window, 9)
    await ingest_split(indexer, keys, index_id, window, 300, seed=9)
    assert await _count(query, keys, index_id, DELETED, "local") == later

    done = await _run_until_done(planner, keys, runner, index_id, delete["delete_id"])
    assert done["status"] == "succeeded", done
    receipt = done["receipt"]
    rewritten = [s for s in receipt["splits"] if s["state"] == "rewritten"]
    assert receipt["splits_rewritten"] == len(rewritten) == 3
    assert receipt["rows_removed"] == sum(before.values())
    assert sorted(s["rows_removed"] for s in rewritten) == sorted(before.values())
    assert all(s["rows_before"] == 300 and len(s["new_split_ids"]) == 1 for s in rewritten)
    assert done["progress"]["fraction"] == 1.0 and done["finished_at"]

    # The rewritten files hold none of the rows; the originals wait for the garbage collector. (The runner may
    # have merged the new splits with the later one since: then they wait for it too.)
    marked = {s["split_id"]: s for s in await _splits(indexer, keys, index_id, "marked_for_deletion")}
    known = {**marked, **{s["split_id"]: s for s in await _splits(indexer, keys, index_id, "published")}}
    assert {s["split_id"] for s in rewritten} <= set(marked)
    for split in rewritten:
        [new_id] = split["new_split_ids"]
        table = pq.read_table(storage.open_input(known[new_id]["uri"]))
        assert table.num_rows == 300 - split["rows_removed"]  # DL-1
        assert pc.sum(pc.is_in(table.column("service"), pc.cast(["service_03", "service_07"], "string"))).as_py() \
            in (0, None)  # DL-2
    assert await _count(query, keys, index_id, DELETED, "local") == later
    plan = (await query.post("/v1/query/explain", headers=keys.header(keys.admin),
                             json={"sql": f'SELECT count(*) FROM "{index_id}"'})).json()
    assert plan["pending_deletes"] == []

    verified = (await planner.get(f"/v1/indexes/{index_id}/deletes/{delete['delete_id']}/verify",
                                  headers=keys.header(keys.admin))).json()
    assert verified["verified"] is True and verified["matching_rows"] == 0
    assert [(s["matching_rows"], s["published_after_delete"]) for s in verified["splits_with_matches"]] == [
        (later, True)]
    listed = (await planner.get(f"/v1/indexes/{index_id}/deletes", headers=keys.header(keys.admin))).json()
    assert [d["delete_id"] for d in listed["deletes"]] == [delete["delete_id"]]


async def test_dl4_a_merge_planned_before_a_delete_never_publishes_the_deleted_rows_back(
        indexer, planner, query, keys, runner, spark_factory):
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed in (4, 5, 6):
        await ingest_split(indexer, keys, index_id, window, 200, seed=seed)
    expected_left = 600 - sum(_matching(200, window, seed) for seed in (4, 5, 6))
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    [merge_id] = trigger.json()["created_job_ids"]
    # The merge is leased and running its kernel when the delete arrives.
    assignment = (await poll(planner, keys, "early-merger", 1))["assignments"][0]
    assert assignment["job_id"] == merge_id
    merged = await asyncio.to_thread(MergeExecutor(spark_factory).run, _assignment(assignment))

    accepted = await _delete(planner, keys, index_id, {"where": DELETED})
    assert accepted.status_code == 202, accepted.text
    delete_id = accepted.json()["delete_id"]

    # The merge's output holds the deleted rows: its publish is turned into a cancel.
    from strata_planner.compaction.runner import output_splits

    update = {"job_id": merge_id, "fencing_token": assignment["fencing_token"], "status": "success",
              "outputs": [o.model_dump(mode="json") for o in output_splits(merged)]}
    await poll(planner, keys, "early-merger", 0, [update])
    job = (await planner.get(f"/v1/compaction/jobs/{merge_id}", headers=keys.header(keys.worker))).json()
    assert job["status"] == "cancelled" and job["stage"] == "superseded_by_delete", job
    published_ids = {s["split_id"] for s in await _splits(indexer, keys, index_id, "published")}
    assert not published_ids & {o.split_id for o in merged.outputs}
    for engine in ENGINES:
        assert await _count(query, keys, index_id, DELETED, engine) == 0

    done = await _run_until_done(planner, keys, runner, index_id, delete_id)
    assert done["status"] == "succeeded", done
    for engine in ENGINES:
        assert await _count(query, keys, index_id, DELETED, engine) == 0
        assert await _count(query, keys, index_id, "TRUE", engine) == expected_left


async def test_dl5_a_rewrite_whose_worker_vanished_converges_under_a_new_token(
        indexer, planner, query, keys, runner, planner_clock, settings, spark_factory):
    index_id = await create_index(indexer, keys)
    window = open_window()
    await ingest_split(indexer, keys, index_id, window, 250, seed=11)
    removed = _matching(250, window, 11)
    delete_id = (await _delete(planner, keys, index_id, {"where": DELETED})).json()["delete_id"]

    # A worker takes the rewrite, writes its output, and loses power before reporting.
    lost = (await poll(planner, keys, "lost-worker", 1))["assignments"]
    [assignment] = [a for a in lost if a["kind"] == "rewrite"]
    assert assignment["delete_id"] == delete_id
    stale = await asyncio.to_thread(MergeExecutor(spark_factory).run, _assignment(assignment))
    assert stale.stats["rows_removed"] == removed
    planner_clock.advance(settings.compaction_lease_secs + 1)

    done = await _run_until_done(planner, keys, runner, index_id, delete_id)
    assert done["status"] == "succeeded", done
    [split] = done["receipt"]["splits"]
    assert split["rows_removed"] == removed
    from strata_planner.compaction.runner import output_splits

    late = await planner.post(f"/v1/compaction/jobs/{assignment['job_id']}/status", headers=keys.header(keys.worker),
                              json={"job_id": assignment["job_id"], "fencing_token": assignment["fencing_token"],
                                    "status": "success",
                                    "outputs": [o.model_dump(mode="json") for o in output_splits(stale)]})
    assert late.status_code == 409
    published = await _splits(indexer, keys, index_id, "published")
    assert [s["split_id"] for s in published] == split["new_split_ids"]
    assert await _count(query, keys, index_id, "TRUE", "local") == 250 - removed


def _success(assignment: dict, result) -> dict:
    from strata_planner.compaction.runner import COMPACTION_PROTOCOL

    return {"job_id": assignment["job_id"], "fencing_token": assignment["fencing_token"], "status": "success",
            **COMPACTION_PROTOCOL.success_fields(result)}


async def _job(planner, keys, job_id: str) -> dict:
    return (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()


async def test_a_covered_split_without_a_matching_row_keeps_its_file_and_is_receipted_unchanged(
        indexer, planner, query, keys, storage, runner, planner_clock, settings, spark_factory):
    """Split statistics cover a split whose service range spans the deleted ones but which holds none of them:
    its rewrite writes nothing and the split stays published (same id, same file); the other covered split is
    rewritten. The receipt tells them apart, verification passes, and a stale worker's report of the unchanged
    result is refused (DL-5)."""
    index_id = await create_index(indexer, keys)
    window = open_window()
    hit = await ingest_split(indexer, keys, index_id, window, 300, seed=41)
    miss = await ingest_split(indexer, keys, index_id, window, 300, seed=42, services=("service_01", "service_09"))
    removed = _matching(300, window, 41)
    assert removed > 0
    uris = {s["split_id"]: s["uri"] for s in await _splits(indexer, keys, index_id, "published")}
    delete = (await _delete(planner, keys, index_id, {"where": DELETED})).json()
    assert delete["progress"]["splits_covered"] == 2, delete
    for engine in ENGINES:
        assert await _count(query, keys, index_id, DELETED, engine) == 0

    # A worker takes both rewrites, runs the one of the split without a matching row, and loses power.
    lost = [a for a in (await poll(planner, keys, "lost-worker", 2))["assignments"] if a["kind"] == "rewrite"]
    [stale_assignment] = [a for a in lost if a["inputs"][0]["split_id"] == miss]
    stale = await asyncio.to_thread(MergeExecutor(spark_factory).run, _assignment(stale_assignment))
    assert stale.unchanged and stale.outputs == [] and stale.stats["rows_removed"] == 0
    assert stale.stats["num_outputs"] == 0
    planner_clock.advance(settings.compaction_lease_secs + 1)

    done = await _run_until_done(planner, keys, runner, index_id, delete["delete_id"])
    assert done["status"] == "succeeded", done
    receipt = done["receipt"]
    by_split = {s["split_id"]: s for s in receipt["splits"]}
    assert by_split[miss]["state"] == "unchanged" and by_split[miss]["new_split_ids"] == []
    assert by_split[miss]["rows_removed"] == 0 and by_split[miss]["rows_before"] == 300
    assert by_split[hit]["state"] == "rewritten" and by_split[hit]["rows_removed"] == removed
    assert receipt["splits_rewritten"] == 1 and receipt["splits_unchanged"] == 1
    assert receipt["rows_removed"] == removed

    # The split without a matching row is as it was: same id, same file, still published, nothing to collect.
    published = {s["split_id"]: s for s in await _splits(indexer, keys, index_id, "published")}
    marked = {s["split_id"] for s in await _splits(indexer, keys, index_id, "marked_for_deletion")}
    assert published[miss]["uri"] == uris[miss] and miss not in marked
    assert storage.exists(uris[miss])
    assert hit in marked and set(published) == {miss, *by_split[hit]["new_split_ids"]}
    [unchanged_job] = [j for j in (await planner.get(
        "/v1/compaction/jobs", params={"index_id": index_id, "limit": 100},
        headers=keys.header(keys.worker))).json()["jobs"]
        if j["kind"] == "rewrite" and j["status"] == "success" and j["input_split_ids"] == [miss]]
    assert unchanged_job["stage"] == "unchanged" and unchanged_job["output_split_ids"] == []

    for engine in ENGINES:
        assert await _count(query, keys, index_id, DELETED, engine) == 0
        assert await _count(query, keys, index_id, "TRUE", engine) == 600 - removed
    verified = (await planner.get(f"/v1/indexes/{index_id}/deletes/{delete['delete_id']}/verify",
                                  headers=keys.header(keys.admin))).json()
    assert verified["verified"] is True and verified["matching_rows"] == 0, verified

    # The lost worker's report under its old token is refused, and changes nothing.
    late = await planner.post(f"/v1/compaction/jobs/{stale_assignment['job_id']}/status",
                              headers=keys.header(keys.worker), json=_success(stale_assignment, stale))
    assert late.status_code == 409, late.text
    assert {s["split_id"] for s in await _splits(indexer, keys, index_id, "published")} == set(published)


async def test_a_delete_accepted_after_an_unchanged_rewrite_was_planned_stays_in_force_on_the_split(
        indexer, planner, query, keys, runner, spark_factory):
    """The rewrite of a split holding no row of the first delete publishes unchanged; a second delete, accepted
    while that rewrite ran and matching rows of the split, still hides them and then rewrites the split."""
    index_id = await create_index(indexer, keys)
    window = open_window()
    split_id = await ingest_split(indexer, keys, index_id, window, 300, seed=43,
                                  services=("service_01", "service_09"))
    first = (await _delete(planner, keys, index_id, {"where": DELETED})).json()
    [assignment] = [a for a in (await poll(planner, keys, "worker-a", 1))["assignments"] if a["kind"] == "rewrite"]
    assert assignment["delete_id"] == first["delete_id"]
    result = await asyncio.to_thread(MergeExecutor(spark_factory).run, _assignment(assignment))
    assert result.unchanged

    later_where = "service = 'service_09'"
    later_rows = await _count(query, keys, index_id, later_where, "local")
    assert later_rows > 0
    second = (await _delete(planner, keys, index_id, {"where": later_where})).json()
    await poll(planner, keys, "worker-a", 0, [_success(assignment, result)])
    job = await _job(planner, keys, assignment["job_id"])
    assert job["status"] == "success" and job["stage"] == "unchanged", job
    done = await _status(planner, keys, index_id, first["delete_id"])
    assert done["status"] == "succeeded" and done["receipt"]["splits_unchanged"] == 1, done
    # The split is still the same one, and the second delete still hides its rows there.
    assert [s["split_id"] for s in await _splits(indexer, keys, index_id, "published")] == [split_id]
    pending = await _status(planner, keys, index_id, second["delete_id"])
    assert pending["status"] in ("pending", "running") and pending["progress"]["splits_covered"] == 1
    for engine in ENGINES:
        assert await _count(query, keys, index_id, later_where, engine) == 0

    done = await _run_until_done(planner, keys, runner, index_id, second["delete_id"])
    assert done["status"] == "succeeded", done
    [split] = done["receipt"]["splits"]
    assert split["split_id"] == split_id and split["state"] == "rewritten" and split["rows_removed"] == later_rows
    assert [s["split_id"] for s in await _splits(indexer, keys, index_id, "published")] == split["new_split_ids"]
    for engine in ENGINES:
        assert await _count(query, keys, index_id, "TRUE", engine) == 300 - later_rows


async def test_splits_left_unchanged_are_merged_as_usual_once_the_delete_is_done(
        indexer, planner, query, keys, runner):
    """While covered, the splits are kept out of merges; once the delete left two of them unchanged and rewrote
    the third, the three merge as any splits would, and every row the delete did not match is still there."""
    index_id = await create_index(indexer, keys)
    window = open_window()
    await ingest_split(indexer, keys, index_id, window, 200, seed=44)
    misses = {await ingest_split(indexer, keys, index_id, window, 200, seed=seed, services=("service_01", "service_09"))
              for seed in (45, 46)}
    removed = _matching(200, window, 44)
    delete = (await _delete(planner, keys, index_id, {"where": DELETED})).json()
    assert delete["progress"]["splits_covered"] == 3
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    assert trigger.json()["created_job_ids"] == []  # covered: kept out of merges

    done = await _run_until_done(planner, keys, runner, index_id, delete["delete_id"])
    assert done["receipt"]["splits_unchanged"] == 2 and done["receipt"]["splits_rewritten"] == 1, done
    await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={}, headers=keys.header(keys.admin))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 300
    while True:
        jobs = (await planner.get("/v1/compaction/jobs", params={"index_id": index_id, "limit": 100},
                                  headers=keys.header(keys.worker))).json()["jobs"]
        merges = [j for j in jobs if j["kind"] != "rewrite" and misses <= set(j["input_split_ids"])]
        if any(j["status"] == "success" for j in merges):
            break
        assert loop.time() < deadline, jobs
        await runner.step()
        await asyncio.sleep(0.2)
    marked = {s["split_id"] for s in await _splits(indexer, keys, index_id, "marked_for_deletion")}
    assert misses <= marked
    for engine in ENGINES:
        assert await _count(query, keys, index_id, "TRUE", engine) == 600 - removed
        assert await _count(query, keys, index_id, DELETED, engine) == 0


def _assignment(data: dict):
    from strata_planner.compaction.schemas import Assignment

    return Assignment.model_validate(data)


async def test_tenant_keys_delete_and_read_only_in_their_partition(indexer, planner, query, keys):
    index_id = await create_index(indexer, keys)
    window = open_window()
    await ingest_split(indexer, keys, index_id, window, 100, seed=21, partition="acme")
    await ingest_split(indexer, keys, index_id, window, 100, seed=22, partition="default")
    refused = await _delete(planner, keys, index_id, {"where": DELETED, "partition_id": "default"}, keys.writer_acme)
    assert refused.status_code == 403, refused.text
    mine = await _delete(planner, keys, index_id, {"where": DELETED}, keys.writer_acme)
    assert mine.status_code == 202 and mine.json()["partition_id"] == "acme"
    assert mine.json()["progress"]["splits_covered"] == 1
    theirs = (await _delete(planner, keys, index_id, {"where": "service = 'service_01'"})).json()
    hidden = await planner.get(f"/v1/indexes/{index_id}/deletes/{theirs['delete_id']}",
                               headers=keys.header(keys.writer_acme))
    assert hidden.status_code == 404
    listed = (await planner.get(f"/v1/indexes/{index_id}/deletes", headers=keys.header(keys.writer_acme))).json()
    assert [d["delete_id"] for d in listed["deletes"]] == [mine.json()["delete_id"]]
    # The other partition's matching rows stay visible; acme's are gone.
    assert await _count(query, keys, index_id, f"{DELETED} AND partition_id = 'default'", "local") == \
        _matching(100, window, 22)
    assert await _count(query, keys, index_id, DELETED, "local", keys.query_acme) == 0


@pytest.mark.parametrize(("where", "status", "field", "column"), [
    ("service = 'x' AND (", 400, "where", 19),
    ("service = 'unterminated", 400, "where", 11),
    ("value + 1 > 3", 422, "where", None),
    ("service = 'x' LIMIT 3", 422, "where", None),
    ("no_such_column = 1", 422, "no_such_column", None),
    ("service = 'a'; DROP TABLE splits", 422, "where", None),
])
async def test_a_bad_condition_is_refused_naming_what_and_where(indexer, planner, keys, where, status, field, column):
    index_id = await create_index(indexer, keys)
    response = await _delete(planner, keys, index_id, {"where": where})
    assert response.status_code == status, response.text
    [error] = response.json()["errors"]
    assert error["field"] == field
    if column is not None:
        assert error["column"] == column, error
    listed = (await planner.get(f"/v1/indexes/{index_id}/deletes", headers=keys.header(keys.admin))).json()
    assert listed["deletes"] == []


async def test_metrics_count_deletes_waiting_and_the_oldest_age(indexer, planner, keys, planner_clock):
    from prometheus_client import CollectorRegistry, generate_latest

    from strata_planner.compaction.metrics import CompactionMetrics

    index_id = await create_index(indexer, keys)
    await ingest_split(indexer, keys, index_id, open_window(), 50, seed=41)
    registry = CollectorRegistry()
    metrics = CompactionMetrics(registry)
    await metrics.refresh(planner.app.state.strata.sessions, planner.app.state.strata.clock())
    pending_before = registry.get_sample_value("strata_deletes", {"status": "pending"})
    assert (await _delete(planner, keys, index_id, {"where": "TRUE"})).status_code == 202
    planner_clock.advance(30)
    await metrics.refresh(planner.app.state.strata.sessions, planner.app.state.strata.clock())
    assert registry.get_sample_value("strata_deletes", {"status": "pending"}) == pending_before + 1
    assert registry.get_sample_value("strata_delete_oldest_pending_age_seconds") >= 30
    assert "strata_delete_rows_removed" in generate_latest(registry).decode()


async def test_a_delete_while_ingestion_and_compaction_run_removes_exactly_the_rows_it_covers(
        indexer, planner, query, keys, runner):
    """Writers never stop: while the delete's rewrites run, new splits keep arriving in the same window and the same
    runner merges them (and, once rewritten, the rewritten splits with them). The delete removes exactly the rows of
    the splits published before it; every row ingested after it stays, merged or not; nothing is lost or doubled."""
    index_id = await create_index(indexer, keys)
    window = open_window()
    covered, later = (21, 22, 23, 24), (31, 32, 33, 34, 35, 36)
    for seed in covered:
        await ingest_split(indexer, keys, index_id, window, 200, seed=seed)
    removed = sum(_matching(200, window, seed) for seed in covered)
    accepted = await _delete(planner, keys, index_id, {"where": DELETED})
    assert accepted.status_code == 202, accepted.text
    delete_id = accepted.json()["delete_id"]

    async def write() -> None:
        for seed in later:
            await ingest_split(indexer, keys, index_id, window, 200, seed=seed)
            await asyncio.sleep(0.3)

    writing = asyncio.create_task(write())
    done = await _run_until_done(planner, keys, runner, index_id, delete_id)
    await writing
    assert done["status"] == "succeeded", done
    assert done["receipt"]["rows_removed"] == removed
    # Compaction goes on after the delete: final merges of the window until no job is left.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 300
    while True:
        trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={"final": True},
                                     headers=keys.header(keys.admin))
        assert trigger.status_code == 200, trigger.text
        live = (await planner.get("/v1/compaction/jobs", headers=keys.header(keys.worker),
                                  params={"index_id": index_id, "status": ["unassigned", "in_progress"]})).json()
        if not trigger.json()["operations"] and not live["jobs"]:
            break
        assert loop.time() < deadline, live
        await runner.step()
        await asyncio.sleep(0.2)
    jobs = (await planner.get("/v1/compaction/jobs", headers=keys.header(keys.worker),
                              params={"index_id": index_id, "limit": 1000})).json()["jobs"]
    assert {j["kind"] for j in jobs if j["status"] == "success"} >= {"rewrite"}
    assert len([j for j in jobs if j["status"] == "success"]) > len(covered), "merges ran beside the rewrites"

    total = 200 * (len(covered) + len(later))
    later_matching = sum(_matching(200, window, seed) for seed in later)
    for engine in ENGINES:
        assert await _count(query, keys, index_id, "TRUE", engine) == total - removed
        assert await _count(query, keys, index_id, DELETED, engine) == later_matching
    verified = (await planner.get(f"/v1/indexes/{index_id}/deletes/{delete_id}/verify",
                                  headers=keys.header(keys.admin))).json()
    assert verified["verified"] is True
    assert all(s["published_after_delete"] for s in verified["splits_with_matches"]), verified


async def test_one_users_delete_covers_only_the_splits_whose_artifacts_may_hold_the_user(
        indexer, planner, query, keys, storage, runner, spark_factory):
    """Each split holds a few users, the rows sorted by metric and host, so split statistics on user_id rule out
    only a split whose user range misses the user. Blooms, once published, rule out the indexed splits without the
    user; a split whose artifacts are not built yet stays covered. Only the splits covered are rewritten (the one
    holding the user) or read and left unchanged (the one without artifacts), and the answers are exact after."""
    from tests.indexer.indexing_helpers import make_runner, run_until_indexed

    artifacts = {"bloom_columns": [{"column": "user_id", "false_positive_rate": 0.01}]}
    index_id = await create_index(indexer, keys, fields=metrics_index_config(
        "fields", extra_fields=("user_id",))["fields"], artifacts=artifacts)
    window = open_window()

    async def ingest(seed: int, holding: tuple[str, ...]) -> tuple[str, int]:
        table = metrics_rows(300, start=window, span_secs=900, seed=seed, extra={"user_id": holding})
        response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=arrow_ipc(table),
                                      params={"partition_id": "default"},
                                      headers={**keys.header(keys.writer), "Content-Type": ARROW})
        assert response.status_code == 200, response.text
        [split] = response.json()["splits"]
        return split["split_id"], int(pc.sum(pc.equal(table.column("user_id"), "u-05")).as_py() or 0)

    # u-05 lies inside the user range of every split but the last, and only the third holds it.
    without_a, _ = await ingest(61, ("u-01", "u-08"))
    without_b, _ = await ingest(62, ("u-02", "u-06"))
    holder, removed = await ingest(63, ("u-03", "u-05", "u-07"))
    after_range, _ = await ingest(64, ("u-06", "u-07"))
    assert removed > 0
    indexed = await run_until_indexed(indexer, keys, make_runner(indexer, spark_factory),
                                      [without_a, without_b, holder, after_range])
    assert all(j["status"] == "success" for j in indexed), indexed
    # Published once the indexing runner has stopped: no artifact snapshot yet when the delete is accepted.
    unindexed, _ = await ingest(65, ("u-04", "u-06"))

    registry = planner.app.state.strata.registry

    def examined(decision: str) -> float:
        return registry.get_sample_value("strata_delete_splits_examined_total", {"decision": decision}) or 0.0

    before = {d: examined(d) for d in ("covered", "ruled_out_by_statistics", "ruled_out_by_artifacts")}
    where = "user_id = 'u-05'"
    assert await _count(query, keys, index_id, where, "local") == removed
    accepted = await _delete(planner, keys, index_id, {"where": where, "reason": "erasure of one user"})
    assert accepted.status_code == 202, accepted.text
    delete = accepted.json()
    assert delete["progress"]["splits_covered"] == 2, delete
    assert {d: examined(d) - before[d] for d in before} == {
        "covered": 2, "ruled_out_by_statistics": 1, "ruled_out_by_artifacts": 2}
    plan = (await query.post("/v1/query/explain", headers=keys.header(keys.admin),
                             json={"sql": f'SELECT count(*) FROM "{index_id}"'})).json()
    pending = {f["split_id"] for f in plan["files"] if f["pending_deletes"] == [delete["delete_id"]]}
    assert pending == {holder, unindexed}
    for engine in ENGINES:
        assert await _count(query, keys, index_id, where, engine) == 0

    done = await _run_until_done(planner, keys, runner, index_id, delete["delete_id"])
    assert done["status"] == "succeeded", done
    receipt = done["receipt"]
    assert {s["split_id"]: s["state"] for s in receipt["splits"]} == {holder: "rewritten", unindexed: "unchanged"}
    assert receipt["rows_removed"] == removed and receipt["splits_rewritten"] == 1
    rewrites = [j for j in (await planner.get(
        "/v1/compaction/jobs", params={"index_id": index_id, "limit": 100},
        headers=keys.header(keys.worker))).json()["jobs"] if j["kind"] == "rewrite"]
    assert sorted(j["input_split_ids"][0] for j in rewrites) == sorted([holder, unindexed])
    for engine in ENGINES:
        assert await _count(query, keys, index_id, where, engine) == 0
        assert await _count(query, keys, index_id, "TRUE", engine) == 1500 - removed
        assert await _count(query, keys, index_id, "user_id = 'u-06'", engine) > 0
    verified = (await planner.get(f"/v1/indexes/{index_id}/deletes/{delete['delete_id']}/verify",
                                  headers=keys.header(keys.admin))).json()
    assert verified["verified"] is True and verified["matching_rows"] == 0, verified
