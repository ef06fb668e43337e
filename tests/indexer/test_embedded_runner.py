"""indexer-api's embedded indexing runner reaches an instance of the API of its own, in process, never the loop
that serves ingestion (`strata_indexer.background`). By default it runs in a child process of the API
(`IndexingProcess`), else on a thread with its own event loop (`IndexingThread`). Either way what it builds is
published as before, it is started again when it ends on an error or is killed, and it stops with the API."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import threading
import time

import httpx
import pytest

from strata_core.config import Settings
from strata_metastore import migrate
from strata_services.sample_data import metrics_index_config
from tests.fixtures.apps import Keys
from tests.fixtures.http_server import serve_in_thread
from tests.helpers import NDJSON, ndjson, unique_index_id

# Nothing listens there: the runner starts (it needs a remote), and a file this small is built in its local
# process (`STRATA_INDEXING_LOCAL_MAX_BYTES`), never on Spark.
NO_SPARK = "sc://127.0.0.1:9"


@pytest.fixture
def runner_settings(pg_databases, tmp_path, keys: Keys) -> Settings:
    database_url = pg_databases.create("strata_runner_thread")
    migrate.upgrade(database_url)
    return Settings(database_url=database_url, spark_remote=NO_SPARK, storage_uri=(tmp_path / "objects").as_uri(),
                    api_keys=keys.as_json(), home=tmp_path / "home", indexing_worker_slots=1,
                    indexing_poll_interval_secs=0.2)


@pytest.fixture
def thread_settings(runner_settings: Settings) -> Settings:
    return runner_settings.model_copy(update={"indexing_runner_process": False})


def _polls_served_here(monkeypatch) -> set[str]:
    """The names of the threads of this process on which a runner's poll is served (it reaches its API through
    an ASGI transport), filled in as the test goes."""
    polled_on: set[str] = set()
    original = httpx.ASGITransport.handle_async_request

    async def recording(self, request):
        if request.url.path == "/v1/indexing/poll":
            polled_on.add(threading.current_thread().name)
        return await original(self, request)

    monkeypatch.setattr(httpx.ASGITransport, "handle_async_request", recording)
    return polled_on


def _runner_processes() -> list[multiprocessing.Process]:
    return [p for p in multiprocessing.active_children() if p.name == "indexing-runner"]


def test_the_embedded_runner_builds_in_a_process_of_its_own(runner_settings: Settings, keys: Keys, monkeypatch):
    from strata_indexer.app import create_app

    polled_on = _polls_served_here(monkeypatch)
    app = create_app(runner_settings)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        _ingest_and_see_it_built(client, keys, unique_index_id(), _rows(50))
        runners = _runner_processes()
        assert len(runners) == 1 and runners[0].pid != os.getpid()
        assert not [t for t in threading.enumerate() if t.name == "indexing-runner"]
        # What the build cost the object store is counted in the API's /metrics, sent over from the runner's
        # process (its artifacts' puts): an operator reads one /metrics, wherever the runner runs.
        metrics = client.get("/metrics").text
        assert re.search(r'strata_object_store_requests_total\{kind="put",operation="artifact_build"\} [1-9]',
                         metrics), [line for line in metrics.splitlines() if "artifact_build" in line]
    # Built, and not one poll went through this process: the API's process serves ingestion alone.
    assert polled_on == set()
    # Stopped with the API (SIGTERM: it gave its jobs back and ended by itself, not killed).
    runners[0].join(timeout=30)
    assert runners[0].exitcode == 0


def test_a_killed_runner_process_is_started_again(runner_settings: Settings, keys: Keys, monkeypatch, caplog):
    from strata_indexer import background
    from strata_indexer.app import create_app

    monkeypatch.setattr(background, "RESTART_DELAYS_SECS", (0.2, 0.2))
    with serve_in_thread(create_app(runner_settings)) as url, httpx.Client(base_url=url, timeout=60) as client:
        deadline = time.monotonic() + 60
        while not _runner_processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        [first] = _runner_processes()
        os.kill(first.pid, signal.SIGKILL)
        # What is written after the kill is still built: by the runner started in its place.
        _ingest_and_see_it_built(client, keys, unique_index_id(), _rows(20))
        [second] = _runner_processes()
        assert second.pid != first.pid
    assert "the indexing runner process ended on its own (exit code -9)" in caplog.text
    second.join(timeout=30)
    assert second.exitcode == 0


def test_the_embedded_runner_builds_on_its_own_thread_and_loop(thread_settings: Settings, keys: Keys, monkeypatch):
    from strata_indexer.app import create_app

    polled_on = _polls_served_here(monkeypatch)
    app = create_app(thread_settings)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        serving = {t.name for t in threading.enumerate() if t.name.startswith("uvicorn-")}
        _ingest_and_see_it_built(client, keys, unique_index_id(), _rows(50))
        assert not _runner_processes()
        runners = [t for t in threading.enumerate() if t.name == "indexing-runner"]
        assert len(runners) == 1
    assert polled_on == {"indexing-runner"}, polled_on
    assert not polled_on & serving
    # Stopped with the API: its thread ended, having given its jobs back.
    runners[0].join(timeout=30)
    assert not runners[0].is_alive()


def test_a_runner_thread_that_ends_on_an_error_is_started_again(thread_settings: Settings, keys: Keys, monkeypatch,
                                                               caplog):
    from strata_indexer import background
    from strata_indexer.app import create_app

    # The first start fails as a CI run's did (an import error in the runner's thread); the next one works.
    starts = []
    serve = background.IndexingThread._serve

    async def failing_once(self):
        starts.append(time.monotonic())
        if len(starts) == 1:
            raise ImportError("cannot import name 'SQLContext' from partially initialized module 'pyspark.sql'")
        await serve(self)

    monkeypatch.setattr(background.IndexingThread, "_serve", failing_once)
    monkeypatch.setattr(background, "RESTART_DELAYS_SECS", (0.2, 0.2))
    with serve_in_thread(create_app(thread_settings)) as url, httpx.Client(base_url=url, timeout=60) as client:
        _ingest_and_see_it_built(client, keys, unique_index_id(), _rows(20))
        runners = [t for t in threading.enumerate() if t.name == "indexing-runner"]
    assert len(starts) == 2
    assert "the embedded indexing runner ended on an error" in caplog.text
    runners[0].join(timeout=30)
    assert not runners[0].is_alive()


def _rows(count: int) -> list[dict]:
    now = int(time.time())
    return [{"metric_name": "m", "service": "api", "host": f"h{i}", "timestamp_secs": now - i, "value": float(i)}
            for i in range(count)]


def _ingest_and_see_it_built(client: httpx.Client, keys: Keys, index_id: str, rows: list[dict]) -> None:
    """A new index, one ingest, then its split's artifact snapshot published within two minutes."""
    created = client.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    assert created.status_code == 201, created.text
    ingested = client.post(f"/v1/indexes/{index_id}/ingest", content=ndjson(rows),
                           headers={**keys.header(keys.writer), "Content-Type": NDJSON})
    assert ingested.status_code == 200, ingested.text
    split_id = ingested.json()["split_ids"][0]
    deadline = time.monotonic() + 120
    snapshot = {}
    while time.monotonic() < deadline:
        snapshot = client.get(f"/v1/splits/{split_id}/artifacts", headers=keys.header(keys.admin)).json()
        if snapshot.get("snapshot", {}).get("published"):
            break
        time.sleep(0.3)
    assert snapshot["snapshot"]["published"], snapshot
