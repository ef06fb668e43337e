"""`strata skips` against planner-api and indexer-api served over real HTTP on the session's PostgreSQL: the
records of both APIs' passes, filtered by pass and index."""

from __future__ import annotations

import json

import pytest

from strata_planner.compaction.dependencies import planner_services_of
from strata_planner.compaction.retention import RetentionSchedule
from tests.planner.compaction_helpers import create_index
from tests.services.test_lifecycle_cli import served, strata  # noqa: F401 - `served` is a fixture
from tests.skips_helpers import break_config, mend_config

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def test_skips_command_lists_both_apis_records(served, indexer, planner, keys, database_url,  # noqa: F811
                                                     capsys):
    index_id = await create_index(indexer, keys, retention={"period_secs": 86_400, "interval_secs": 60})
    await break_config(database_url, index_id)
    try:
        await RetentionSchedule(planner_services_of(planner.app).retention).tick()
        code, out, _ = strata(capsys, "skips", "--pass", "retention", "--index", index_id, "--format", "json")
        [skip] = json.loads(out)
        assert code == 0 and (skip["pass"], skip["index_id"], skip["reason_class"]) == (
            "retention", index_id, "ValidationError")

        code, out, _ = strata(capsys, "skips", "--index", index_id)  # every pass: both APIs asked
        header, row = out.splitlines()
        assert code == 0 and header.split()[:4] == ["PASS", "INDEX_ID", "ENTRY", "REASON_CLASS"]
        assert row.split()[:2] == ["retention", index_id]

        code, out, _ = strata(capsys, "skips", "--pass", "janitor", "--index", index_id, "--format", "json")
        assert code == 0 and json.loads(out) == []
    finally:
        await mend_config(database_url, index_id)
    await RetentionSchedule(planner_services_of(planner.app).retention).tick()
