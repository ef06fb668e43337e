"""`strata pause|resume`, `strata retry` and `strata retention` against planner-api and indexer-api served over
real HTTP on the session's PostgreSQL: each command changes what the APIs report, and a refused request is one
line on stderr with exit code 2, never a traceback."""

from __future__ import annotations

import json

import pytest

from strata_services.cli import main
from tests.fixtures.http_server import serve_in_thread
from tests.planner.compaction_helpers import create_index, ingest_split, open_window, poll

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("clock_at_present")]


@pytest.fixture
def served(settings, planner_clock, keys, monkeypatch, tmp_path):
    """planner-api and indexer-api over HTTP, and the CLI's environment pointing at them with an admin key."""
    from strata_indexer.app import create_app as indexer_app
    from strata_planner.app import create_app as planner_app

    with serve_in_thread(planner_app(settings, background=False, clock=planner_clock)) as planner_url, \
            serve_in_thread(indexer_app(settings, background=False, clock=planner_clock)) as indexer_url:
        monkeypatch.setenv("STRATA_PLANNER_URL", planner_url)
        monkeypatch.setenv("STRATA_INDEXER_URL", indexer_url)
        monkeypatch.setenv("STRATA_API_KEY", keys.admin)
        monkeypatch.setenv("STRATA_HOME", str(tmp_path))  # no local stack state to find
        yield


def strata(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


async def test_pause_resume_retry_and_retention_commands(served, indexer, planner, keys, capsys):
    index_id = await create_index(indexer, keys, late_data_acceptance_secs=6 * 3600)
    window = open_window()
    for i in range(3):
        await ingest_split(indexer, keys, index_id, window, 20, seed=i)
    await ingest_split(indexer, keys, index_id, window - 2 * 3600, 20)
    admin = keys.header(keys.admin)

    code, out, _ = strata(capsys, "pause", "compaction", index_id)
    assert code == 0 and "paused since" in out and "running jobs finish" in out
    assert (await indexer.get(f"/v1/indexes/{index_id}", headers=admin)).json()["compaction_paused_at"]
    code, out, _ = strata(capsys, "resume", "compaction", index_id)
    assert code == 0 and "resumed" in out
    assert (await indexer.get(f"/v1/indexes/{index_id}", headers=admin)).json()["compaction_paused_at"] is None
    code, out, _ = strata(capsys, "pause", "indexing", index_id, "--format", "json")
    assert code == 0 and json.loads(out)["paused"] is True and json.loads(out)["queue"] == "indexing"
    strata(capsys, "resume", "indexing", index_id)

    [job_id] = (await planner.post(f"/v1/indexes/{index_id}/compaction/trigger",
                                   json={"from": window, "to": window + 1}, headers=admin)).json()["created_job_ids"]
    for _ in range(3):
        [job] = (await poll(planner, keys, "w", capacity=1))["assignments"]
        await poll(planner, keys, "w", capacity=0, updates=[
            {"job_id": job_id, "fencing_token": job["fencing_token"], "status": "failure", "error": "boom"}])
    code, out, _ = strata(capsys, "retry", "compaction", job_id)
    assert code == 0 and job_id in out and "unassigned" in out and "retried" in out, out
    code, out, _ = strata(capsys, "retry", "compaction", "--index", index_id, "--format", "json")
    assert code == 0 and json.loads(out) == {"index_id": index_id, "queue": "compaction", "retried": [],
                                             "cancelled": []}
    code, _, err = strata(capsys, "retry", "compaction", job_id)  # no longer excluded
    assert code == 2 and err.startswith("strata: retrying compaction job") and "409" in err
    code, _, err = strata(capsys, "retry", "indexing")
    assert code == 2 and "either a job id or --index" in err and len(err.splitlines()) == 1

    code, _, err = strata(capsys, "retention", "apply", index_id)
    assert code == 2 and "409" in err and "no retention configured" in err and len(err.splitlines()) == 1
    code, out, _ = strata(capsys, "retention", "drop", index_id, "--older-than", str(window), "--dry-run")
    assert code == 0 and "would drop 1 windows" in out, out
    code, out, _ = strata(capsys, "retention", "drop", index_id, "--older-than", str(window), "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["dry_run"] is False and report["splits"] == 1
    code, _, err = strata(capsys, "retention", "drop", index_id, "--older-than", str(window + 7200))
    assert code == 2 and "422" in err and "future" in err and "Traceback" not in err
    code, _, err = strata(capsys, "retention", "drop", index_id, "--older-than", "yesterday")
    assert code == 2 and "neither epoch seconds nor an RFC 3339 datetime" in err
