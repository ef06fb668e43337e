"""indexer-api: the index catalog, ingestion, registration of splits, per-file indexing jobs, artifact
registration and snapshots, the janitor."""

from __future__ import annotations

from functools import partial

from fastapi import FastAPI

from strata_core.clock import Clock
from strata_core.config import Settings
from strata_frame.maintenance.metrics import MaintenanceMetrics
from strata_frame.maintenance.skips import PassRecorder
from strata_frame.web.app import build_app
from strata_frame.web.state import AppState
from strata_indexer.background import start_background
from strata_indexer.indexes.router import router as indexes_router
from strata_indexer.indexing.router import router as indexing_router
from strata_indexer.ingest.router import router as ingest_router
from strata_indexer.otlp.grpc_server import start_otlp_grpc, stop_otlp_grpc
from strata_indexer.otlp.router import router as otlp_router
from strata_indexer.services import build_indexer_services, indexer_services_of
from strata_indexer.splits.router import router as splits_router
from strata_metastore.plain_writes import PlainWrites
from strata_metastore.single_reads import SingleReads


def create_app(settings: Settings, *, background: bool = True, clock: Clock | None = None,
               runner_host: bool = False) -> FastAPI:
    """`background=False` leaves out the indexing runner and the janitor (tests drive them by hand); `clock`
    replaces the system clock of leases (tests move time by hand). `runner_host=True` is the app the embedded
    indexing runner reaches in process, on a thread or in a process of its own (`background`): routes only, no
    background work and no OTLP gRPC server."""

    async def install_clock(app: FastAPI) -> None:
        if clock is not None:
            app.state.strata.clock = clock

    async def install_services(app: FastAPI) -> None:
        state: AppState = app.state.strata
        passes = PassRecorder(state.sessions, state.storage, MaintenanceMetrics(state.registry),
                              state.object_store.measure)
        # The index of each ingest request, read in one round trip (`ingest.service.live_index`), and its splits
        # staged and published on the same plain connections, their commit-log entries shipped by the sessions'
        # own writer.
        reads = None if runner_host else SingleReads(settings.database_url, "strata-ingest")
        writes = None if reads is None else PlainWrites(reads, state.sessions.kw.get("commit_log"))
        app.state.indexer = build_indexer_services(
            state.sessions, state.storage, state.clock, settings.ingest, settings.indexing, passes, state.registry,
            state.object_store.measure, reads, writes)

    async def close_reads(app: FastAPI) -> None:
        services = getattr(app.state, "indexer", None)  # None: the app failed before building them
        if services is not None and services.ingest.reads is not None:
            services.ingest.reads.close()

    async def start_otlp(app: FastAPI) -> None:
        state: AppState = app.state.strata
        await start_otlp_grpc(app, settings, state.api_keys, state.sessions, indexer_services_of(app).ingest)

    async def background_work(app: FastAPI) -> None:
        # A child process builds its API on the system clock: an app on a test's clock keeps its runner on a thread.
        await start_background(app, runner_host=partial(runner_host_app, clock=clock),
                               own_process=settings.indexing_runner_process and clock is None)

    startup = [install_clock, install_services]
    if not runner_host:
        startup += [*([background_work] if background else []), start_otlp]
    return build_app(
        settings,
        service="indexer-api",
        title="Strata indexer-api",
        description="Index catalog, ingestion into windowed sorted splits, registration of split files, per-file "
                    "index artifacts (zone maps, blooms, bitmaps, full-text) with all-or-nothing snapshots.",
        routers=[indexes_router, ingest_router, splits_router, indexing_router, otlp_router],
        on_startup=startup,
        on_shutdown=[] if runner_host else [stop_otlp_grpc, close_reads],
    )


def runner_host_app(settings: Settings, clock: Clock | None = None) -> FastAPI:
    """The indexer-api the embedded indexing runner reaches in process (`create_app`'s `runner_host`). A function
    of this module, so a runner process is handed it by name (`background.IndexingProcess`)."""
    return create_app(settings, background=False, clock=clock, runner_host=True)
