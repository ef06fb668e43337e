"""query-api: query planning with pruning, EXPLAIN and asynchronous plans, execution in process (DuckDB) for small
plans or on Spark for large ones, streamed results."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI

from strata_core.config import Settings
from strata_frame.web.app import build_app
from strata_frame.web.singleton import replica_id
from strata_frame.web.state import AppState
from strata_metastore.single_reads import SingleReads
from strata_query.dependencies import query_service_of
from strata_query.execution.runtime import QueryRuntime
from strata_query.flight.lifecycle import start_flight_server, stop_flight_server
from strata_query.router import ASYNC_PLAN_FORMS
from strata_query.router import router as query_router
from strata_query.service import QueryService
from strata_query.shared_registry import SharedQueryRegistry


async def _install_service(app: FastAPI) -> None:
    state: AppState = app.state.strata
    runtime = QueryRuntime(state.storage, state.registry, state.settings.query, state.settings.database_url,
                           state.spark, state.object_store)
    registry = SharedQueryRegistry(state.sessions, SingleReads(state.settings.database_url, "strata-query-registry"),
                                   replica_id(), state.settings.query_timeout_secs, ASYNC_PLAN_FORMS.problem)
    service = app.state.query = QueryService(runtime, state.sessions, state.settings, registry, ASYNC_PLAN_FORMS)
    app.state.flight = start_flight_server(state.settings, service, state.api_keys, asyncio.get_running_loop(),
                                           state.registry)


async def _close_service(app: FastAPI) -> None:
    state: AppState = app.state.strata
    service = query_service_of(app)
    if (flight := getattr(app.state, "flight", None)) is not None:
        await stop_flight_server(flight, state.settings.shutdown_timeout_secs)
    await service.close()
    service.runtime.close()


def create_app(settings: Settings) -> FastAPI:
    return build_app(
        settings,
        service="query-api",
        title="Strata query-api",
        description="SQL over one index: the time range, then a pruning cascade (split min/max, zone maps, blooms "
                    "and bitmaps, full-text) down to the row groups and columns to read; EXPLAIN, asynchronous "
                    "plans; small plans run in process on DuckDB, large ones on Spark through Spark Connect; results "
                    "streamed as Arrow, NDJSON or JSON.",
        routers=[query_router],
        on_startup=[_install_service],
        on_shutdown=[_close_service],
    )
