"""An excluded merge never stalls a delete (DL-4 kept): a merge planned before a delete, excluded after repeated
failures, keeps its claims on its inputs, which would keep the delete's rewrites off them until an operator acted.
The rewrite planning cancels it instead (`superseded_by_delete`, as its publish would have been), the delete
completes, the merge's late report and a retry of it are refused; an excluded merge over splits no delete covers
keeps its claims and stays excluded."""

from __future__ import annotations

import pytest

from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll
from tests.planner.test_deletes import DELETED, ENGINES, _count, _delete, _matching, _run_until_done, runner  # noqa: F401

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def _excluded_merge(planner, keys, settings, index_id: str) -> dict:
    """A merge of the index's splits that failed until the queue excluded it; its last assignment."""
    trigger = await planner.post(f"/v1/indexes/{index_id}/compaction/trigger", json={},
                                 headers=keys.header(keys.admin))
    [merge_id] = trigger.json()["created_job_ids"]
    for _ in range(settings.compaction_max_failures):
        [assignment] = (await poll(planner, keys, "failing-worker", 1))["assignments"]
        assert assignment["job_id"] == merge_id, assignment
        await poll(planner, keys, "failing-worker", 0, [{
            "job_id": merge_id, "fencing_token": assignment["fencing_token"], "status": "failure",
            "error": "executor lost"}])
    job = await _job(planner, keys, merge_id)
    assert job["status"] == "excluded", job
    return assignment


async def _job(planner, keys, job_id: str) -> dict:
    return (await planner.get(f"/v1/compaction/jobs/{job_id}", headers=keys.header(keys.worker))).json()


async def test_dl4_an_excluded_merge_is_superseded_and_the_delete_completes(indexer, planner, query, keys, settings,
                                                                            runner):  # noqa: F811
    covered, bystander = await create_index(indexer, keys), await create_index(indexer, keys)
    window = open_window()
    seeds = (71, 72, 73)
    for index_id in (covered, bystander):
        for seed in seeds:
            await ingest_split(indexer, keys, index_id, window, 200, seed=seed)
    stuck = await _excluded_merge(planner, keys, settings, covered)
    untouched = await _excluded_merge(planner, keys, settings, bystander)

    accepted = await _delete(planner, keys, covered, {"where": DELETED})
    assert accepted.status_code == 202, accepted.text
    delete_id = accepted.json()["delete_id"]
    done = await _run_until_done(planner, keys, runner, covered, delete_id, timeout=240)
    assert done["status"] == "succeeded", done
    assert done["receipt"]["splits_rewritten"] == len(seeds)

    job = await _job(planner, keys, stuck["job_id"])
    assert job["status"] == "cancelled" and job["stage"] == "superseded_by_delete", job
    late = await planner.post(f"/v1/compaction/jobs/{stuck['job_id']}/status", headers=keys.header(keys.worker),
                              json={"job_id": stuck["job_id"], "fencing_token": stuck["fencing_token"],
                                    "status": "success", "outputs": []})
    assert late.status_code == 409, late.text
    retried = await planner.post(f"/v1/compaction/jobs/{stuck['job_id']}/retry", headers=keys.header(keys.admin))
    assert retried.status_code == 409, retried.text
    expected = 600 - sum(_matching(200, window, seed) for seed in seeds)
    for engine in ENGINES:
        assert await _count(query, keys, covered, DELETED, engine) == 0
        assert await _count(query, keys, covered, "TRUE", engine) == expected

    # No delete covers the other index's splits: its excluded merge keeps them, for an operator to retry.
    assert (await _job(planner, keys, untouched["job_id"]))["status"] == "excluded"
    retried = await planner.post(f"/v1/compaction/jobs/{untouched['job_id']}/retry", headers=keys.header(keys.admin))
    assert retried.status_code == 200 and retried.json()["status"] == "unassigned", retried.text
