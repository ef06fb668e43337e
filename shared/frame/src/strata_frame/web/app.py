"""The frame every Strata API is built in: lifespan (database, Spark, storage), problem handlers, auth, metrics,
health, and stable operationIds. Each API adds its own routers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from fastapi import APIRouter, Depends, FastAPI
from fastapi.routing import APIRoute
from prometheus_client import CollectorRegistry

from strata_core.api_keys import ApiKeyRegistry
from strata_core.config import Settings
from strata_core.object_store_metrics import ObjectStoreMetrics
from strata_core.storage import ObjectStore
from strata_frame.spark.session import SparkSessionFactory
from strata_frame.web.health import Drain
from strata_frame.web.health import router as health_router
from strata_frame.web.metrics import install_metrics
from strata_frame.web.openapi import install_openapi
from strata_frame.web.problems import install_problem_handlers
from strata_frame.web.request_context import install_request_context, path_fields
from strata_frame.web.state import AppState
from strata_frame.web.storable_text import refuse_unstorable_text
from strata_frame.web.tracing import instrument_engine
from strata_metastore.engine import create_engine, session_factory

# Hooks receive the app (its state is app.state.strata): some start in-process clients of the app itself.
StartupHook = Callable[[FastAPI], Awaitable[None]]


def built_at_start(app: FastAPI, attribute: str, api: str):
    """What `api`'s `create_app` kept on `app.state.<attribute>` when it started (its services), for the routes'
    dependencies, its background work and tests; an error while it is still starting."""
    built = getattr(app.state, attribute, None)
    if built is None:
        raise RuntimeError(f"{api} has not finished starting")
    return built


def _operation_id(route: APIRoute) -> str:
    # The function name is the operationId: stable across FastAPI versions and path changes.
    return route.name


def build_app(
    settings: Settings,
    *,
    service: str,
    title: str,
    description: str,
    routers: Sequence[APIRouter],
    on_startup: Sequence[StartupHook] = (),
    on_shutdown: Sequence[StartupHook] = (),
) -> FastAPI:
    if not settings.database_url:
        raise ValueError("database_url is required to build an API (the local stack fills it in)")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url)
        instrument_engine(engine)
        storage = ObjectStore(settings.resolved_storage_uri)
        state = AppState(
            service=service,
            settings=settings,
            engine=engine,
            sessions=session_factory(engine, storage),
            spark=SparkSessionFactory.for_jobs(settings) if settings.spark_remote else None,
            storage=storage,
            api_keys=ApiKeyRegistry.from_json(settings.api_keys),
            registry=registry,
            object_store=object_store,
        )
        app.state.strata = state
        try:
            for hook in on_startup:
                await hook(app)
            yield
        finally:
            for hook in on_shutdown:
                await hook(app)
            if state.background is not None:
                await state.background.close()
            if state.spark is not None:
                state.spark.close()
            await engine.dispose()

    app = FastAPI(
        title=title,
        description=description,
        version="0.1.0",
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        dependencies=[Depends(refuse_unstorable_text)],
    )
    # Before the lifespan: the server that sets it on SIGTERM holds the app, not its lifespan state.
    app.state.drain = Drain()
    registry = CollectorRegistry()
    install_problem_handlers(app)
    install_metrics(app, registry, service)
    object_store = ObjectStoreMetrics(registry)
    install_request_context(app, service)
    app.include_router(health_router)
    for router in routers:
        app.include_router(router, dependencies=[Depends(path_fields)])
    install_openapi(app)
    return app
