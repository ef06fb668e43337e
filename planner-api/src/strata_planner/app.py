"""planner-api: merge planning, the compaction scheduler and its worker protocol, the window timeline, the
embedded compaction runner and the garbage collector."""

from __future__ import annotations

from fastapi import FastAPI

from strata_core.clock import Clock
from strata_core.config import Settings
from strata_frame.maintenance.metrics import MaintenanceMetrics
from strata_frame.maintenance.router import passes_router
from strata_frame.maintenance.skips import PassRecorder
from strata_frame.web.app import build_app
from strata_frame.web.state import AppState
from strata_planner.compaction.background import start_background
from strata_planner.compaction.metrics import CompactionMetrics
from strata_planner.compaction.router import router as compaction_router
from strata_planner.compaction.services import build_planner_services
from strata_planner.deletes.router import router as deletes_router
from strata_planner.metastore.router import router as metastore_router


def create_app(settings: Settings, *, background: bool = True, clock: Clock | None = None) -> FastAPI:
    """`background=False` leaves out the runner, the GC and metrics refresh (tests drive them by hand);
    `clock` replaces the system clock of leases and planning (tests move time by hand)."""

    async def install_clock(app: FastAPI) -> None:
        if clock is not None:
            app.state.strata.clock = clock

    async def install_services(app: FastAPI) -> None:
        state: AppState = app.state.strata
        passes = PassRecorder(state.sessions, state.storage, MaintenanceMetrics(state.registry),
                              state.object_store.measure)
        app.state.planner = build_planner_services(
            state.sessions, state.storage, state.clock, settings.compaction, passes,
            CompactionMetrics(state.registry) if background else None)

    startup = [install_clock, install_services,
               *([start_background] if background else [])]
    return build_app(
        settings,
        service="planner-api",
        title="Strata planner-api",
        description="Time-windowed sorted compaction: planning, leased jobs with fencing tokens, the worker "
                    "protocol, status and the window timeline.",
        routers=[compaction_router, deletes_router, metastore_router, passes_router],
        on_startup=startup,
    )
