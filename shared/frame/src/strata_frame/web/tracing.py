"""Server spans of an API's requests and a span per SQL statement, with the provider tracing installed
(`strata_core.observability.tracing.configure_tracing`); nothing when tracing is off. Here, not beside
`configure_tracing`, because the FastAPI and SQLAlchemy instrumentations import the web stack and the database
driver, which the core does not."""

from __future__ import annotations

from typing import Any

from strata_core.observability.tracing import tracer_provider

# Operations endpoints polled by probes and Prometheus: a trace each would drown the interesting ones.
EXCLUDED_URLS = "/healthz,/readyz,/metrics,/ui"


def instrument_app(app: Any) -> None:
    """A server span per request, continuing the caller's trace (`traceparent`); only when tracing is on."""
    provider = tracer_provider()
    if provider is not None:
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

        FastAPIInstrumentor.instrument_app(app, tracer_provider=provider, excluded_urls=EXCLUDED_URLS)


def instrument_engine(engine: Any) -> None:
    """A span per SQL statement of this (async) engine; only when tracing is on."""
    provider = tracer_provider()
    if provider is not None:
        from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

        # skip_dep_check: the instrumentation declares sqlalchemy < 2.1 but only hooks the engine events
        # (before/after_cursor_execute, handle_error), which 2.1 keeps; the trace test shows the SQL spans.
        SQLAlchemyInstrumentor().instrument(engine=getattr(engine, "sync_engine", engine), skip_dep_check=True,
                                            tracer_provider=provider, enable_commenter=False)
