"""A covered split that leaves the published set without a rewrite (retention dropped its window) settles the
delete's coverage of it at the next housekeeping: nothing is left to rewrite there, and the delete succeeds with
that split `merged` and no rewrite job for it."""

from __future__ import annotations

import pytest

from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll
from tests.planner.test_deletes import DELETED, _delete, _status

pytestmark = [pytest.mark.usefixtures("clock_at_present")]


async def test_a_covered_split_dropped_by_retention_settles_the_delete(indexer, planner, keys):
    index_id = await create_index(indexer, keys)
    old_window = open_window() - 4 * 900
    await ingest_split(indexer, keys, index_id, old_window, 100, seed=81)
    delete_id = (await _delete(planner, keys, index_id, {"where": DELETED})).json()["delete_id"]
    dropped = await planner.delete(f"/v1/indexes/{index_id}/windows", params={"older_than": old_window + 900},
                                   headers=keys.header(keys.admin))
    assert dropped.status_code == 200 and dropped.json()["splits"] == 1, dropped.text

    await poll(planner, keys, "idle-worker", 1)
    status = await _status(planner, keys, index_id, delete_id)
    assert status["status"] == "succeeded", status
    [split] = status["receipt"]["splits"]
    assert split["state"] == "merged" and split["new_split_ids"] == [] and split["rows_removed"] is None
    jobs = (await planner.get("/v1/compaction/jobs", headers=keys.header(keys.worker),
                              params={"index_id": index_id})).json()["jobs"]
    assert [j for j in jobs if j["kind"] == "rewrite"] == []
