"""OTLP/HTTP routes: `POST /v1/logs`, `/v1/traces`, `/v1/metrics`, as the OpenTelemetry Collector's `otlphttp`
exporter and the SDKs' OTLP/HTTP exporters send them (https://opentelemetry.io/docs/specs/otlp/#otlphttp).

Their contract is the OTLP specification, not Strata's: a failure answers a google.rpc.Status in the request's
encoding (protobuf or JSON) rather than problem+json, and 429/503 carry Retry-After, which exporters honour when
they retry. So they are left out of the OpenAPI document, whose every error is a problem. A missing or refused
key is still the API's problem+json 401/403: exporters look only at the status of those.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from strata_core.domain.wire_types import INDEX_ID_PATTERN
from strata_core.errors import BadRequest, StrataError
from strata_frame.web.auth import Principal, Scope, require
from strata_frame.web.deps import Session, State
from strata_indexer.ingest.body import read_limited
from strata_indexer.ingest.dependencies import IngestWrites
from strata_indexer.ingest.service import Ingest
from strata_indexer.otlp import wire
from strata_indexer.otlp.schemas import Signal, default_index_id
from strata_indexer.otlp.service import decode_request, export

router = APIRouter(prefix="/v1", tags=["otlp"])

INDEX_HEADER = "X-Strata-Index"
# gRPC status codes of the HTTP statuses an export can answer (google.rpc.Code).
_GRPC_CODES = {400: 3, 403: 7, 404: 5, 409: 10, 413: 8, 415: 3, 422: 3, 429: 8, 503: 14}
# How long an exporter waits before retrying a commit that failed on a dependency (PostgreSQL, storage).
_UNAVAILABLE_RETRY_AFTER_SECS = 5


async def _export(signal: Signal, request: Request, session: Session, state: State, ingest: Ingest,
                  principal: Principal) -> Response:
    # A failure is answered in the request's encoding; one the request does not name gets protobuf, OTLP's default.
    encoding = wire.JSON if request.headers.get("content-type", "").startswith(wire.JSON) else wire.PROTOBUF
    try:
        partition = principal.tenant or "default"
        index_id = request.headers.get(INDEX_HEADER) or default_index_id(signal, principal.tenant)
        if not re.match(INDEX_ID_PATTERN, index_id):
            raise BadRequest(f"{INDEX_HEADER} {index_id[:80]!r} is not an index id ({INDEX_ID_PATTERN})")
        body = await read_limited(request, state.settings.max_ingest_bytes)
        message, encoding = decode_request(signal, body, request.headers.get("content-type"),
                                           request.headers.get("content-encoding"), state.settings.max_ingest_bytes)
        answer = await export(ingest, session, signal, message, index_id=index_id, partition_id=partition)
    except StrataError as error:
        headers = dict(error.headers)
        if error.status == 503:
            headers.setdefault("Retry-After", str(_UNAVAILABLE_RETRY_AFTER_SECS))
        return Response(wire.status(_GRPC_CODES.get(error.status, 13), error.detail, encoding),
                        status_code=error.status, media_type=encoding, headers=headers)
    return Response(wire.encode(answer, encoding), media_type=encoding)


def _route(signal: Signal):
    async def route(request: Request, session: Session, state: State, ingest: IngestWrites,
                    principal: Annotated[Principal, Depends(require(Scope.WRITER))]) -> Response:
        return await _export(signal, request, session, state, ingest, principal)

    route.__name__ = f"otlp_export_{signal}"
    route.__doc__ = f"OTLP/HTTP export of {signal} (protobuf or JSON, gzip or not) into the tenant's {signal} index."
    return route


for _signal in Signal:
    router.add_api_route(f"/{_signal}", _route(_signal), methods=["POST"], include_in_schema=False)
