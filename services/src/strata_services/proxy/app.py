"""The proxy app: checks the API key, applies the tenant's rate and concurrency limits, stamps a request id, and
streams each request and response through without buffering either, to a replica in rotation of the API that serves
its path (`routes`; each API's replicas health-checked in `upstreams`). It also serves the web console at /ui."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

import anyio
from fastapi import FastAPI, Request, Security
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CollectorRegistry, Counter, Gauge
from starlette.types import Receive, Scope, Send

from strata_core.api_keys import ApiKeyRegistry
from strata_core.config import Settings
from strata_core.errors import PROBLEM_BASE, TooManyRequests, Unavailable
from strata_core.observability.context import current_request_id
from strata_core.observability.tracing import client_span
from strata_core.principal import Principal
from strata_frame.web.auth import presented_key
from strata_frame.web.health import Drain, draining_response
from strata_frame.web.metrics import install_metrics
from strata_frame.web.openapi import install_openapi
from strata_frame.web.problems import PROBLEM_MEDIA_TYPE, install_problem_handlers, problem_responses
from strata_frame.web.request_context import REQUEST_ID, install_request_context
from strata_frame.web.tenant_limits import Slot, TenantLimits
from strata_services.console import install_console
from strata_services.proxy.pacing import RejectionPacer
from strata_services.proxy.routes import APIS, QUERY, api_for_path
from strata_services.proxy.upstream_http import UpstreamError, UpstreamPool, UpstreamResponse, UpstreamUnreachable
from strata_services.proxy.upstreams import Upstreams

# Request bodies and finished responses up to this size are read whole before forwarding (see _body, forward).
_WHOLE_BODY_BYTES = 256 * 1024
# Hop-by-hop headers (RFC 9110 section 7.6.1) are not forwarded; nor is Expect, which the proxy's own server
# answered, nor the framing, which each hop sets for itself.
_HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te", b"trailer",
               b"transfer-encoding", b"upgrade", b"host", b"content-length", b"expect"}
_REQUEST_ID = REQUEST_ID.encode()
# A caller's trace context is not passed on as sent: the proxy's own client span, continuing it, is the parent.
_TRACE_CONTEXT = {b"traceparent", b"tracestate"}
# What a forwarded request can answer: whatever the API serving its path answers (its successes in its media
# types, its errors), plus the proxy's own 401, 429 and 502/503 when no upstream answers.
_RESULT_MEDIA_TYPES = ("application/json", "application/x-ndjson", "application/vnd.apache.arrow.stream")
_FORWARDED_RESPONSES = {
    200: {"description": "the API's answer, streamed through",
          "content": {media_type: {} for media_type in _RESULT_MEDIA_TYPES}},
    201: {"description": "the API's answer (an index created)", "content": {"application/json": {}}},
    202: {"description": "the API's answer (an asynchronous plan submitted, a query being cancelled)",
          "content": {"application/json": {}}},
    204: {"description": "the API's answer (an index deleted)"},
    **problem_responses(400, 403, 404, 405, 406, 409, 413, 415, 429, 502, 503, 504),
}


class _UpstreamStream(StreamingResponse):
    """The upstream's response relayed to the client; the tenant's slot and the upstream response are let go
    however the relay ends. This is done around the whole response rather than only in the body generator's
    finally: a generator cancelled before its first chunk, or while the response is blocked sending to the
    client, is never resumed, so its finally would not run until garbage collection."""

    def __init__(self, upstream: UpstreamResponse, slot: Slot, headers: list[tuple[bytes, bytes]]) -> None:
        super().__init__(upstream.chunks(), status_code=upstream.status)
        self.raw_headers.extend(headers)
        self._upstream = upstream
        self._slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slot.release()
            await self._upstream.aclose()


def _raw_target(request: Request) -> str:
    """The path and query exactly as the client sent them, still percent-encoded: decoded, a `%3F` would turn
    into a query and a control character would make an invalid URL."""
    target = request.scope.get("raw_path") or request.url.path.encode()
    if query := request.scope.get("query_string"):
        target += b"?" + query
    return target.decode("latin-1")


async def _body(request: Request) -> bytes | AsyncIterator[bytes]:
    """A small body (a query, an EXPLAIN) whole, sent on with its length; anything larger or of unknown length
    (an ingest) streamed through. Streamed, every request went upstream chunked, which costs both ends more than
    the few bytes of a query."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) <= _WHOLE_BODY_BYTES:
        return await request.body()
    return request.stream()


def create_proxy_app(settings: Settings) -> FastAPI:
    """The proxy in front of the replicas `settings.upstream_urls` lists for each API."""
    keys = ApiKeyRegistry.from_json(settings.api_keys)
    limits = TenantLimits.from_settings(settings.proxy)
    pacer = RejectionPacer(settings.proxy_reject_delay_secs, settings.proxy_max_held_rejections, anyio.sleep)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        pool = UpstreamPool()
        # The replicas' own readiness checks take up to readiness_timeout_secs; the way there and back is added.
        pools = {api: Upstreams(api, settings.upstream_urls(api), pool, settings.proxy_health_interval_secs,
                                settings.readiness_timeout_secs + 2.0) for api in APIS}
        app.state.pool = pool
        app.state.upstreams = pools
        for upstreams in pools.values():
            upstreams.start()
        try:
            yield
        finally:
            for upstreams in pools.values():
                await upstreams.stop()
            pool.close()

    app = FastAPI(title="Strata query proxy", version="0.1.0", lifespan=lifespan,
                  generate_unique_id_function=lambda route: route.name)
    # `strata serve` drains the proxy as it does the APIs: its own /readyz says so first.
    app.state.drain = Drain()
    install_problem_handlers(app)
    registry = CollectorRegistry()
    install_metrics(app, registry, "proxy")
    install_request_context(app, "proxy")
    install_console(app)
    rejections = Counter("strata_proxy_rejections", "Requests the proxy refused with 429, by limit and tenant",
                         ["reason", "tenant"], registry=registry)

    Gauge("strata_proxy_rejections_held", "Refused requests being held before their 429 is sent",
          registry=registry).set_function(lambda: pacer.held)

    async def admit(principal: Principal, request_id: str) -> Slot:
        """The caller's slot under its limits (`TenantLimits.admit`), or a 429 after the pacer's hold."""
        admitted = limits.admit(principal)
        if isinstance(admitted, Slot):
            return admitted
        rejections.labels(admitted.reason, admitted.key).inc()
        held = await pacer.hold()
        raise TooManyRequests(admitted.detail(held), headers={
            "Retry-After": str(math.ceil(admitted.retry_in(held))), REQUEST_ID: request_id})

    @app.get("/healthz", tags=["operations"], responses=problem_responses(500))
    async def healthz() -> dict[str, str]:
        """Liveness of the proxy itself."""
        return {"status": "ok", "service": "proxy"}

    @app.get("/readyz", tags=["operations"], response_model=dict[str, object], responses=problem_responses(503))
    async def readyz(request: Request):
        """Ready when every API has a replica in rotation (its replicas asked afresh); lists each API's replicas
        with their state: ready, unready (a dependency of theirs is down), draining or down."""
        if request.app.state.drain.draining:
            return draining_response("proxy", request.app.state.drain)
        pools: dict[str, Upstreams] = request.app.state.upstreams
        await asyncio.gather(*(upstreams.check_all() for upstreams in pools.values()))
        states = {api: {url: str(state) for url, state in upstreams.states.items()} for api, upstreams in pools.items()}
        unserved = [api for api, upstreams in pools.items() if not upstreams.rotation()]
        if unserved:
            detail = "no replica in rotation for " + "; ".join(
                f"{api} ({', '.join(f'{url} {state}' for url, state in states[api].items())})" for api in unserved)
            # The pools go with the problem, as an API's checks go with its own 503.
            return JSONResponse({"type": PROBLEM_BASE + Unavailable.slug, "title": Unavailable.title, "status": 503,
                                 "detail": detail, "instance": "/readyz", "errors": [], "upstreams": states},
                                status_code=503, media_type=PROBLEM_MEDIA_TYPE)
        return {"status": "ready", "upstreams": states}

    async def send_upstream(api: str, request: Request, request_id: str) -> tuple[str, UpstreamResponse]:
        """Sends the request to a replica of `api` in rotation; returns the replica and its answer's head.

        A replica that fails before the request was sent to it (connect refused or timed out, or a kept-alive
        connection found closed) is marked down and the request goes to the next replica in rotation instead of
        a 503. Which requests are replayable, i.e. sent once more when a kept-alive connection turns out closed
        before any answer: reads (GET, HEAD, PUT, DELETE: idempotent by their method) and every query-api request
        (they only read; a plan submitted twice is one more plan to poll). Not replayable: the other POSTs, an
        ingest above all, which sent twice is written twice; streamed through (over 256 KiB) it could not even be
        sent again, its body gone by, and held whole it could but must not. Such a request still goes to the next
        replica when no connection could be made at all, since nothing of it was sent (UpstreamUnreachable).
        A failure once the request may have been taken in is a 503 and never a retry elsewhere: a request that
        brought one replica down must not walk through the others."""
        upstreams: Upstreams = request.app.state.upstreams[api]
        pool: UpstreamPool = request.app.state.pool
        body = await _body(request)
        raw_target = _raw_target(request)
        tried: list[str] = []
        while (target := upstreams.pick(tried)) is not None:
            with client_span(request.method, target + raw_target) as (span, trace_headers):
                headers = [(k, v) for k, v in request.scope["headers"]
                           if k.lower() not in _HOP_BY_HOP and not (trace_headers and k.lower() in _TRACE_CONTEXT)]
                headers.append((_REQUEST_ID, request_id.encode()))
                headers.extend((k.encode(), v.encode()) for k, v in trace_headers.items())
                try:
                    upstream = await pool.request(request.method, target, raw_target, headers, body,
                                                  replayable=api == QUERY or None)
                except UpstreamUnreachable as exc:
                    upstreams.mark_down(target, str(exc))
                    tried.append(target)
                    continue
                except UpstreamError as exc:
                    upstreams.mark_down(target, str(exc))
                    raise Unavailable(f"{api} {target} did not answer: {exc}",
                                      headers={REQUEST_ID: request_id}) from exc
                span.set_attribute("http.response.status_code", upstream.status)
                return target, upstream
        unreached = f" ({', '.join(tried)} could not be reached)" if tried else ""
        raise Unavailable(f"no {api} replica in rotation{unreached}", headers={REQUEST_ID: request_id})

    async def forward(path: str, request: Request,
                      key: Annotated[str | None, Security(presented_key)]) -> Response:
        """Forward an authenticated /v1 request to a replica of the API that serves its path, streaming both
        ways. A tenant over its request rate or its cap on requests in flight gets a 429 with `Retry-After`."""
        principal = keys.authenticate(key)
        request_id = current_request_id()
        api = api_for_path(path)
        slot = await admit(principal, request_id)
        try:
            target, upstream = await send_upstream(api, request, request_id)
        except BaseException:
            # Nothing is streaming yet, so nothing else will give the slot back.
            slot.release()
            raise
        # The upstream echoes the request id it was given; it is set here once, whatever the upstream said.
        response_headers = [(k, v) for k, v in upstream.headers
                            if k.lower() not in _HOP_BY_HOP and k.lower() != _REQUEST_ID]
        response_headers.append((_REQUEST_ID, request_id.encode()))
        length = upstream.content_length
        if length is not None and length <= _WHOLE_BODY_BYTES:
            # A small finished answer (a query's few rows, a plan, a problem) is read whole and sent with its
            # length: relayed as a stream it cost a task group and a relay per chunk, more than its bytes. Bytes as
            # the upstream sent them: any content encoding stays the upstream's.
            try:
                body = await upstream.read()
            except UpstreamError as exc:
                raise Unavailable(f"{api} {target} broke off its answer: {exc}",
                                  headers={REQUEST_ID: request_id}) from exc
            finally:
                slot.release()
                await upstream.aclose()
            response = Response(body, status_code=upstream.status)
            response.raw_headers.extend(response_headers)
            return response
        # From here the response owns the slot: a long streaming query counts as running until its body is done
        # or its client has gone.
        return _UpstreamStream(upstream, slot, response_headers)

    # One route per method, so each has its own operationId.
    for method in ("GET", "POST", "PUT", "DELETE"):
        app.add_api_route("/v1/{path:path}", forward, methods=[method], name=f"forward_{method.lower()}",
                          tags=["proxy"], responses=_FORWARDED_RESPONSES)
    install_openapi(app)
    return app
