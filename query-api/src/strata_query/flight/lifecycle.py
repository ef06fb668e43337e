"""The Flight SQL server lives and dies with query-api's app: started by the lifespan once the QueryService is
up, stopped before it closes. Stopping drains as HTTP does: results issued but never fetched are given up, calls
in flight (streams included) get the shutdown timeout to finish."""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import CollectorRegistry

from strata_core.api_keys import ApiKeyRegistry
from strata_core.config import Settings
from strata_query.flight.limits import FlightLimits
from strata_query.flight.server import FlightSqlServer
from strata_query.service import QueryService

log = logging.getLogger("strata.query.flight")


def start_flight_server(settings: Settings, service: QueryService, api_keys: ApiKeyRegistry,
                        loop: asyncio.AbstractEventLoop, registry: CollectorRegistry) -> FlightSqlServer:
    location = f"grpc://{settings.host}:{settings.flight_port}"
    try:
        server = FlightSqlServer(location, service, api_keys, loop, FlightLimits(settings, registry))
    except OSError as exc:
        raise RuntimeError(f"query-api's Flight SQL server cannot listen on {location} ({exc}): set "
                           "STRATA_FLIGHT_PORT to a free port") from exc
    log.info("Flight SQL listening on grpc://%s:%d", settings.host, server.port)
    return server


async def stop_flight_server(server: FlightSqlServer, timeout_secs: float) -> None:
    server.issued.give_up_all()
    stopping = asyncio.ensure_future(asyncio.to_thread(server.shutdown))
    try:
        await asyncio.wait_for(asyncio.shield(stopping), timeout_secs)
    except TimeoutError:
        log.warning("Flight SQL calls still running after %.1f s of shutdown: left to the process's exit",
                    timeout_secs)
    # pyarrow's C++ server keeps its Python object alive to the process's end: without this, the QueryService
    # and its engines (DuckDB's objects) would outlive the interpreter's teardown, which DuckDB reports as leaks.
    server.detach()
