"""Strata's APIs as real `strata serve` processes behind the proxy, as the end-to-end tests of replicas and rolling
restarts run them: the environment a child process reads its settings from, the proxy in this process, its view
of each replica, a rolling restart of one replica, and a record of what every client call answered."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from strata_core.config import Settings
from strata_services.local.api_process import ApiProcess
from strata_services.proxy.app import create_proxy_app
from tests.fixtures.apps import Keys
from tests.fixtures.http_server import serve_in_thread


def child_env(settings: Settings, keys: Keys, home: Path, **overrides: str) -> dict[str, str]:
    """The variables a `strata serve` child reads its settings from: `settings`' database, Spark, storage and job
    bundle, the test keys, a home of its own, text logs; `overrides` (STRATA_* names) replace or add."""
    return {"STRATA_DATABASE_URL": settings.database_url, "STRATA_SPARK_REMOTE": settings.spark_remote,
            "STRATA_STORAGE_URI": settings.resolved_storage_uri, "STRATA_API_KEYS": keys.as_json(),
            "STRATA_HOME": str(home), "STRATA_JOB_BUNDLE_DIR": str(settings.resolved_job_bundle_dir),
            "STRATA_LOG_FORMAT": "text", **overrides}


@contextmanager
def proxy_in_thread(settings: Settings, replicas: dict[str, list[str]], health_interval_secs: float) -> Iterator[str]:
    """The proxy fronting `replicas` (API name -> base URLs), with limits no test load reaches; its base URL."""
    proxy_settings = settings.model_copy(update={
        "planner_upstreams": ",".join(replicas["planner-api"]),
        "indexer_upstreams": ",".join(replicas["indexer-api"]),
        "query_upstreams": ",".join(replicas["query-api"]),
        "proxy_health_interval_secs": health_interval_secs, "proxy_rate_per_sec": 1000.0, "proxy_burst": 1000,
        "proxy_max_concurrent_per_tenant": 100})
    with serve_in_thread(create_proxy_app(proxy_settings), health_path="/readyz", timeout=120) as url:
        yield url


def upstream_states(proxy: str) -> dict[str, dict[str, str]]:
    """The proxy's view of every replica: API name -> replica URL -> ready, draining, unready or down."""
    return httpx.get(proxy + "/readyz", timeout=60).json().get("upstreams", {})


def all_ready(proxy: str) -> bool:
    return all(set(pool.values()) == {"ready"} for pool in upstream_states(proxy).values())


def wait_for(condition: Callable[[], bool], what: str, timeout: float, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:g} s"
        time.sleep(interval)


def restart(process: ApiProcess, proxy: str, stop_timeout: float, ready_timeout: float) -> None:
    """One step of a rolling restart: SIGTERM (the replica drains), wait for its exit, start it again on the same
    port, and wait until the proxy sees it ready, so the next replica may go."""
    process.terminate()
    process.wait_stopped(stop_timeout)
    process.start()
    process.wait_healthy(timeout=ready_timeout)
    wait_for(lambda: upstream_states(proxy)[process.name].get(process.url) == "ready",
             f"{process.label} ready again in the proxy", ready_timeout, interval=0.2)


@dataclass
class Outcomes:
    """What every client call through the proxy answered, from any thread; the bodies of those that were not a
    2xx, for a failure message that says what went wrong."""

    statuses: list[int] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, status: int) -> None:
        with self.lock:
            self.statuses.append(status)

    def call(self, client: httpx.Client, method: str, path: str, **kwargs) -> httpx.Response | None:
        """`client.request`, recorded; a call that got no answer is recorded with its request id (which the proxy
        and the API log) and answers None."""
        request_id = uuid.uuid4().hex
        headers = {**kwargs.pop("headers", {}), "x-request-id": request_id}
        try:
            return self.record(client.request(method, path, headers=headers, **kwargs))
        except httpx.TransportError as error:
            with self.lock:
                self.unexpected.append(f"{method} {path} [request_id={request_id}] got no answer: {error!r}")
            return None

    def record(self, response: httpx.Response) -> httpx.Response:
        with self.lock:
            self.statuses.append(response.status_code)
            if not 200 <= response.status_code < 300:
                self.unexpected.append(f"{response.request.method} {response.request.url.path} -> "
                                       f"{response.status_code}: {response.text[:500]}")
        return response
