"""`strata up` as a user runs it: a supervisor process with the three APIs and the proxy as children, on the
session's PostgreSQL and Spark Connect server (so the test adds no second JVM). Then status, the quickstart
data, ingest through the CLI, the proxy over real HTTP, and `strata down` leaving no process behind."""

from __future__ import annotations

import json
import os
import signal
import socket
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
           "STRATA_FLIGHT_PORT": str(_port_with_replica_port()),
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
        assert f"grpc://127.0.0.1:{stack_env['STRATA_FLIGHT_PORT']}" in status.stdout and " listening" in status.stdout

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
        # Again, as a user re-runs it: the previous demo index is deleted (a 204) and made anew.
        again = _strata(stack_env, "demo", "--windows", "1", "--rows-per-window", "5000", "--batches", "2",
                        timeout=600)
        assert again.returncode == 0 and again.stdout.count("pruning: ") == 5, again.stdout + again.stderr

        _demo_over_flight_sql(stack_env, keys)

        _operator_commands(stack_env, tmp_path)

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
        gone = _strata(stack_env, "indexes")
        assert gone.returncode == 2 and "cannot reach the stack" in gone.stderr and "strata up" in gone.stderr
        assert "Traceback" not in gone.stderr
    finally:
        if supervisor.poll() is None:
            os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _operator_commands(env: dict[str, str], tmp_path: Path) -> None:
    """The operator's CLI over the running stack: listings, queries and plans in every format, errors as one
    line, and a standalone indexing worker that starts, polls and stops on SIGTERM."""
    index = "quickstart-metrics"
    listed = _strata(env, "indexes")
    assert listed.returncode == 0 and index in listed.stdout and "INDEX_ID" in listed.stdout, listed.stderr
    one = json.loads(_strata(env, "indexes", index, "--format", "json").stdout)
    assert one["index_id"] == index and one["config"]["timestamp_field"] == "timestamp_secs"

    windows = _strata(env, "windows", index, "--format", "ndjson")
    assert windows.returncode == 0, windows.stderr
    assert sum(json.loads(line)["rows"] for line in windows.stdout.splitlines()) >= 300_000
    table = _strata(env, "windows", index)
    assert table.stdout.startswith("WINDOW") and "L" in table.stdout

    done = json.loads(_strata(env, "jobs", "--index", index, "--status", "success", "--format", "json").stdout)
    assert done and {job["status"] for job in done} == {"success"}
    indexing = _strata(env, "jobs", "--queue", "indexing", "--index", index, "--format", "ndjson")
    assert indexing.returncode == 0 and indexing.stdout.count("\n") >= 1, indexing.stderr
    # --watch ends by itself once no listed job is live: everything listed here has finished.
    watched = _strata(env, "jobs", "--index", index, "--status", "success", "--watch", "--interval", "0.2",
                      timeout=60)
    assert watched.returncode == 0 and "0 live" in watched.stdout, watched.stdout + watched.stderr

    sql = f'SELECT service, count(*) AS n FROM "{index}" GROUP BY service ORDER BY service'
    shown = _strata(env, "query", sql)
    assert shown.returncode == 0 and shown.stdout.startswith("SERVICE"), shown.stderr
    assert "rows;" in shown.stderr and "engine" in shown.stderr
    # Run again, the answer is the result kept from a run over the same files (the indexing worker may still be
    # publishing artifacts, each a change that makes the next run fresh); --no-cache always runs it.
    for _ in range(10):
        again = _strata(env, "query", sql)
        if "the result kept from an earlier" in again.stderr:
            break
        time.sleep(0.5)
    assert "the result kept from an earlier" in again.stderr and again.stdout == shown.stdout, again.stderr
    fresh = _strata(env, "query", sql, "--no-cache")
    assert "engine:" in fresh.stderr and "kept" not in fresh.stderr and fresh.stdout == shown.stdout, fresh.stderr
    as_json = json.loads(_strata(env, "query", sql, "--format", "json").stdout)
    rows = as_json["rows"]
    lines = [json.loads(line) for line in _strata(env, "query", sql, "--format", "ndjson").stdout.splitlines()]
    assert lines == rows and sum(r["n"] for r in rows) >= 300_000
    arrow_file = tmp_path / "result.arrows"
    assert _strata(env, "query", sql, "--format", "arrow", "--output", str(arrow_file)).returncode == 0
    import pyarrow.ipc as ipc

    assert ipc.open_stream(arrow_file.read_bytes()).read_all().to_pylist() == rows
    capped = json.loads(_strata(env, "query", sql, "--format", "json", "--max-rows", "1").stdout)
    assert len(capped["rows"]) == 1 and capped["summary"]["truncated"]

    plan = _strata(env, "explain", f"SELECT value FROM \"{index}\" WHERE host = 'host-0001'")
    assert plan.returncode == 0 and "time range on timestamp_secs" in plan.stdout and "STAGE" in plan.stdout, \
        plan.stdout + plan.stderr
    bad = _strata(env, "query", f'SELEKT * FROM "{index}"')
    assert bad.returncode == 2 and bad.stderr.startswith("strata: query failed: 400") and "Traceback" not in bad.stderr
    refused = _strata({**env, "STRATA_API_KEY": "not-a-key"}, "windows", index)
    assert refused.returncode == 2 and "401" in refused.stderr and len(refused.stderr.splitlines()) == 1

    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        worker = subprocess.Popen([sys.executable, "-m", "strata_services.cli", "worker", "--kind", "indexing",
                                   "--slots", "1"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "indexing worker" not in log.read_text():
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert "polling http://127.0.0.1:" in log.read_text()
        time.sleep(1.0)  # at least one poll: a refused key or a wrong URL would end the worker with an error
        assert worker.poll() is None, log.read_text()
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, log.read_text()
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def _demo_over_flight_sql(env: dict[str, str], keys: dict) -> None:
    """As the issue's user would: ADBC's Flight SQL driver on the stack's Flight port lists the query key's
    indexes and answers the demo's queries as the proxy's HTTP API does."""
    import adbc_driver_flightsql.dbapi as flight_sql
    import pyarrow as pa

    from strata_services.demo import demo_queries

    key = _key(keys, "query")
    with flight_sql.connect(f"grpc://127.0.0.1:{env['STRATA_FLIGHT_PORT']}", autocommit=True,
                            db_kwargs={"adbc.flight.sql.authorization_header": f"Bearer {key}"}) as connection:
        objects = connection.adbc_get_objects(depth="tables").read_all().to_pylist()
        tables = {t["table_name"] for c in objects for s in c["catalog_db_schemas"] or []
                  for t in s["db_schema_tables"] or []}
        assert {"demo-metrics", "quickstart-metrics"} <= tables, objects
        proxy = httpx.Client(base_url=f"http://127.0.0.1:{env['STRATA_PROXY_PORT']}", timeout=60,
                             headers={"Authorization": f"Bearer {key}",
                                      "Accept": "application/vnd.apache.arrow.stream"})
        for title, sql in demo_queries(int(time.time())):
            with connection.cursor() as cursor:
                cursor.execute(sql)
                over_flight = cursor.fetch_arrow_table()
            response = proxy.post("/v1/query", json={"sql": sql})
            assert response.status_code == 200, response.text
            over_http = pa.ipc.open_stream(response.content).read_all()
            assert over_flight.to_pylist() == over_http.to_pylist(), title


def _port_with_replica_port() -> int:
    """A free port whose second replica's port (+ 10, local/stack.py) is free too."""
    while True:
        port = free_port()
        try:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port + 10))
        except OSError:
            continue
        return port
