"""`strata debt INDEX` and the debt columns of `strata windows`, against planner-api and indexer-api served over
real HTTP on the session's PostgreSQL."""

from __future__ import annotations

import json

import pytest

from tests.planner.compaction_helpers import create_index, ingest_split, open_window
from tests.services.test_lifecycle_cli import served, strata  # noqa: F401 - `served` is a fixture

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def test_debt_and_windows_commands(served, indexer, planner, keys, capsys):  # noqa: F811
    index_id = await create_index(indexer, keys)
    window = open_window()
    for seed, rows in enumerate((20, 30, 1500)):
        await ingest_split(indexer, keys, index_id, window, rows, seed=seed)

    code, out, _ = strata(capsys, "debt", index_id, "--format", "json")
    debt = json.loads(out)
    assert code == 0 and debt == {**debt, "index_id": index_id, "published_splits": 3}
    assert debt["compaction"]["splits_waiting"] == 3 and debt["indexing"]["files_waiting"] == 3

    code, out, _ = strata(capsys, "debt", index_id)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"{index_id}: compaction and indexing debt at")
    assert any(line.split() == ["splits", "waiting", "for", "a", "merge", "3"] for line in lines), out
    assert any(line.split()[:4] == ["level", "0", "2", "splits,"] for line in lines), out
    assert any(line.split()[:4] == ["level", "1", "1", "splits,"] for line in lines), out

    code, out, _ = strata(capsys, "windows", index_id)
    header, row = out.splitlines()
    assert code == 0 and header.split()[5:7] == ["WAITING", "WAITING_MB"] and "FINAL" in header.split()
    assert row.split()[4:7] == ["L0:2", "L1:1", "3"]  # levels, then the splits waiting

    code, _, err = strata(capsys, "debt", "no-such-index")
    assert code == 2 and "no-such-index" in err and "Traceback" not in err
