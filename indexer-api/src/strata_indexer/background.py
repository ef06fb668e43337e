"""indexer-api's background work: the embedded indexing runner, the janitor (once across the replicas), and the
refresh of the indexing-lag gauges (in every replica: they only read). It starts what `parts.py` holds, so it sits
above it, beside `app.py`.

The indexing runner does not share the event loop that serves ingestion, nor by default its process. It reaches an
instance of indexer-api of its own (routes only: no background, no OTLP server; its own connection pool) in
process, like `strata worker --kind indexing` reaches an API over HTTP, so its polls, the publishing of its
artifacts and its assignments' statements are never served on the ingest loop (docs/benchmarks.md, "Ingestion: CPU
per request": the polls took a third of the busy loop when they shared it). Where that runs:
- `IndexingProcess` (the default, `STRATA_INDEXING_RUNNER_PROCESS`): a child process of the API, spawned, with its
  own interpreter. On a thread, the runner still took ~7 ms of the API process's CPU lock per ingest request under
  a steady stream, and the ingest p50 with background work was 2.3-2.5x its p50 without (docs/benchmarks.md, "The
  sweep at 50-400 requests/s").
- `IndexingThread`: a thread of the API's process, with its own event loop (one process fewer; and the only way
  for an app built on a test's clock).
Either is started again after it ends on an error, and stopped with the API: the runner then gives its jobs back
within `STRATA_WORKER_SHUTDOWN_TIMEOUT_SECS`."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from strata_core.config import Settings
from strata_core.object_requests import ObjectRequests
from strata_core.object_store_metrics import ObjectStoreMetrics
from strata_frame.jobqueue.local_jobs import exit_with_parent
from strata_frame.maintenance.skips import quiet_on_outage
from strata_frame.web.auth import Scope
from strata_frame.web.background import Background
from strata_frame.web.singleton import PassLeases, replica_id
from strata_frame.web.state import AppState
from strata_indexer.services import indexer_services_of

if TYPE_CHECKING:
    from strata_frame.spark.session import SparkSessionFactory

log = logging.getLogger("strata.indexer")

# Builds the runner's own indexer-api: routes only, no background work, no OTLP server (`app.create_app`'s
# `runner_host`), on the clock of the serving app.
RunnerHost = Callable[[Settings], FastAPI]


async def start_background(app: FastAPI, runner_host: RunnerHost | None = None, *, own_process: bool = False
                           ) -> None:
    """`runner_host` None: no indexing runner; `own_process`: the runner in a child process (`IndexingProcess`),
    else on a thread (`IndexingThread`)."""
    state: AppState = app.state.strata
    services = indexer_services_of(app)
    settings, sessions, clock = state.settings, state.sessions, state.clock
    background = state.background = Background(PassLeases(sessions, replica_id()),
                                              stop_timeout_secs=settings.worker_shutdown_timeout_secs + 5)
    background.once_every(settings.janitor_interval_secs,
                          quiet_on_outage("janitor", lambda: services.janitor.run(clock())), "janitor")
    background.every(10.0, lambda: services.metrics.refresh(sessions, clock()), "lag metrics")
    if settings.indexing_worker_slots > 0 and state.spark is not None and runner_host is not None:
        runner = IndexingProcess(app, runner_host) if own_process else IndexingThread(app, runner_host)
        background.run(runner.run)


async def serve_runner(host: FastAPI, stop: asyncio.Event, spark: SparkSessionFactory | None,
                       object_store: ObjectStoreMetrics) -> None:
    """The indexing runner against `host` (an indexer-api of its own, reached in process), until `stop`. It
    submits through `spark` (None: the host's session) and the object-store requests of its builds are counted in
    `object_store`: the serving API's /metrics, as when a runner reaches the API that owns its jobs."""
    import httpx

    from strata_indexer.indexing.runner import index_build_executor, indexing_runner

    async with host.router.lifespan_context(host):
        state: AppState = host.state.strata
        settings = state.settings
        state.object_store = object_store
        executor = index_build_executor(spark or state.spark, settings)
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
                await runner.run(stop)
        finally:
            executor.close()


# After the runner ended on an error, how long before it is started again: doubling from the first, up to the last.
RESTART_DELAYS_SECS = (1.0, 60.0)


class _RestartedRunner:
    """`run` lives on the serving loop as one of its background loops: it starts the runner (`_run_once`), and
    starts it again after a delay when it ends on its own: the API would otherwise go on taking writes whose
    builds nobody runs."""

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
        """One runner, until the API stops (True) or the runner ends on its own (False)."""
        raise NotImplementedError


async def _first_of(stop: asyncio.Event, ended: asyncio.Event) -> None:
    """Until the API stops or the runner ends, whichever comes first."""
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(ended.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


class IndexingThread(_RestartedRunner):
    """The embedded indexing runner on a thread of the API's process, with an event loop of its own."""

    def __init__(self, app: FastAPI, runner_host: RunnerHost) -> None:
        self.app = app
        self.runner_host = runner_host
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()

    async def _run_once(self, stop: asyncio.Event) -> bool:
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
        try:
            await _first_of(stop, ended)
        finally:
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
        serving: AppState = self.app.state.strata
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._started.set()
        await serve_runner(self.runner_host(serving.settings), self._stop, serving.spark, serving.object_store)


# How long a runner process that was told to stop has, beyond giving its jobs back, before it is killed.
_STOP_MARGIN_SECS = 3.0


class IndexingProcess(_RestartedRunner):
    """The embedded indexing runner in a child process of the API: spawned (the API is a threaded server, where
    fork is unsafe), told to stop with SIGTERM, killed if it has not ended `worker_shutdown_timeout_secs` (plus a
    margin) later, and ending by itself when the API is gone. What its builds cost the object store comes back
    over a pipe and is counted in the API's /metrics (`ObjectStoreCounts`); everything else the runner reports
    goes through the database."""

    def __init__(self, app: FastAPI, runner_host: RunnerHost) -> None:
        state: AppState = app.state.strata
        # Sent to the process, so picklable: a function of a module, by name (`app.runner_host_app`).
        self.runner_host = runner_host
        self.settings = state.settings
        self.object_store = state.object_store

    async def _run_once(self, stop: asyncio.Event) -> bool:
        loop = asyncio.get_running_loop()
        counts, counts_sent = multiprocessing.Pipe(duplex=False)
        process = multiprocessing.get_context("spawn").Process(
            target=run_runner_process, args=(self.settings, self.runner_host, os.getpid(), counts_sent),
            name="indexing-runner", daemon=False)
        process.start()
        counts_sent.close()
        ended = asyncio.Event()

        def on_end() -> None:
            # Readable from now on: not watched any more, or the loop would call this on each turn.
            loop.remove_reader(process.sentinel)
            ended.set()

        loop.add_reader(process.sentinel, on_end)
        loop.add_reader(counts.fileno(), self._count, loop, counts)
        try:
            await _first_of(stop, ended)
        finally:
            if not ended.is_set():
                process.terminate()
                timeout = self.settings.worker_shutdown_timeout_secs + _STOP_MARGIN_SECS
                await asyncio.to_thread(process.join, timeout)
                if process.exitcode is None:
                    log.warning("the indexing runner process %d did not stop within %.0f s; killing it",
                                process.pid, timeout)
                    process.kill()
            await asyncio.to_thread(process.join)
            loop.remove_reader(process.sentinel)
            self._count(loop, counts)  # what it sent last
            counts.close()
        if not stop.is_set():
            log.error("the indexing runner process ended on its own (exit code %s)", process.exitcode)
        return stop.is_set()

    def _count(self, loop: asyncio.AbstractEventLoop, counts: Connection) -> None:
        try:
            while counts.poll():
                operation, requests = counts.recv()
                self.object_store.record(operation, requests)
        except (EOFError, OSError):  # the process ended and its end of the pipe with it
            loop.remove_reader(counts.fileno())


class ObjectStoreCounts(ObjectStoreMetrics):
    """The runner process's object-store counts, sent to the API's process instead of counted here: its own
    /metrics is served by no one."""

    def __init__(self, sent: Connection) -> None:
        super().__init__(CollectorRegistry())
        self.sent = sent
        self._lock = threading.Lock()  # sends from several threads would interleave their bytes

    def record(self, operation: str, requests: ObjectRequests) -> None:
        with self._lock:
            self.sent.send((operation, requests))


def run_runner_process(settings: Settings, runner_host: RunnerHost, parent: int, counts_sent: Connection) -> None:
    """The runner process's main: the indexing runner against an indexer-api of its own, until SIGTERM or SIGINT
    (then it gives its jobs back), or until the API process is gone."""
    from strata_core.observability.logs import configure_logging
    from strata_core.observability.tracing import configure_tracing

    configure_logging("strata-indexer", settings.log_format, settings.log_level or "INFO")
    configure_tracing("indexer-api")
    exit_with_parent(parent)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve_runner(runner_host(settings), stop, None, ObjectStoreCounts(counts_sent))

    try:
        asyncio.run(main())
    except Exception:
        log.exception("the indexing runner process ended on an error")
        raise SystemExit(1) from None
