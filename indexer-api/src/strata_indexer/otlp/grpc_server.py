"""OTLP/gRPC: the Collector's `otlp` exporter and the SDKs' gRPC exporters, on `STRATA_OTLP_GRPC_PORT` in
indexer-api's process beside its HTTP port (off unless set). The same use case as OTLP/HTTP (`service.export`):
the same indexes, late data, group commit and answers; the key comes in the call's `authorization` (or
`x-api-key`) metadata and an index may be named by `x-strata-index`. gRPC carries its own compression and framing,
so a request here is the serialized Export*Request itself.

Not behind the proxy (gRPC is not HTTP/1.1): the proxy's per-tenant rate and concurrency limits do not apply to
this door.
"""

from __future__ import annotations

import logging
import re

import grpc
from fastapi import FastAPI
from grpc import aio
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.api_keys import ApiKeyRegistry, authorize
from strata_core.config import Settings
from strata_core.domain.wire_types import INDEX_ID_PATTERN
from strata_core.errors import BadRequest, PayloadTooLarge, StrataError
from strata_core.principal import Scope
from strata_indexer.ingest.service import Ingest
from strata_indexer.otlp import wire
from strata_indexer.otlp.schemas import Signal, default_index_id
from strata_indexer.otlp.service import SIGNALS, export

log = logging.getLogger("strata.otlp.grpc")

_SERVICES = {Signal.LOGS: "opentelemetry.proto.collector.logs.v1.LogsService",
             Signal.TRACES: "opentelemetry.proto.collector.trace.v1.TraceService",
             Signal.METRICS: "opentelemetry.proto.collector.metrics.v1.MetricsService"}
# The gRPC status of each HTTP status an export can answer; UNAVAILABLE is the one exporters retry.
_CODES = {400: grpc.StatusCode.INVALID_ARGUMENT, 401: grpc.StatusCode.UNAUTHENTICATED,
          403: grpc.StatusCode.PERMISSION_DENIED, 404: grpc.StatusCode.NOT_FOUND,
          413: grpc.StatusCode.RESOURCE_EXHAUSTED, 415: grpc.StatusCode.INVALID_ARGUMENT,
          422: grpc.StatusCode.INVALID_ARGUMENT, 503: grpc.StatusCode.UNAVAILABLE}
# gRPC's own bound on a message is a signed 32-bit length.
_MAX_GRPC_MESSAGE = 2**31 - 1


def _key(metadata: dict[str, str]) -> str | None:
    bearer = metadata.get("authorization", "")
    if bearer.lower().startswith("bearer "):
        return bearer[len("bearer "):].strip()
    return metadata.get("x-api-key")


def _handler(api_keys: ApiKeyRegistry, max_ingest_bytes: int, sessions: async_sessionmaker[AsyncSession],
             ingest: Ingest, signal: Signal) -> grpc.RpcMethodHandler:
    spec = SIGNALS[signal]

    async def export_call(data: bytes, context: aio.ServicerContext) -> bytes:
        metadata = {k.lower(): v for k, v in context.invocation_metadata() if isinstance(v, str)}
        try:
            principal = authorize(api_keys, _key(metadata), (Scope.WRITER,))
            index_id = metadata.get("x-strata-index") or default_index_id(signal, principal.tenant)
            if not re.match(INDEX_ID_PATTERN, index_id):
                raise BadRequest(f"x-strata-index {index_id[:80]!r} is not an index id ({INDEX_ID_PATTERN})")
            if len(data) > max_ingest_bytes:
                raise PayloadTooLarge(f"request of {len(data)} bytes exceeds the limit of "
                                      f"{max_ingest_bytes} bytes")
            message = wire.parse(spec.request, spec.raw_request, data, wire.PROTOBUF)
            async with sessions() as session:
                answer = await export(ingest, session, signal, message, index_id=index_id,
                                      partition_id=principal.tenant or "default")
        except StrataError as error:
            await context.abort(_CODES.get(error.status, grpc.StatusCode.INTERNAL), error.detail)
        return answer.SerializeToString()

    # No (de)serializers: the call's bytes are decoded by wire.parse, as OTLP/HTTP's are.
    return grpc.unary_unary_rpc_method_handler(export_call)


async def start_otlp_grpc(app: FastAPI, settings: Settings, api_keys: ApiKeyRegistry,
                          sessions: async_sessionmaker[AsyncSession], ingest: Ingest) -> None:
    """Serves OTLP/gRPC when `otlp_grpc_port` is set; the bound port goes to `app.state`."""
    port = settings.otlp_grpc_port
    app.state.otlp_grpc = None
    if port is None:
        return
    limit = min(settings.max_ingest_bytes + 1, _MAX_GRPC_MESSAGE)
    server = aio.server(options=[("grpc.max_receive_message_length", limit)])
    server.add_generic_rpc_handlers([
        grpc.method_handlers_generic_handler(
            service, {"Export": _handler(api_keys, settings.max_ingest_bytes, sessions, ingest, signal)})
        for signal, service in _SERVICES.items()])
    app.state.otlp_grpc_port = server.add_insecure_port(f"{settings.host}:{port}")
    await server.start()
    app.state.otlp_grpc = server
    log.info("OTLP/gRPC on %s:%d", settings.host, app.state.otlp_grpc_port)


async def stop_otlp_grpc(app: FastAPI) -> None:
    """Shutdown hook: calls in flight get a few seconds to finish."""
    server = getattr(app.state, "otlp_grpc", None)
    if server is not None:
        await server.stop(grace=5)
