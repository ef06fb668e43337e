"""The proxy in front of several replicas of each API: one health-checked round-robin pool per API, the rotation
rule (`proxy/upstreams.py`: ready in; draining or down out; unready out unless every replica is), and a request
that cannot reach its replica going to the next one. The replicas are small real HTTP servers answering /readyz as
the APIs do (a draining one with the product's own draining answer) and naming themselves on /v1 paths."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from strata_core.config import Settings
from strata_frame.web.health import DRAINING_PROBLEM_TYPE, Drain, draining_response
from strata_services.proxy.app import create_proxy_app
from strata_services.proxy.upstreams import ReplicaState, state_of_readiness
from tests.fixtures.http_server import serve_in_thread
from tests.helpers import assert_problem

pytestmark = pytest.mark.timeout(60)

KEY = "replicas-admin-key"
HEADERS = {"Authorization": f"Bearer {KEY}"}
# One path per API (proxy/routes.py): planner-api's, indexer-api's, query-api's.
PATHS = {"planner-api": "/v1/compaction/status", "indexer-api": "/v1/indexes/metrics",
         "query-api": "/v1/query"}


class Replica:
    """A replica of one API: answers every /v1 path with its own name, and /readyz as its state says."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.drain = Drain()
        self.dependency_error: str | None = None
        self.requests = 0
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        self.app = self._build()

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/healthz")
        async def healthz() -> dict[str, str]:
            return {"status": "ok"}

        @app.get("/readyz")
        async def readyz():
            if self.drain.draining:
                return draining_response(self.name, self.drain)
            if self.dependency_error is not None:
                return JSONResponse({"type": "https://strata.dev/problems/unavailable", "status": 503,
                                     "title": "Dependency unavailable", "detail": self.dependency_error},
                                    status_code=503, media_type="application/problem+json")
            return {"status": "ready"}

        @app.api_route("/v1/{path:path}", methods=["GET", "POST"])
        async def answer(request: Request):
            body = await request.body()
            with self._lock:
                self.requests += 1
                self.bodies.append(body)
            if self.dependency_error is not None:
                return JSONResponse({"type": "https://strata.dev/problems/unavailable", "status": 503,
                                     "title": "Dependency unavailable", "detail": self.dependency_error},
                                    status_code=503, media_type="application/problem+json")
            return {"replica": self.name}

        return app


class Fleet:
    """Replicas of each API and a proxy in front of them all; every server is stopped after the test, pass or
    fail."""

    def __init__(self, stack: ExitStack, replicas: int, interval: float) -> None:
        self.pools = {api: [Replica(f"{api}-{i + 1}") for i in range(replicas)] for api in PATHS}
        self._servers: dict[str, ExitStack] = {}
        urls = {api: [self._serve(stack, r) for r in members] for api, members in self.pools.items()}
        settings = Settings(api_keys=json.dumps({KEY: {"scopes": ["admin"]}}), proxy_rate_per_sec=1000.0,
                            proxy_burst=1000, proxy_max_concurrent_per_tenant=100, proxy_health_interval_secs=interval,
                            planner_upstreams=",".join(urls["planner-api"]),
                            indexer_upstreams=",".join(urls["indexer-api"]),
                            query_upstreams=",".join(urls["query-api"]))
        self.proxy = stack.enter_context(serve_in_thread(create_proxy_app(settings)))

    def _serve(self, stack: ExitStack, replica: Replica) -> str:
        server = self._servers[replica.name] = ExitStack()
        stack.callback(server.close)
        return server.enter_context(serve_in_thread(replica.app))

    def stop(self, replica: Replica) -> None:
        """The replica's process is gone: its port refuses connections (the proxy has not noticed yet)."""
        self._servers[replica.name].close()


@pytest.fixture
def fleet() -> Iterator[Callable[..., Fleet]]:
    with ExitStack() as stack:
        yield lambda replicas=2, interval=0.2: Fleet(stack, replicas, interval)


def call(proxy: str, api: str, **kwargs) -> httpx.Response:
    method = "POST" if api == "query-api" else "GET"
    return httpx.request(method, proxy + PATHS[api], headers=HEADERS, timeout=10, **kwargs)


def served_by(proxy: str, api: str, count: int) -> list[str]:
    answers = [call(proxy, api) for _ in range(count)]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    return [a.json()["replica"] for a in answers]


def replica_states(proxy: str) -> dict[str, dict[str, str]]:
    return httpx.get(proxy + "/readyz", timeout=10).json().get("upstreams", {})


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.05)


@pytest.mark.parametrize(("status", "body", "state"), [
    (200, b'{"status": "ready"}', ReplicaState.READY),
    (503, json.dumps({"type": DRAINING_PROBLEM_TYPE, "status": 503}).encode(), ReplicaState.DRAINING),
    (503, b'{"type": "https://strata.dev/problems/unavailable", "status": 503}', ReplicaState.UNREADY),
    (503, b"not json", ReplicaState.UNREADY),
    (404, b"{}", ReplicaState.DOWN),
    (500, b"{}", ReplicaState.DOWN),
])
def test_a_replicas_state_is_read_from_its_readiness_answer(status: int, body: bytes, state: ReplicaState) -> None:
    assert state_of_readiness(status, body) is state


def test_each_apis_requests_spread_over_its_replicas_in_turn(fleet) -> None:
    running = fleet()
    for api, members in running.pools.items():
        served = served_by(running.proxy, api, 6)
        assert sorted(set(served)) == [m.name for m in members], served
        # Round-robin: consecutive requests alternate.
        assert all(a != b for a, b in zip(served, served[1:], strict=False)), served
    states = replica_states(running.proxy)
    assert sorted(states) == sorted(PATHS)
    assert all(list(replicas.values()) == ["ready", "ready"] for replicas in states.values()), states


def test_a_draining_replica_leaves_rotation_and_a_new_process_comes_back_in(fleet) -> None:
    running = fleet()
    first, second = running.pools["query-api"]
    first.drain.begin()
    wait_for(lambda: "draining" in replica_states(running.proxy)["query-api"].values())
    assert set(served_by(running.proxy, "query-api", 6)) == {second.name}
    # Only query-api's pool changed.
    assert set(served_by(running.proxy, "indexer-api", 4)) == {m.name for m in running.pools["indexer-api"]}
    first.drain = Drain()
    wait_for(lambda: set(replica_states(running.proxy)["query-api"].values()) == {"ready"})
    assert set(served_by(running.proxy, "query-api", 4)) == {first.name, second.name}


def test_a_dependency_failure_of_one_replica_takes_it_out_of_rotation(fleet) -> None:
    running = fleet()
    first, second = running.pools["planner-api"]
    first.dependency_error = "postgresql unreachable: connection refused"
    wait_for(lambda: "unready" in replica_states(running.proxy)["planner-api"].values())
    assert set(served_by(running.proxy, "planner-api", 6)) == {second.name}


def test_a_dependency_failure_of_every_replica_keeps_them_in_and_the_caller_gets_the_apis_503(fleet) -> None:
    running = fleet()
    for replica in running.pools["query-api"]:
        replica.dependency_error = "spark connect unreachable: connection refused"
    wait_for(lambda: set(replica_states(running.proxy)["query-api"].values()) == {"unready"})
    answers = [call(running.proxy, "query-api") for _ in range(4)]
    # The API's own answer, naming the cause, not the proxy's "no replica".
    assert [a.json()["detail"] for a in answers] == ["spark connect unreachable: connection refused"] * 4
    assert [r.requests for r in running.pools["query-api"]] == [2, 2]
    # The proxy stays ready (every API has replicas in rotation) and shows them unready.
    ready = httpx.get(running.proxy + "/readyz", timeout=10)
    assert ready.status_code == 200 and set(ready.json()["upstreams"]["query-api"].values()) == {"unready"}


def test_every_replica_draining_makes_the_api_unavailable_through_the_proxy(fleet) -> None:
    running = fleet()
    for replica in running.pools["indexer-api"]:
        replica.drain.begin()
    wait_for(lambda: set(replica_states(running.proxy)["indexer-api"].values()) == {"draining"})
    problem = assert_problem(call(running.proxy, "indexer-api"), 503, "unavailable")
    assert "no indexer-api replica in rotation" in problem["detail"]
    readiness = assert_problem(httpx.get(running.proxy + "/readyz", timeout=10), 503, "unavailable")
    assert "indexer-api" in readiness["detail"] and "draining" in readiness["detail"]
    assert [r.requests for r in running.pools["indexer-api"]] == [0, 0]


@pytest.mark.parametrize("api", list(PATHS))
def test_a_replica_gone_since_its_last_check_is_passed_over_without_an_error(fleet, api: str) -> None:
    # A long interval: the proxy saw both replicas ready once, and does not check again during the test.
    running = fleet(interval=60.0)
    gone, live = running.pools[api]
    running.stop(gone)
    body = b'{"sql": "SELECT 1"}'
    # Round-robin would send every other request to the gone replica: each goes on to the live one, a POST's
    # body whole, since nothing was sent to the gone one.
    answers = [call(running.proxy, api, content=body) for _ in range(4)]
    assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers]
    assert {a.json()["replica"] for a in answers} == {live.name}
    if api == "query-api":
        assert live.bodies == [body] * 4


def test_an_ingest_too_large_to_hold_goes_to_the_next_replica_when_the_first_is_gone(fleet) -> None:
    running = fleet(interval=60.0)
    gone, live = running.pools["indexer-api"]
    running.stop(gone)
    # Over the proxy's 256 KiB, so streamed through: still unread when the gone replica refused the connection.
    body = bytes(range(256)) * 2048
    answers = [httpx.post(running.proxy + "/v1/indexes/metrics/ingest", content=iter([body]), headers=HEADERS,
                          timeout=10) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert live.bodies == [body, body]


def test_with_every_replica_gone_the_answer_is_503_naming_those_tried(fleet) -> None:
    running = fleet(interval=60.0)
    for replica in running.pools["planner-api"]:
        running.stop(replica)
    problem = assert_problem(call(running.proxy, "planner-api"), 503, "unavailable")
    assert "no planner-api replica in rotation" in problem["detail"]
    assert problem["detail"].count("http://127.0.0.1:") == 2
    assert set(replica_states(running.proxy)["planner-api"].values()) == {"down"}
