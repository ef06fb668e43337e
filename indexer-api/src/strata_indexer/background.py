"""indexer-api's background work: the embedded indexing runner, the janitor (once across the replicas), and the
refresh of the indexing-lag gauges (in every replica: they only read). It starts what `parts.py` holds, so it sits
above it, beside `app.py`.

The indexing runner does not share the event loop that serves ingestion: it runs on a thread of its own, with its
own event loop, and reaches an instance of indexer-api of its own (routes only: no background, no OTLP server; its
own connection pool) in process, like `strata worker --kind indexing` reaches an API over HTTP. Its polls, the
publishing of its artifacts and its assignments' statements are served on that loop, so an ingest request never
waits behind them (docs/benchmarks.md, "Ingestion: CPU per request": the polls took a third of the busy loop
when they shared it). It shares the process's interpreter (and its GIL) with the API, not its loop."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Callable

from fastapi import FastAPI

from strata_core.config import Settings
from strata_frame.maintenance.skips import quiet_on_outage
from strata_frame.web.auth import Scope
from strata_frame.web.background import Background
from strata_frame.web.singleton import PassLeases, replica_id
from strata_frame.web.state import AppState
from strata_indexer.services import indexer_services_of

log = logging.getLogger("strata.indexer")

# Builds the runner's own indexer-api: routes only, no background work, no OTLP server (`app.create_app`'s
# `runner_host`), on the clock of the serving app.
RunnerHost = Callable[[Settings], FastAPI]


async def start_background(app: FastAPI, runner_host: RunnerHost | None = None) -> None:
    state: AppState = app.state.strata
    services = indexer_services_of(app)
    settings, sessions, clock = state.settings, state.sessions, state.clock
    background = state.background = Background(PassLeases(sessions, replica_id()),
                                              stop_timeout_secs=settings.worker_shutdown_timeout_secs + 5)
    background.once_every(settings.janitor_interval_secs,
                          quiet_on_outage("janitor", lambda: services.janitor.run(clock())), "janitor")
    background.every(10.0, lambda: services.metrics.refresh(sessions, clock()), "lag metrics")
    if settings.indexing_worker_slots > 0 and state.spark is not None and runner_host is not None:
        background.run(IndexingThread(app, runner_host).run)


# After the runner ended on an error, how long before it is started again: doubling from the first, up to the last.
RESTART_DELAYS_SECS = (1.0, 60.0)


class IndexingThread:
    """The embedded indexing runner on a thread of its own (module docstring). `run` lives on the serving loop as
    one of its background loops: it starts the thread, and when told to stop, stops the runner (which gives its
    jobs back within its shutdown timeout) and waits for the thread to end. A runner that ends on an error is
    started again after a delay: the API would otherwise go on taking writes whose builds nobody runs."""

    def __init__(self, app: FastAPI, runner_host: RunnerHost) -> None:
        self.app = app
        self.runner_host = runner_host
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()

    async def run(self, stop: asyncio.Event) -> None:
        delay, longest = RESTART_DELAYS_SECS
        while not await self._run_once(stop):
            log.warning("starting the embedded indexing runner again in %.0f s", delay)
            try:
                await asyncio.wait_for(stop.wait(), timeout=delay)
                return
            except TimeoutError:
                delay = min(delay * 2, longest)

    async def _run_once(self, stop: asyncio.Event) -> bool:
        """One runner thread, until the API stops (True) or the runner ends on its own (False)."""
        self._loop = self._stop = None
        self._started.clear()
        serving_loop = asyncio.get_running_loop()
        ended = asyncio.Event()

        def main() -> None:
            try:
                self._main()
            finally:
                serving_loop.call_soon_threadsafe(ended.set)

        thread = threading.Thread(target=main, name="indexing-runner", daemon=True)
        thread.start()
        waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(ended.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            await asyncio.to_thread(self._started.wait, 10.0)
            loop, runner_stop = self._loop, self._stop
            if loop is not None and runner_stop is not None:
                try:
                    loop.call_soon_threadsafe(runner_stop.set)
                except RuntimeError:  # its loop already ended (the runner failed at start)
                    pass
            await asyncio.to_thread(thread.join)
        return stop.is_set()

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except Exception:
            log.exception("the embedded indexing runner ended on an error")
        finally:
            self._started.set()

    async def _serve(self) -> None:
        import httpx

        from strata_indexer.indexing.runner import index_build_executor, indexing_runner

        serving: AppState = self.app.state.strata
        settings = serving.settings
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._started.set()
        host = self.runner_host(settings)
        async with host.router.lifespan_context(host):
            state: AppState = host.state.strata
            # Object-store requests its builds report are counted in the serving app's /metrics, as when the
            # runner reached it directly.
            state.object_store = serving.object_store
            executor = index_build_executor(serving.spark, settings)
            try:
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=host),
                                             base_url="http://indexer-api") as client:
                    runner = indexing_runner(client, executor,
                                             worker_id=f"{socket.gethostname()}:{os.getpid()}:indexer",
                                             slots=settings.indexing_worker_slots,
                                             api_key=state.api_keys.add_internal_key(frozenset({Scope.WORKER})),
                                             poll_interval_secs=settings.indexing_poll_interval_secs,
                                             shutdown_timeout_secs=settings.worker_shutdown_timeout_secs,
                                             local_slots=settings.indexing_worker_local_slots,
                                             local_batch=settings.local_job_batch)
                    await runner.run(self._stop)
            finally:
                executor.close()
