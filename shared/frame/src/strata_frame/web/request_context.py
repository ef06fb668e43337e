"""Ties each request to its logs and traces: a request id (the caller's `x-request-id`, e.g. the proxy's, or a
new one) in the log context of everything the request runs and echoed on the response, the index, job and
split named in the route's path added once routing knows them, and the app's server spans when tracing is on."""

from __future__ import annotations

import re
import uuid

from fastapi import FastAPI, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata_core.observability.context import annotate, log_context
from strata_core.observability.tracing import SERVICE_NAMES
from strata_frame.web.tracing import instrument_app

REQUEST_ID = "x-request-id"
# A caller's id is logged and echoed verbatim, so only a plain token is taken; anything else gets a new one.
_VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
# Path parameters worth a field on every line of the request, by the field they become.
_PATH_FIELDS = {"index_id": "index", "job_id": "job_id", "split_id": "split_id"}


def request_id_from(header: str | None) -> str:
    if header and _VALID_REQUEST_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


class RequestContext:
    """Pure ASGI, so the context it sets is the one the route, its tasks and uvicorn's access line all see. Over
    the lifespan too: background work started at startup logs under the app's service name."""

    def __init__(self, app: ASGIApp, service: str) -> None:
        self.app = app
        self.service = SERVICE_NAMES.get(service, service)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            with log_context(service=self.service):
                await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        request_id = request_id_from(headers.get(REQUEST_ID.encode(), b"").decode("latin-1") or None)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_headers = list(message.get("headers", []))
                if not any(name.lower() == REQUEST_ID.encode() for name, _ in response_headers):
                    response_headers.append((REQUEST_ID.encode(), request_id.encode()))
                message = {**message, "headers": response_headers}
            await send(message)

        with log_context(service=self.service, request_id=request_id):
            await self.app(scope, receive, send_with_id)


async def path_fields(request: Request) -> None:
    """Router dependency: the path's index, job and split ids join the request's log context."""
    annotate(**{field: request.path_params[name] for name, field in _PATH_FIELDS.items()
                if name in request.path_params})


def install_request_context(app: FastAPI, service: str) -> None:
    """Request ids and log context for every request of `app`, and its server spans when tracing is on. Call it
    after the app's other middleware is added: the last added runs first, and the request id must be set before
    anything else runs."""
    instrument_app(app)
    app.add_middleware(RequestContext, service=service)
