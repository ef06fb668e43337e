"""The proxy's per-tenant limits: the token bucket and concurrency cap on their own, then the proxy over real HTTP
in front of a real upstream server that stands in for query-api's HTTP surface (health, a quick endpoint, and a
stream the test holds open), so streaming and client disconnects happen on real sockets."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from prometheus_client.parser import text_string_to_metric_families

from strata_core.config import Settings
from strata_services.proxy.app import create_proxy_app
from strata_services.proxy.pacing import RejectionPacer
from tests.fixtures.http_server import serve_in_thread
from tests.helpers import assert_problem

pytestmark = pytest.mark.timeout(60)

ACME, GLOBEX, ADMIN = "proxy-acme-key", "proxy-globex-key", "proxy-admin-key"
KEYS_JSON = json.dumps({
    ACME: {"scopes": ["query"], "tenant": "acme"},
    GLOBEX: {"scopes": ["query"], "tenant": "globex"},
    ADMIN: {"scopes": ["admin"]},
})
# Loose enough that only the limit a test is about can refuse a request.
UNLIMITED = {"proxy_rate_per_sec": 1000.0, "proxy_burst": 1000, "proxy_max_concurrent_per_tenant": 100,
             "proxy_reject_delay_secs": 0.0}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- the pacer on its own ---------------------------------------------------------------------------------------


def test_pacer_holds_each_refusal_up_to_its_bound_then_answers_at_once() -> None:
    sleeping: list[asyncio.Future[None]] = []

    async def sleep(_secs: float) -> None:
        future = asyncio.get_running_loop().create_future()
        sleeping.append(future)
        await future

    async def scenario() -> None:
        pacer = RejectionPacer(2.5, max_held=2, sleep=sleep)
        first, second = asyncio.create_task(pacer.hold()), asyncio.create_task(pacer.hold())
        await asyncio.sleep(0)
        assert pacer.held == 2 and len(sleeping) == 2
        assert await pacer.hold() == 0.0  # over the bound: not held
        for future in sleeping:
            future.set_result(None)
        assert await first == 2.5 and await second == 2.5
        assert pacer.held == 0
        # A held request whose client went away (its task cancelled) gives its place back.
        third = asyncio.create_task(pacer.hold())
        await asyncio.sleep(0)
        assert pacer.held == 1
        third.cancel()
        with pytest.raises(asyncio.CancelledError):
            await third
        assert pacer.held == 0

    asyncio.run(scenario())
    assert asyncio.run(RejectionPacer(0.0, 10, sleep).hold()) == 0.0


def test_pacer_refuses_a_negative_delay() -> None:
    with pytest.raises(ValueError):
        RejectionPacer(-1.0, 10, asyncio.sleep)


# --- the proxy over HTTP ---------------------------------------------------------------------------------------


class FakeQueryApi:
    """A real HTTP upstream. `/v1/hold/{name}` sends a first chunk at once and its last only when the test
    releases `name`, so the test decides how long each streaming request runs."""

    def __init__(self) -> None:
        self.url = ""
        self._lock = threading.Lock()
        self._gates: dict[str, threading.Event] = {}
        self.open: set[str] = set()
        self.closed_early: set[str] = set()
        self.app = self._build()

    def gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def release(self, name: str) -> None:
        self.gate(name).set()

    def release_all(self) -> None:
        with self._lock:
            for gate in self._gates.values():
                gate.set()

    def wait_closed_early(self, name: str, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if name in self.closed_early:
                return True
            time.sleep(0.02)
        return False

    def _build(self) -> FastAPI:
        app = FastAPI()

        # The proxy asks /readyz of its upstreams.
        @app.get("/healthz")
        @app.get("/readyz")
        async def healthz() -> dict[str, str]:
            return {"status": "ok"}

        @app.get("/v1/echo")
        async def echo(request: Request) -> dict[str, str | None]:
            return {"request_id": request.headers.get("x-request-id")}

        @app.post("/v1/echo-body")
        async def echo_body(request: Request) -> dict[str, str | int | None]:
            body = await request.body()
            return {"bytes": len(body), "content_length": request.headers.get("content-length"),
                    "transfer_encoding": request.headers.get("transfer-encoding")}

        @app.get("/v1/hold/{name}")
        async def hold(name: str) -> StreamingResponse:
            gate = self.gate(name)

            async def body() -> AsyncIterator[bytes]:
                self.open.add(name)
                finished = False
                try:
                    yield b"first\n"
                    while not gate.is_set():
                        await asyncio.sleep(0.01)
                    yield b"last\n"
                    finished = True
                finally:
                    self.open.discard(name)
                    if not finished:
                        self.closed_early.add(name)

            return StreamingResponse(body(), media_type="text/plain")

        return app


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeQueryApi]:
    fake = FakeQueryApi()
    with serve_in_thread(fake.app) as url:
        fake.url = url
        try:
            yield fake
        finally:
            # uvicorn waits for open responses on shutdown; no held stream may outlive the module.
            fake.release_all()


@pytest.fixture
def proxy(upstream: FakeQueryApi) -> Iterator[Callable[..., str]]:
    """Starts proxies with the given limits in front of the fake upstream (or `upstreams=`); all are stopped
    after the test, pass or fail."""
    stack = ExitStack()

    def start(upstreams: list[str] | None = None, **limits: float) -> str:
        settings = Settings(api_keys=KEYS_JSON, query_upstreams=",".join(upstreams or [upstream.url]),
                            **{**UNLIMITED, **limits})
        app = create_proxy_app(settings)
        return stack.enter_context(serve_in_thread(app))

    try:
        yield start
    finally:
        upstream.release_all()
        stack.close()


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0) as c:
        yield c


def hold_name() -> str:
    return uuid.uuid4().hex


def first_chunk(response: httpx.Response) -> Iterator[bytes]:
    """Reads the first chunk and returns the live iterator: the caller keeps it, since a discarded raw iterator
    closes the connection, and that is a client disconnect."""
    chunks = response.iter_raw()
    assert next(chunks).startswith(b"first")
    return chunks


def eventually_admitted(client: httpx.Client, url: str, key: str, timeout: float = 5.0) -> httpx.Response:
    """The slot comes back just after the response's last byte leaves the proxy, so a request sent the moment
    the client has read it may still find the cap full; it must pass shortly after."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(url, headers=auth(key))
        if response.status_code != 429 or time.monotonic() > deadline:
            return response
        time.sleep(0.02)


def rejections(client: httpx.Client, url: str) -> dict[tuple[str, str], float]:
    """The proxy's 429 counter by (reason, tenant), read from its /metrics."""
    text = client.get(f"{url}/metrics").text
    return {(s.labels["reason"], s.labels["tenant"]): s.value
            for family in text_string_to_metric_families(text) if family.name == "strata_proxy_rejections"
            for s in family.samples if s.name == "strata_proxy_rejections_total"}


def held_rejections(client: httpx.Client, url: str) -> float:
    text = client.get(f"{url}/metrics").text
    return next(s.value for family in text_string_to_metric_families(text)
                if family.name == "strata_proxy_rejections_held" for s in family.samples)


def test_no_key_is_refused_before_any_limit(proxy, client: httpx.Client) -> None:
    url = proxy(proxy_rate_per_sec=0.01, proxy_burst=1)
    for _ in range(3):
        missing = client.get(f"{url}/v1/echo")
        assert_problem(missing, 401, "unauthorized")
        assert missing.headers["www-authenticate"] == "Bearer"
    assert_problem(client.get(f"{url}/v1/echo", headers=auth("no-such-key")), 401, "unauthorized")
    # Refused callers took nothing from anyone's budget.
    assert client.get(f"{url}/v1/echo", headers=auth(ACME)).status_code == 200


def test_rate_limit_answers_429_with_retry_after_and_spares_other_tenants(proxy, client: httpx.Client) -> None:
    url = proxy(proxy_rate_per_sec=0.5, proxy_burst=2)
    assert [client.get(f"{url}/v1/echo", headers=auth(ACME)).status_code for _ in range(2)] == [200, 200]

    refused = client.get(f"{url}/v1/echo", headers={**auth(ACME), "X-Request-ID": "req-limited"})
    body = assert_problem(refused, 429, "rate-limited")
    # The next token is just under 2 s away at 0.5/s; whole seconds, rounded up.
    assert refused.headers["retry-after"] == "2"
    assert "'acme'" in body["detail"] and "0.5 requests/s" in body["detail"] and "burst 2" in body["detail"]
    assert refused.headers["x-request-id"] == "req-limited"

    assert client.get(f"{url}/v1/echo", headers=auth(GLOBEX)).status_code == 200
    assert client.get(f"{url}/v1/echo", headers=auth(ADMIN)).status_code == 200

    assert rejections(client, url) == {("rate", "acme"): 1.0}


def test_a_refusal_is_held_while_other_tenants_are_answered(proxy, client: httpx.Client) -> None:
    url = proxy(proxy_rate_per_sec=0.5, proxy_burst=1, proxy_reject_delay_secs=1.5)
    assert client.get(f"{url}/v1/echo", headers=auth(ACME)).status_code == 200
    outcome: dict[str, object] = {}

    def refused_request() -> None:
        started = time.monotonic()
        with httpx.Client(timeout=10.0) as own:
            outcome["response"] = own.get(f"{url}/v1/echo", headers=auth(ACME))
        outcome["elapsed"] = time.monotonic() - started

    thread = threading.Thread(target=refused_request)
    thread.start()
    try:
        deadline = time.monotonic() + 5.0
        while held_rejections(client, url) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert held_rejections(client, url) == 1
        # Another tenant is answered while acme's refusal is held.
        assert client.get(f"{url}/v1/echo", headers=auth(GLOBEX)).status_code == 200
    finally:
        thread.join(10.0)
    refused = outcome["response"]
    assert isinstance(refused, httpx.Response)
    body = assert_problem(refused, 429, "rate-limited")
    assert outcome["elapsed"] >= 1.5
    # The token was just under 2 s away when refused; 1.5 s of it went by in the hold.
    assert refused.headers["retry-after"] == "1"
    assert "retry in 0." in body["detail"]
    assert held_rejections(client, url) == 0


def test_concurrency_cap_counts_streams_until_they_finish(proxy, client: httpx.Client,
                                                          upstream: FakeQueryApi) -> None:
    url = proxy(proxy_max_concurrent_per_tenant=2)
    first, second = hold_name(), hold_name()
    with ExitStack() as streams:
        held = {}
        for name in (first, second):
            response = streams.enter_context(client.stream("GET", f"{url}/v1/hold/{name}", headers=auth(ACME)))
            assert response.status_code == 200
            held[name] = first_chunk(response)

        refused = client.get(f"{url}/v1/echo", headers=auth(ACME))
        body = assert_problem(refused, 429, "rate-limited")
        assert refused.headers["retry-after"] == "1"
        assert "'acme'" in body["detail"] and "2 requests running" in body["detail"]
        # Another tenant's cap is its own.
        assert client.get(f"{url}/v1/echo", headers=auth(GLOBEX)).status_code == 200

        upstream.release(first)
        assert b"".join(held[first]).endswith(b"last\n")
        assert eventually_admitted(client, f"{url}/v1/echo", ACME).status_code == 200
        # `second` still runs and still counts: two more would be one too many. (The echo's own slot comes back
        # just after its last byte, so the third stream may need a moment to be admitted, as above.)
        deadline = time.monotonic() + 5.0
        while True:
            third = streams.enter_context(client.stream("GET", f"{url}/v1/hold/{hold_name()}", headers=auth(ACME)))
            if third.status_code != 429 or time.monotonic() > deadline:
                break
            third.close()
            time.sleep(0.02)
        assert third.status_code == 200
        _open = first_chunk(third)
        assert client.get(f"{url}/v1/echo", headers=auth(ACME)).status_code == 429
        assert second in upstream.open

    # Two refusals above, and maybe a retry of `eventually_admitted`.
    counted = rejections(client, url)
    assert set(counted) == {("concurrency", "acme")} and counted["concurrency", "acme"] >= 2


def test_client_disconnect_mid_stream_frees_the_slot_and_closes_upstream(proxy, upstream: FakeQueryApi) -> None:
    url = proxy(proxy_max_concurrent_per_tenant=1)
    name = hold_name()
    with httpx.Client(timeout=5.0) as other:
        with httpx.Client(timeout=5.0) as leaving:
            with leaving.stream("GET", f"{url}/v1/hold/{name}", headers=auth(ACME)) as response:
                _open = first_chunk(response)
                assert other.get(f"{url}/v1/echo", headers=auth(ACME)).status_code == 429
            # Leaving the block mid-body drops the connection: the client is gone.
        assert eventually_admitted(other, f"{url}/v1/echo", ACME).status_code == 200
    # The proxy let go of the upstream stream too, which was never released and so never finished by itself.
    assert upstream.wait_closed_early(name)
    assert not upstream.gate(name).is_set()


def test_forwarding_failure_frees_the_slot(proxy, client: httpx.Client) -> None:
    from strata_services.local.processes import free_port

    url = proxy(upstreams=[f"http://127.0.0.1:{free_port()}"], proxy_max_concurrent_per_tenant=1)
    # With a cap of one, a slot kept by a failed request would turn the second answer into a 429.
    for _ in range(3):
        assert_problem(client.get(f"{url}/v1/echo", headers=auth(ACME)), 503, "unavailable")


def test_request_id_is_stamped_and_forwarded(proxy, client: httpx.Client) -> None:
    url = proxy()
    given = client.get(f"{url}/v1/echo", headers={**auth(ACME), "X-Request-ID": "req-123"})
    assert given.headers["x-request-id"] == "req-123"
    assert given.json() == {"request_id": "req-123"}

    minted = client.get(f"{url}/v1/echo", headers=auth(ACME))
    request_id = minted.headers["x-request-id"]
    assert len(request_id) == 32 and int(request_id, 16) >= 0
    assert minted.json() == {"request_id": request_id}


def test_body_streams_before_the_upstream_finishes(proxy, client: httpx.Client, upstream: FakeQueryApi) -> None:
    url = proxy()
    name = hold_name()
    with client.stream("GET", f"{url}/v1/hold/{name}", headers=auth(ACME)) as response:
        assert response.status_code == 200
        chunks = first_chunk(response)
        # The client has the first chunk while the upstream is still mid-response.
        assert name in upstream.open
        upstream.release(name)
        rest = b"".join(chunks)
    assert rest.endswith(b"last\n")
    assert response.headers["x-request-id"]


def test_a_small_request_and_answer_go_through_whole_and_free_the_slot(proxy, client: httpx.Client) -> None:
    url = proxy(proxy_max_concurrent_per_tenant=1)
    body = json.dumps({"sql": "SELECT 1", "pad": "x" * 1000}).encode()
    # With a cap of one, a slot kept after a whole answer would turn the next request into a 429.
    for _ in range(3):
        response = client.post(f"{url}/v1/echo-body", content=body,
                               headers={**auth(ACME), "Content-Type": "application/json"})
        assert response.status_code == 200, response.text
        # The upstream got the body with its length, not chunked; the client gets the answer with its length.
        assert response.json() == {"bytes": len(body), "content_length": str(len(body)), "transfer_encoding": None}
        assert response.headers["content-length"] == str(len(response.content))
        assert response.headers["x-request-id"]
