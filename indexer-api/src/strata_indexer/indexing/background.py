"""indexer-api's background work: the embedded indexing runner, the janitor, and the indexing-lag gauges."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket

import httpx
from fastapi import FastAPI
from prometheus_client import Gauge

from strata_indexer.indexing.janitor import run_janitor
from strata_indexer.indexing.router import lag_by_index, now_of
from strata_shared.web.auth import Scope
from strata_shared.web.state import AppState
from strata_shared.workers.periodic import every

log = logging.getLogger("strata.indexer")


class IndexingMetrics:
    def __init__(self, registry) -> None:
        self.files = Gauge("strata_indexing_lag_files", "Published files without a published artifact snapshot",
                           ["index_id"], registry=registry)
        self.oldest = Gauge("strata_indexing_lag_oldest_seconds",
                            "Age of the oldest published file without a published artifact snapshot",
                            ["index_id"], registry=registry)

    async def refresh(self, state: AppState) -> None:
        async with state.sessions() as session:
            lags = await lag_by_index(session, now_of(state))
        self.files.clear()
        self.oldest.clear()
        for lag in lags:
            self.files.labels(lag.index_id).set(lag.files_waiting)
            self.oldest.labels(lag.index_id).set(lag.oldest_waiting_secs or 0.0)


async def install_metrics(app: FastAPI) -> None:
    state: AppState = app.state.strata
    state.extras["indexing_metrics"] = IndexingMetrics(state.registry)


async def start_background(app: FastAPI) -> None:
    state: AppState = app.state.strata
    settings = state.settings
    stop = asyncio.Event()
    metrics: IndexingMetrics = state.extras["indexing_metrics"]
    tasks = [
        asyncio.create_task(every(settings.janitor_interval_secs, stop, lambda: run_janitor(state, now_of(state)),
                                   "janitor")),
        asyncio.create_task(every(10.0, stop, lambda: metrics.refresh(state), "lag metrics")),
    ]
    if settings.indexing_worker_slots > 0 and state.spark is not None:
        from strata_indexer.indexing.runner import SparkIndexExecutor, indexing_runner

        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://indexer-api")
        executor = SparkIndexExecutor(state.spark, upload_attempts=settings.artifact_upload_attempts,
                                      upload_backoff_secs=settings.artifact_upload_backoff_secs,
                                      fault_upload_failures=settings.fault_artifact_upload_failures)
        runner = indexing_runner(client, executor, worker_id=f"{socket.gethostname()}:{os.getpid()}:indexer",
                                 slots=settings.indexing_worker_slots,
                                 api_key=state.api_keys.add_internal_key(frozenset({Scope.WORKER})),
                                 poll_interval_secs=settings.indexing_poll_interval_secs)
        state.extras["indexing_runner"] = runner
        state.extras["indexing_runner_client"] = client
        tasks.append(asyncio.create_task(runner.run(stop)))
    state.extras["background_stop"] = stop
    state.extras["background_tasks"] = tasks


async def stop_background(app: FastAPI) -> None:
    state: AppState = app.state.strata
    stop: asyncio.Event | None = state.extras.get("background_stop")
    if stop is None:
        return
    stop.set()
    for task in state.extras.get("background_tasks", []):
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(task, timeout=15)
    client = state.extras.get("indexing_runner_client")
    if client is not None:
        await client.aclose()
