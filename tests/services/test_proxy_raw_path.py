"""The proxy forwards the path and query exactly as the client sent them: decoded and re-joined, a `%3F` in a path
segment would become a query, and a control character an invalid URL (a 500 the fuzzer found)."""

from __future__ import annotations

import json

import httpx
from fastapi import FastAPI, Request

from strata_core.config import Settings
from strata_services.proxy.app import create_proxy_app
from tests.fixtures.http_server import serve_in_thread

KEY = "raw-path-admin-key"


def _echo_upstream() -> FastAPI:
    app = FastAPI()

    # The proxy asks /readyz of its upstreams.
    @app.get("/healthz")
    @app.get("/readyz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/{rest:path}")
    async def echo(request: Request) -> dict[str, str]:
        return {"raw_path": request.scope["raw_path"].decode(), "query": request.scope["query_string"].decode()}

    return app


def test_path_and_query_are_forwarded_still_encoded() -> None:
    settings = Settings(api_keys=json.dumps({KEY: {"scopes": ["admin"]}}), proxy_rate_per_sec=1000.0,
                        proxy_burst=1000)
    with serve_in_thread(_echo_upstream()) as upstream, \
            serve_in_thread(create_proxy_app(settings.model_copy(update={"query_upstreams": upstream}))) as proxy:
        response = httpx.get(f"{proxy}/v1/query/plans/a%3Fb%09c%2F?x=%2F1&y=%00",
                             headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.json() == {"raw_path": "/v1/query/plans/a%3Fb%09c%2F", "query": "x=%2F1&y=%00"}
