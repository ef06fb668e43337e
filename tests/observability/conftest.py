"""The store the observability tests look at: planner-api, indexer-api, query-api and the proxy served over real
HTTP on a database of their own (so no other test's jobs show up), without Spark. Seeded through the proxy with
an index, four ingest batches, compaction jobs in every state a console shows (one merge published by the real
merge kernel run in the test process, one excluded after a failure, one running) and indexing jobs (one
running, one retried after a failure), all through the public APIs and the worker protocol."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from strata_core.config import Settings
from strata_metastore import migrate
from strata_planner.compaction.schemas import Assignment
from tests.fixtures.apps import Keys
from tests.fixtures.http_server import serve_in_thread

INDEX = "console-metrics"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# The planner's clock runs this far ahead of the ingest (45 minutes of rows, an hour of late-data acceptance), so
# the oldest window has closed and the newest is open, wherever the present falls in its 15-minute window.
PLANNER_AHEAD_SECS = 2700


@dataclass(frozen=True)
class ObservedStack:
    settings: Settings
    planner: str
    indexer: str
    query: str
    proxy: str
    published_job: str
    excluded_job: str
    running_job: str
    running_indexing_job: str
    retried_indexing_job: str
    compaction_jobs: int
    # planner-api's clock: a test moving it on gets the next debt sample from the next metrics refresh.
    planner_clock: Any = None


@pytest.fixture(scope="session")
def store_settings(pg_databases, tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Settings:
    database_url = pg_databases.create("strata_observed")
    migrate.upgrade(database_url)
    root = tmp_path_factory.mktemp("observed")
    return Settings(database_url=database_url, spark_remote=None, storage_uri=(root / "objects").as_uri(),
                    api_keys=keys.as_json(), home=root / "home", proxy_reject_delay_secs=0.0,
                    # One failure excludes a compaction job, an indexing job is retried once; leases outlast the
                    # test, since no worker of the test comes back to refresh them.
                    compaction_max_failures=1, indexing_max_failures=2, compaction_lease_secs=3600,
                    indexing_lease_secs=3600)


def fence(assignment: Assignment | dict) -> dict:
    raw = assignment if isinstance(assignment, dict) else assignment.model_dump()
    return {"job_id": raw["job_id"], "fencing_token": raw["fencing_token"]}


def _seed(client: httpx.Client, keys: Keys) -> dict[str, str | int]:
    from strata_jobs.merge import run_merge
    from strata_planner.compaction.executor import merge_spec
    from strata_planner.compaction.runner import output_splits
    from strata_services.client import arrow_ipc
    from strata_services.quickstart import quickstart_index_config, quickstart_rows

    admin, writer, worker = (Keys.header(k) for k in (keys.admin, keys.writer, keys.worker))
    now = int(time.time())
    created = client.post("/v1/indexes", json={**quickstart_index_config(now), "index_id": INDEX}, headers=admin)
    assert created.status_code == 201, created.text
    for batch in range(4):
        ingested = client.post(f"/v1/indexes/{INDEX}/ingest", content=arrow_ipc(quickstart_rows(2500, now, seed=batch)),
                               headers={**writer, "Content-Type": "application/vnd.apache.arrow.stream"})
        assert ingested.status_code == 200, ingested.text
    triggered = client.post(f"/v1/indexes/{INDEX}/compaction/trigger", json={"final": True}, headers=admin)
    compaction_jobs = len(triggered.json()["created_job_ids"])
    assert compaction_jobs >= 3, triggered.text

    def poll(queue: str, capacity: int, updates: list[dict]) -> dict:
        response = client.post(f"/v1/{queue}/poll", headers=worker,
                               json={"worker_id": "observed-worker", "capacity": capacity, "updates": updates})
        assert response.status_code == 200, response.text
        assert all(u["accepted"] for u in response.json()["updates"]), response.text
        return response.json()

    merged, failed, running = (Assignment.model_validate(a) for a in poll("compaction", 3, [])["assignments"])
    outputs = [o.model_dump(mode="json") for o in output_splits(run_merge(merge_spec(merged)))]
    poll("compaction", 0, [
        {**fence(merged), "status": "success", "outputs": outputs},
        {**fence(failed), "status": "failure", "error": "merge failed: storage refused the write (observed test)"},
        {**fence(running), "status": "in_progress", "stage": "merging", "progress": 0.1}])
    building, retried = poll("indexing", 2, [])["assignments"]
    poll("indexing", 0, [
        {**fence(building), "status": "in_progress", "stage": "building", "progress": 0.1},
        {**fence(retried), "status": "failure", "error": "artifact upload failed: object store timed out"}])
    return {"published_job": merged.job_id, "excluded_job": failed.job_id, "running_job": running.job_id,
            "running_indexing_job": building["job_id"], "retried_indexing_job": retried["job_id"],
            "compaction_jobs": compaction_jobs}


@pytest.fixture(scope="session")
def observed_stack(store_settings: Settings, keys: Keys) -> Iterator[ObservedStack]:
    from strata_core.clock import ManualClock
    from strata_indexer.app import create_app as indexer_app
    from strata_planner.app import create_app as planner_app
    from strata_query.app import create_app as query_app
    from strata_services.proxy.app import create_proxy_app

    ahead = ManualClock(datetime.now(UTC) + timedelta(seconds=PLANNER_AHEAD_SECS))
    with ExitStack() as running:
        planner = running.enter_context(serve_in_thread(planner_app(store_settings, clock=ahead)))
        indexer = running.enter_context(serve_in_thread(indexer_app(store_settings)))
        query = running.enter_context(serve_in_thread(query_app(store_settings)))
        proxy_settings = store_settings.model_copy(update={"planner_url": planner, "indexer_url": indexer,
                                                           "query_upstreams": query})
        proxy = running.enter_context(serve_in_thread(create_proxy_app(proxy_settings)))
        with httpx.Client(base_url=proxy, timeout=60) as client:
            jobs = _seed(client, keys)
        yield ObservedStack(store_settings, planner, indexer, query, proxy, **jobs, planner_clock=ahead)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Screenshots and other files a person may want to look at after a run (gitignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
