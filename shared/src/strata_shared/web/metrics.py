"""Prometheus metrics: one registry per app (several apps share a process in tests), HTTP request metrics by
route template, and the /metrics endpoint."""

from __future__ import annotations

import time

from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from strata_shared.web.problems import problem_responses


class HttpMetrics:
    def __init__(self, registry: CollectorRegistry, service: str) -> None:
        self.service = service
        self.requests = Counter("strata_http_requests", "HTTP requests handled",
                                ["service", "method", "route", "status"], registry=registry)
        self.latency = Histogram("strata_http_request_duration_seconds", "HTTP request latency",
                                 ["service", "method", "route"], registry=registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))


def _route_template(request: Request) -> str:
    # Label by template, never by raw path: ids in paths would explode the series count; the router records
    # the matched route in the shared scope.
    route = request.scope.get("route")
    return getattr(route, "path", None) or "unmatched"


def install_metrics(app: FastAPI, registry: CollectorRegistry, service: str) -> HttpMetrics:
    metrics = HttpMetrics(registry, service)

    @app.middleware("http")
    async def _observe(request: Request, call_next):
        started = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            route = _route_template(request)
            metrics.requests.labels(service, request.method, route, str(status)).inc()
            metrics.latency.labels(service, request.method, route).observe(time.perf_counter() - started)

    @app.get("/metrics", operation_id="metrics", tags=["operations"], include_in_schema=True,
             response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}, **problem_responses(500)})
    async def metrics_endpoint() -> Response:
        """Prometheus exposition of this process's metrics."""
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return metrics
