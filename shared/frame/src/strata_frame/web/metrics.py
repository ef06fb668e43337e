"""Prometheus metrics: one registry per app (several apps share a process in tests), HTTP request metrics by
route template, and the /metrics endpoint."""

from __future__ import annotations

import time

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata_frame.web.problems import problem_responses


class HttpMetrics:
    def __init__(self, registry: CollectorRegistry, service: str) -> None:
        self.service = service
        self.requests = Counter("strata_http_requests", "HTTP requests handled",
                                ["service", "method", "route", "status"], registry=registry)
        self.latency = Histogram("strata_http_request_duration_seconds", "HTTP request latency",
                                 ["service", "method", "route"], registry=registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))


def _route_template(scope: Scope) -> str:
    # Label by template, never by raw path: ids in paths would explode the series count; the router records
    # the matched route in the shared scope.
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


class _ObserveRequests:
    """Pure ASGI rather than `@app.middleware("http")`: Starlette's BaseHTTPMiddleware runs each request in a
    task of its own and relays the response through a memory stream, a few hundred microseconds per request on
    every API and the proxy (docs/benchmarks.md, "Query engines"). The time is until the response is sent."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            route = _route_template(scope)
            metrics, method = self.metrics, scope["method"]
            metrics.requests.labels(metrics.service, method, route, str(status)).inc()
            metrics.latency.labels(metrics.service, method, route).observe(time.perf_counter() - started)


def install_metrics(app: FastAPI, registry: CollectorRegistry, service: str) -> HttpMetrics:
    metrics = HttpMetrics(registry, service)
    app.add_middleware(_ObserveRequests, metrics=metrics)

    @app.get("/metrics", operation_id="metrics", tags=["operations"], include_in_schema=True,
             response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}, **problem_responses(500)})
    async def metrics_endpoint() -> Response:
        """Prometheus exposition of this process's metrics."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return metrics
