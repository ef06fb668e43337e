"""The proxy app: checks the API key, stamps a request id, and streams each request and response through to a
healthy query-api instance without buffering either."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from prometheus_client import CollectorRegistry

from strata_services.proxy.upstreams import Upstreams
from strata_shared.config import Settings
from strata_shared.errors import Unavailable
from strata_shared.web.auth import ApiKeyRegistry, request_key
from strata_shared.web.metrics import install_metrics
from strata_shared.web.problems import install_problem_handlers, problem_responses

# Hop-by-hop headers (RFC 9110 section 7.6.1) are not forwarded.
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
               "transfer-encoding", "upgrade", "host", "content-length"}
REQUEST_ID = "x-request-id"


def create_proxy_app(settings: Settings, upstream_urls: list[str]) -> FastAPI:
    keys = ApiKeyRegistry.from_json(settings.api_keys)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None)) as client:
            upstreams = Upstreams(upstream_urls, client)
            app.state.client = client
            app.state.upstreams = upstreams
            upstreams.start()
            try:
                yield
            finally:
                await upstreams.stop()

    app = FastAPI(title="Strata query proxy", version="0.1.0", lifespan=lifespan,
                  generate_unique_id_function=lambda route: route.name)
    install_problem_handlers(app)
    install_metrics(app, CollectorRegistry(), "proxy")

    @app.get("/healthz", tags=["operations"], responses=problem_responses(500))
    async def healthz() -> dict[str, str]:
        """Liveness of the proxy itself."""
        return {"status": "ok", "service": "proxy"}

    @app.get("/readyz", tags=["operations"], responses=problem_responses(503))
    async def readyz(request: Request) -> dict[str, object]:
        """Ready when at least one query-api upstream is healthy."""
        upstreams: Upstreams = request.app.state.upstreams
        await upstreams.check_once()
        if not any(upstreams.healthy.values()):
            raise Unavailable("no healthy query-api upstream")
        return {"status": "ready", "upstreams": upstreams.healthy}

    @app.api_route("/v1/{path:path}", methods=["GET", "POST", "PUT", "DELETE"], tags=["proxy"],
                   responses=problem_responses(401, 502, 503))
    async def forward(path: str, request: Request) -> StreamingResponse:
        """Forward an authenticated /v1 request to a healthy query-api instance, streaming both ways."""
        keys.authenticate(request_key(request))
        request_id = request.headers.get(REQUEST_ID) or uuid.uuid4().hex
        upstreams: Upstreams = request.app.state.upstreams
        client: httpx.AsyncClient = request.app.state.client
        target = upstreams.pick()
        if target is None:
            raise Unavailable("no healthy query-api upstream", headers={REQUEST_ID: request_id})
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers[REQUEST_ID] = request_id
        upstream_request = client.build_request(
            request.method, f"{target}/v1/{path}", params=request.query_params, headers=headers,
            content=request.stream())
        try:
            upstream = await client.send(upstream_request, stream=True)
        except httpx.HTTPError as exc:
            upstreams.mark_down(target)
            raise Unavailable(f"query-api {target} did not answer: {type(exc).__name__}",
                              headers={REQUEST_ID: request_id}) from exc
        response_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
        response_headers[REQUEST_ID] = request_id

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                await upstream.aclose()

        return StreamingResponse(body(), status_code=upstream.status_code, headers=response_headers)

    return app
