"""`strata up` as a user runs it: a supervisor process with the three APIs and the proxy as children, on the
session's PostgreSQL and Spark Connect server (so the test adds no second JVM). Then status, the quickstart
data, ingest through the CLI, the proxy over real HTTP, and `strata down` leaving no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from strata_services.local.processes import free_port

pytestmark = pytest.mark.spark


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        # A zombie is dead for our purposes.
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _key(keys: dict, scope: str) -> str:
    return next(k for k, v in keys.items() if scope in v["scopes"])


def _strata(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "strata_services.cli", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def stack_env(tmp_path, pg_databases, spark_remote) -> dict[str, str]:
    database_url = pg_databases.create("strata_e2e")
    env = {**os.environ,
           "STRATA_HOME": str(tmp_path / "home"),
           "STRATA_DATABASE_URL": database_url,
           "STRATA_SPARK_REMOTE": spark_remote,
           "STRATA_PROXY_PORT": str(free_port()),
           "STRATA_PLANNER_PORT": str(free_port()),
           "STRATA_INDEXER_PORT": str(free_port()),
           "STRATA_QUERY_PORT": str(free_port()),
           # The readiness check's own 3 s budget is a production knob; here the session's Spark server may be busy
           # with another test's job, and what this test checks is the flow, not how fast Spark answers.
           "STRATA_READINESS_TIMEOUT_SECS": "30"}
    env.pop("STRATA_API_KEYS", None)
    env.pop("STRATA_API_KEY", None)
    return env


def test_up_quickstart_status_ingest_proxy_down(stack_env, tmp_path):
    log_path = tmp_path / "up.log"
    with open(log_path, "w") as log:
        supervisor = subprocess.Popen([sys.executable, "-m", "strata_services.cli", "up", "--quickstart"],
                                      env=stack_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    children: list[int] = []
    try:
        deadline = time.monotonic() + 180
        while "Ctrl-C stops everything" not in log_path.read_text():
            assert supervisor.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.5)
        output = log_path.read_text()
        assert "quickstart: ingested 300,000 rows" in output
        children = _children(supervisor.pid)
        assert len(children) == 4, "planner, indexer, query and proxy run as children of the supervisor"

        keys_file = Path(stack_env["STRATA_HOME"]) / "api-keys.json"
        keys = json.loads(keys_file.read_text())
        assert oct(keys_file.stat().st_mode & 0o777) == "0o600"
        assert sorted(s for spec in keys.values() for s in spec["scopes"]) == ["admin", "query", "worker", "writer"]

        status = _strata(stack_env, "status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count(" ready ") == 4

        ndjson = tmp_path / "rows.ndjson"
        ndjson.write_text(json.dumps({"metric_name": "cpu", "service": "a", "host": "h", "env": "prod",
                                      "timestamp_secs": int(time.time()), "value": 1.0}) + "\n")
        ingested = _strata(stack_env, "ingest", str(ndjson), "--index", "quickstart-metrics", "--json")
        assert ingested.returncode == 0, ingested.stderr
        assert json.loads(ingested.stdout)["rows_written"] == 1
        missing = _strata(stack_env, "ingest", str(ndjson), "--index", "no-such-index")
        assert missing.returncode == 2 and "does not exist" in missing.stderr

        # The quickstart's data compacts: every window's splits merge into one (a final merge), through Spark.
        compacted = _strata(stack_env, "compact", "--index", "quickstart-metrics", "--final", "--wait", timeout=300)
        assert compacted.returncode == 0, compacted.stdout + compacted.stderr
        assert "merge operations (merging)" in compacted.stdout and "success" in compacted.stdout
        dry = _strata(stack_env, "compact", "--index", "quickstart-metrics", "--final", "--dry-run")
        assert dry.returncode == 0 and "0 merge operations" in dry.stdout, dry.stdout
        assert _strata(stack_env, "compact", "--index", "nope").returncode == 2

        # Every split the quickstart ingested or compacted ends up with a published artifact snapshot.
        indexer = httpx.Client(base_url=f"http://127.0.0.1:{stack_env['STRATA_INDEXER_PORT']}", timeout=60,
                               headers={"Authorization": f"Bearer {_key(keys, 'admin')}"})
        deadline = time.monotonic() + 240
        while True:
            lag = indexer.get("/v1/indexing/lag").json()["indexes"]
            if not [e for e in lag if e["index_id"] == "quickstart-metrics"]:
                break
            assert time.monotonic() < deadline, lag
            time.sleep(1)
        published = indexer.get("/v1/indexes/quickstart-metrics/splits",
                                params={"state": "published", "limit": 1000}).json()["splits"]
        assert published and any(s["num_merge_ops"] > 0 for s in published)
        for split in published:
            snapshot = indexer.get(f"/v1/splits/{split['split_id']}/artifacts").json()["snapshot"]
            assert snapshot["published"] and snapshot["artifact_count"] >= 4, (split, snapshot)

        demo = _strata(stack_env, "demo", "--windows", "2", "--rows-per-window", "20000", "--batches", "3",
                       timeout=600)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert demo.stdout.count("pruning: ") == 5 and "every published file has its artifacts" in demo.stdout

        proxy = f"http://127.0.0.1:{stack_env['STRATA_PROXY_PORT']}"
        assert httpx.get(f"{proxy}/v1/anything").status_code == 401
        query_key = _key(keys, "query")
        forwarded = httpx.get(f"{proxy}/v1/no-such-route", headers={"Authorization": f"Bearer {query_key}",
                                                                     "X-Request-ID": "req-123"})
        # query-api answered (its own problem+json 404), and the request id made the round trip.
        assert forwarded.status_code == 404
        assert forwarded.headers["content-type"] == "application/problem+json"
        assert forwarded.headers["x-request-id"] == "req-123"

        down = _strata(stack_env, "down")
        assert down.returncode == 0, down.stderr
        supervisor.wait(timeout=30)
        assert supervisor.returncode == 0
        assert "strata stopped." in log_path.read_text()
        deadline = time.monotonic() + 15
        while any(_alive(p) for p in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in children if _alive(p)]
    finally:
        if supervisor.poll() is None:
            os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
