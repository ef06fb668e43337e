"""`strata delete` and `strata deletes` against planner-api served over real HTTP: accept a delete, list it, see
verification fail while the rewrite is pending, then `--wait` follows the rewrite (run on Spark meanwhile) to the
receipt, and `--verify` passes; `--cancel` cancels a pending one."""

from __future__ import annotations

import asyncio
import json

import pytest

from strata_planner.compaction.executor import MergeExecutor
from strata_planner.compaction.runner import CompactionRunner
from strata_services.cli import main
from tests.planner.compaction_helpers import create_index, ingest_split, open_window
from tests.services.test_lifecycle_cli import served, strata  # noqa: F401 - `served` is a fixture

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


async def test_delete_list_wait_and_verify_commands(served, indexer, planner, keys, spark_factory,  # noqa: F811
                                                    capsys):
    index_id = await create_index(indexer, keys)
    window = open_window()
    await ingest_split(indexer, keys, index_id, window, 200, seed=31)
    # Covered by both deletes (its services span theirs), holding no row of either: left unchanged.
    kept = await ingest_split(indexer, keys, index_id, window, 100, seed=33, services=("service_01", "service_09"))
    code, out, _ = strata(capsys, "delete", index_id, "--where", "service = 'service_05'", "--reason", "test")
    assert code == 0 and "accepted delete" in out
    delete_id = out.split()[2].rstrip(":")

    code, out, _ = strata(capsys, "deletes", index_id, "--format", "json")
    [listed] = json.loads(out)["deletes"]
    assert code == 0 and listed["delete_id"] == delete_id and listed["status"] == "pending"
    code, out, _ = strata(capsys, "delete", index_id, "--verify", delete_id)
    assert code == 1 and "NOT verified" in out

    key = planner.app.state.strata.api_keys.add_internal_key(frozenset({"worker"}))
    runner = CompactionRunner(planner, worker_id="cli-runner", slots=1, executor=MergeExecutor(spark_factory),
                              api_key=key, poll_interval_secs=0.2)
    waiting = asyncio.ensure_future(asyncio.to_thread(
        main, ["delete", index_id, "--where", "service = 'service_06'", "--wait", "--poll-secs", "0.2"]))
    try:
        deadline = asyncio.get_running_loop().time() + 300
        while not waiting.done():
            await runner.step()
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.2)
    finally:
        await runner.shutdown()
    assert await waiting == 0
    out = capsys.readouterr().out
    assert "succeeded" in out and "receipt: 1 splits rewritten, 1 unchanged (no matching row)" in out, out
    assert f"{kept} unchanged: 0 of 100 rows matched, kept as it is" in out, out

    code, out, _ = strata(capsys, "delete", index_id, "--verify", delete_id)
    assert code == 0 and "verified: no matching row left" in out, out
    code, out, _ = strata(capsys, "deletes", index_id, delete_id)
    assert code == 0 and f"delete {delete_id} on {index_id}: succeeded" in out


async def test_delete_cancel_command(served, indexer, keys, capsys):  # noqa: F811
    index_id = await create_index(indexer, keys)
    await ingest_split(indexer, keys, index_id, open_window(), 100, seed=32)
    code, out, _ = strata(capsys, "delete", index_id, "--where", "service = 'service_05'")
    delete_id = out.split()[2].rstrip(":")
    code, out, _ = strata(capsys, "delete", index_id, "--cancel", delete_id)
    assert code == 0 and f"cancelled delete {delete_id}" in out, out
    code, out, _ = strata(capsys, "deletes", index_id, delete_id)
    assert code == 0 and f"delete {delete_id} on {index_id}: cancelled" in out
    code, _, err = strata(capsys, "delete", index_id, "--cancel", "01" + "Z" * 24)
    assert code != 0 and "cancelling delete" in err and "no delete" in err, err
