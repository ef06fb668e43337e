"""The supervisor of `strata up --replicas 2` keeps its replicas running, and `strata restart` restarts them one at
a time, while queries and an ingest loop run through the proxy: a query-api replica killed with SIGKILL comes back
as a new process (`strata status` shows the restart), then `strata restart query-api` drains and restarts both
replicas in turn. No caller sees anything but a 200, and every row ingested meanwhile is counted once.

Before the load, the same stack's layout is checked: two replicas of each API and the proxy run as the
supervisor's children, each replica on its port (the second at +10), both in `strata status`, and the proxy fronts
them all except where the user gave their own list of upstreams (here planner-api's first replica alone), which it
keeps. One `strata up --replicas 2` serves both checks: bringing up seven API processes is among the suite's
costliest steps.

The stack runs on the session's PostgreSQL and Spark Connect server, as `test_local_stack` runs it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from strata_services.client import arrow_ipc
from strata_services.sample_data import metrics_index_config, metrics_rows
from tests.e2e.fleet import Outcomes, upstream_states, wait_for
from tests.e2e.test_local_stack import (
    _alive,
    _children,
    _key,
    _port_with_replica_port,
    _strata,
    stack_env,  # noqa: F401 - the fixture, reused
)

pytestmark = pytest.mark.timeout(600)

INDEX = "restart-metrics"
BATCH_ROWS = 200


def _refuses(url: str) -> bool:
    """Whether nothing listens at `url` any more: a connection to it is refused."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    return False


def _processes(home: Path) -> dict[str, dict]:
    return {p["label"]: p for p in json.loads((home / "stack.json").read_text())["processes"]}


def _check_the_layout(env: dict[str, str], home: Path, children: set[int], own_planner: str) -> None:
    assert len(children) == 7, "two replicas of each API and the proxy run as children of the supervisor"
    processes = _processes(home)
    assert sorted(processes) == ["indexer-api", "indexer-api-2", "planner-api", "planner-api-2", "proxy",
                                 "query-api", "query-api-2"]
    assert {p["pid"] for p in processes.values()} == children
    for api in ("planner", "indexer", "query"):
        port = int(env[f"STRATA_{api.upper()}_PORT"])
        assert processes[f"{api}-api"]["url"] == f"http://127.0.0.1:{port}"
        assert processes[f"{api}-api-2"]["url"] == f"http://127.0.0.1:{port + 10}"
        assert (home / "logs" / f"{api}-api-2.log").exists()
    flight_port = int(env["STRATA_FLIGHT_PORT"])
    assert processes["query-api"]["flight_url"] == f"grpc://127.0.0.1:{flight_port}"
    assert processes["query-api-2"]["flight_url"] == f"grpc://127.0.0.1:{flight_port + 10}"

    status = _strata(env, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.count(" ready ") == 7, status.stdout
    assert status.stdout.count(" listening") == 2, status.stdout
    assert "query-api-2" in status.stdout

    proxy = f"http://127.0.0.1:{env['STRATA_PROXY_PORT']}"
    wait_for(lambda: all(set(pool.values()) == {"ready"} for pool in upstream_states(proxy).values()),
             "every replica ready in the proxy", 120)
    pools = upstream_states(proxy)
    for api in ("indexer-api", "query-api"):
        assert pools[api] == {processes[api]["url"]: "ready", processes[f"{api}-2"]["url"]: "ready"}, pools
    assert pools["planner-api"] == {own_planner: "ready"}, pools


def test_the_supervisor_restarts_a_killed_replica_and_strata_restart_rolls_without_a_failed_request(
        stack_env, tmp_path):  # noqa: F811 - the fixture imported above
    env = {**stack_env, **{f"STRATA_{api}_PORT": str(_port_with_replica_port()) for api in ("PLANNER", "INDEXER",
                                                                                           "QUERY")},
           # The proxy notices a draining replica within the drain grace, as in production (2 s within 3 s), faster.
           "STRATA_PROXY_HEALTH_INTERVAL_SECS": "0.5", "STRATA_DRAIN_GRACE_SECS": "1.5"}
    # The user's own list of planner-api upstreams (here: the first replica alone) is what the proxy uses.
    own_planner = f"http://127.0.0.1:{env['STRATA_PLANNER_PORT']}"
    env["STRATA_PLANNER_UPSTREAMS"] = own_planner
    home = Path(env["STRATA_HOME"])
    log_path = tmp_path / "up.log"
    with open(log_path, "w") as log:
        supervisor = subprocess.Popen([sys.executable, "-m", "strata_services.cli", "up", "--replicas", "2"],
                                      env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    children: set[int] = set()
    stop_load = threading.Event()
    loaders: list[threading.Thread] = []
    try:
        wait_for(lambda: supervisor.poll() is not None or "Ctrl-C stops everything" in log_path.read_text(),
                 "the stack up", 240, interval=0.5)
        assert supervisor.poll() is None, log_path.read_text()
        children.update(_children(supervisor.pid))
        _check_the_layout(env, home, children, own_planner)
        keys = json.loads((home / "api-keys.json").read_text())
        proxy = f"http://127.0.0.1:{env['STRATA_PROXY_PORT']}"
        client = httpx.Client(base_url=proxy, headers={"Authorization": f"Bearer {_key(keys, 'admin')}"},
                              timeout=120)
        wait_for(lambda: all(set(pool.values()) == {"ready"} for pool in upstream_states(proxy).values()),
                 "every replica ready in the proxy", 120)
        created = client.post("/v1/indexes", json=metrics_index_config(INDEX))
        assert created.status_code == 201, created.text

        outcomes = Outcomes()
        written: list[int] = []
        now = int(time.time())

        def ingest_loop() -> None:
            with httpx.Client(base_url=proxy, headers=client.headers, timeout=120) as own:
                seed = 0
                while not stop_load.is_set():
                    seed += 1
                    body = arrow_ipc(metrics_rows(BATCH_ROWS, start=now - 1800, span_secs=1800, seed=seed))
                    response = outcomes.call(own, "POST", f"/v1/indexes/{INDEX}/ingest", content=body,
                                             headers={"Content-Type": "application/vnd.apache.arrow.stream"})
                    if response is not None and response.status_code == 200:
                        written.append(response.json()["rows_written"])
                    time.sleep(0.2)

        # Held by each query while it is in flight, and by the crash below: a SIGKILL loses the request the replica
        # was answering (the proxy never sends one that may have reached a replica to another), which no
        # supervisor can save; what is checked is that every request after the crash is answered.
        query_in_flight = threading.Lock()

        def query_loop() -> None:
            with httpx.Client(base_url=proxy, headers=client.headers, timeout=120) as own:
                while not stop_load.is_set():
                    with query_in_flight:
                        outcomes.call(own, "POST", "/v1/query",
                                      json={"sql": f'SELECT count(*) AS n FROM "{INDEX}"'})
                    # Paced under the proxy's per-tenant rate (50/s): a kept result answers in a few ms, and a
                    # 429 here would be the limit working, not a restart losing a request.
                    time.sleep(0.05)

        loaders = [threading.Thread(target=ingest_loop), threading.Thread(target=query_loop)]
        for thread in loaders:
            thread.start()
        wait_for(lambda: len(written) >= 2, "ingests through the proxy", 60)

        # A crash: the supervisor starts the replica again, and says so.
        killed = _processes(home)["query-api-2"]
        with query_in_flight:
            os.kill(killed["pid"], signal.SIGKILL)
            # Gone, its sockets closed, before the next query: one sent meanwhile could still reach it. Not only
            # "a zombie": the main thread of a killed process is one while its other threads still tear down, and
            # the listener stays open until the last of them ends; a connection it takes then is reset.
            wait_for(lambda: not _alive(killed["pid"]) and _refuses(killed["url"]), "query-api-2 gone", 10,
                     interval=0.01)
        wait_for(lambda: (p := _processes(home)["query-api-2"])["restarts"] == 1 and p["phase"] == "running",
                 "query-api-2 started again", 60, interval=0.2)
        back = _processes(home)["query-api-2"]
        assert back["pid"] != killed["pid"] and back["last_exit"]["reason"] == "killed by SIGKILL", back
        children.add(back["pid"])
        wait_for(lambda: upstream_states(proxy)["query-api"][back["url"]] == "ready", "query-api-2 in rotation",
                 120, interval=0.2)
        status = _strata(env, "status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert (f"pid {back['pid']}, up " in status.stdout and "restarts=1 (1 unexpected exit), last exit: killed "
                "by SIGKILL" in status.stdout), status.stdout
        assert "s] query-api-2 killed by SIGKILL unexpectedly; starting it again in 1s\n" in log_path.read_text()

        # A rolling restart of both query-api replicas, one at a time.
        before = _processes(home)
        rolled = _strata(env, "restart", "query-api", timeout=400)
        assert rolled.returncode == 0, rolled.stdout + rolled.stderr
        after = _processes(home)
        children.update(after[label]["pid"] for label in ("query-api", "query-api-2"))
        lines = rolled.stdout.splitlines()
        assert lines[0].startswith("restarting query-api (pid ") and "restarting query-api-2 (pid " in lines[2], lines
        assert "in the proxy's rotation" in lines[1] and lines[-1] == "restarted 2 processes, one at a time", lines
        for label in ("query-api", "query-api-2"):
            assert after[label]["pid"] != before[label]["pid"]
            assert after[label]["restarts"] == before[label]["restarts"] + 1
            assert after[label]["last_exit"]["requested"], after[label]
        assert after["query-api-2"]["unexpected_exits"] == 1 and after["query-api"]["unexpected_exits"] == 0
        # The other APIs were left alone.
        assert {label: p["pid"] for label, p in after.items() if not label.startswith("query-api")} == \
            {label: p["pid"] for label, p in before.items() if not label.startswith("query-api")}
        time.sleep(1.0)  # a little load on the restarted replicas too
        stop_load.set()
        for thread in loaders:
            thread.join(timeout=120)

        assert not outcomes.unexpected, outcomes.unexpected
        assert len(outcomes.statuses) > 20 and set(outcomes.statuses) == {200}, outcomes.statuses
        counted = client.post("/v1/query", json={"sql": f'SELECT count(*) AS n FROM "{INDEX}"'},
                              headers={"Cache-Control": "no-store"})
        assert counted.status_code == 200, counted.text
        assert counted.json()["rows"] == [{"n": sum(written)}] and len(written) >= 5, (counted.text, written)

        assert _strata(env, "restart", "query-api", "--replica", "3").returncode == 2
        down = _strata(env, "down")
        assert down.returncode == 0 and "(7 processes)" in down.stdout, down.stdout + down.stderr
        supervisor.wait(timeout=60)
        assert not [pid for pid in children if _alive(pid)]
    finally:
        stop_load.set()
        for thread in loaders:
            thread.join(timeout=120)
        if supervisor.poll() is None:
            os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()
        # Children restarted by the supervisor are in the state file (and die with it, PR_SET_PDEATHSIG); any
        # still alive are killed here all the same.
        for pid in children:
            if _alive(pid):
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
