"""`strata serve` on SIGTERM, in order: /readyz says `draining` at once while /healthz and requests are still
served, the listener stays open for the grace, then closes, a request in flight (a held stream) still finishes,
and the process exits. Served here: the proxy, the cheapest process `strata serve` runs the same way as the APIs
(`strata_services.serving`), in front of a real upstream whose stream the test holds open."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from strata_frame.web.health import DRAINING_PROBLEM_TYPE
from strata_services.local.api_process import ApiProcess
from strata_services.local.processes import free_port
from tests.fixtures.http_server import listener_refuses, serve_in_thread

pytestmark = pytest.mark.timeout(120)

KEY = "drain-admin-key"
GRACE_SECS = 1.5


def _held_upstream(release: threading.Event) -> FastAPI:
    app = FastAPI()

    @app.get("/healthz")
    @app.get("/readyz")
    async def ready() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/query/plans/quick")
    async def quick() -> dict[str, str]:
        return {"answer": "quick"}

    @app.get("/v1/query/plans/held")
    async def held() -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            # More than the proxy holds whole, so it is relayed as a stream.
            yield b"first " * 50_000
            while not release.is_set():
                await asyncio.sleep(0.02)
            yield b"last"

        return StreamingResponse(body(), media_type="text/plain")

    return app


def test_sigterm_drains_then_closes_the_listener_then_finishes_what_is_in_flight(tmp_path) -> None:
    release = threading.Event()
    headers = {"Authorization": f"Bearer {KEY}"}
    with serve_in_thread(_held_upstream(release)) as upstream:
        env = {"STRATA_API_KEYS": json.dumps({KEY: {"scopes": ["admin"]}}), "STRATA_QUERY_UPSTREAMS": upstream,
               "STRATA_PLANNER_UPSTREAMS": upstream, "STRATA_INDEXER_UPSTREAMS": upstream,
               "STRATA_DRAIN_GRACE_SECS": str(GRACE_SECS), "STRATA_SHUTDOWN_TIMEOUT_SECS": "60",
               "STRATA_LOG_FORMAT": "text"}
        process = ApiProcess("proxy", "127.0.0.1", free_port(), env, tmp_path)
        try:
            process.start()
            process.wait_healthy()
            with httpx.Client(base_url=process.url, headers=headers, timeout=30) as client, \
                    client.stream("GET", "/v1/query/plans/held") as in_flight:
                chunks = in_flight.iter_bytes()
                first = next(chunks)
                assert first.startswith(b"first")

                process.terminate()
                signalled = time.monotonic()
                # At once: not ready, with the draining problem type; still alive, and still serving.
                deadline = signalled + GRACE_SECS / 2
                while (readiness := httpx.get(process.url + "/readyz", timeout=2)).status_code == 200:
                    assert time.monotonic() < deadline, "/readyz did not turn to draining"
                    time.sleep(0.02)
                assert readiness.status_code == 503
                assert readiness.json()["type"] == DRAINING_PROBLEM_TYPE
                assert httpx.get(process.url + "/healthz", timeout=2).status_code == 200
                quick = httpx.get(process.url + "/v1/query/plans/quick", headers=headers, timeout=5)
                assert quick.json() == {"answer": "quick"}

                # After the grace, the listener closes; the process stays, for the request in flight.
                while not listener_refuses(process.url):
                    assert time.monotonic() < signalled + GRACE_SECS + 10, "the listener never closed"
                    time.sleep(0.05)
                assert time.monotonic() - signalled >= GRACE_SECS
                time.sleep(0.5)
                assert process.alive(), "the process exited with a request in flight"

                release.set()
                rest = b"".join(chunks)
            assert (first + rest).endswith(b"last") and len(first + rest) == 6 * 50_000 + 4

            deadline = time.monotonic() + 20
            while process.alive():
                assert time.monotonic() < deadline, "the process did not exit once its requests were done"
                time.sleep(0.1)
            log = process.log_path.read_text()
            assert "draining" in log and "Finished server process" in log, log
        finally:
            release.set()
            process.stop()
