"""planner-api's background work: the embedded compaction runner, the garbage collector, metrics refresh."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket

import httpx
from fastapi import FastAPI

from strata_planner.compaction.gc import collect_garbage
from strata_planner.compaction.metrics import CompactionMetrics
from strata_shared.clock import system_clock
from strata_shared.web.auth import Scope
from strata_shared.web.state import AppState
from strata_shared.workers.periodic import every

log = logging.getLogger("strata.planner")


async def start_background(app: FastAPI) -> None:
    state: AppState = app.state.strata
    settings = state.settings
    stop = asyncio.Event()
    clock = state.extras.setdefault("clock", system_clock)
    metrics = CompactionMetrics(state.registry)
    state.extras["compaction_metrics"] = metrics
    tasks = [
        asyncio.create_task(every(settings.gc_interval_secs, stop, lambda: collect_garbage(state, clock()), "gc")),
        asyncio.create_task(every(10.0, stop, lambda: metrics.refresh(state), "metrics refresh")),
    ]
    if settings.compaction_worker_slots > 0 and state.spark is not None:
        from strata_planner.compaction.executor import SparkMergeExecutor
        from strata_planner.compaction.runner import CompactionRunner

        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://planner-api")
        runner = CompactionRunner(
            client, worker_id=f"{socket.gethostname()}:{os.getpid()}:embedded",
            slots=settings.compaction_worker_slots, executor=SparkMergeExecutor(state.spark),
            api_key=state.api_keys.add_internal_key(frozenset({Scope.WORKER})),
            poll_interval_secs=settings.compaction_poll_interval_secs,
            merge_delay_secs=settings.fault_merge_delay_secs)
        state.extras["runner"] = runner
        state.extras["runner_client"] = client
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
    client = state.extras.get("runner_client")
    if client is not None:
        await client.aclose()
