"""OpenTelemetry tracing from the standard `OTEL_*` environment variables.

Nothing set, nothing happens: no provider is installed, nothing is instrumented, and the spans Strata opens
through the OpenTelemetry API (`plan_build`, `merge`, `publish`, ...) are the API's no-op spans. Asked for
(`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `OTEL_TRACES_EXPORTER`), the process
gets an SDK provider named after its service, a batching OTLP exporter over http/protobuf (which reads its
endpoint, headers, timeout and compression from the same variables itself), and instrumented httpx clients
(which carry the W3C `traceparent` to the next service); the web frame instruments FastAPI apps and SQLAlchemy
engines with the same provider (`strata_frame.web.tracing`). The proxy's own upstream client carries it through
`client_span`.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import trace

from strata_core.config import otel_environment
from strata_core.observability.context import current_fields

# The service.name each process reports, by the name it is served under.
SERVICE_NAMES = {"planner-api": "strata-planner", "indexer-api": "strata-indexer", "query-api": "strata-query",
                 "proxy": "strata-proxy"}
_SUPPORTED_EXPORTERS = ("otlp", "console", "none")

_configured: dict[str, object] = {}
F = TypeVar("F", bound=Callable[..., Any])


def exporter_from_env(environ: Mapping[str, str]) -> str | None:
    """The span exporter the environment asks for, or None for no tracing. The SDK's own default would be OTLP
    to localhost even with nothing set; Strata exports only when told where to (an endpoint) or explicitly what
    (`OTEL_TRACES_EXPORTER`), so a process nobody configured sends nothing anywhere."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    names = [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    unknown = [n for n in names if n not in _SUPPORTED_EXPORTERS]
    if unknown:
        raise ValueError(f"OTEL_TRACES_EXPORTER={','.join(unknown)} is not supported here: use "
                         f"{', '.join(_SUPPORTED_EXPORTERS)}")
    if len(names) > 1:
        raise ValueError("OTEL_TRACES_EXPORTER names more than one exporter; Strata exports to one")
    if names:
        exporter = None if names[0] == "none" else names[0]
    else:
        endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        exporter = "otlp" if endpoint else None
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if exporter == "otlp" and protocol and protocol.strip() != "http/protobuf":
        raise ValueError(f"OTLP protocol {protocol.strip()!r} is not supported here: Strata exports OTLP as "
                         f"http/protobuf")
    return exporter


def configure_tracing(service: str, environ: Mapping[str, str] | None = None) -> bool:
    """Installs the process's tracer provider when the environment asks for traces; returns whether it did. Once
    per process (the provider is global): `service` is the name it is served under (`SERVICE_NAMES`)."""
    environ = otel_environment() if environ is None else environ
    exporter_name = exporter_from_env(environ)
    if exporter_name is None:
        return False
    if "provider" in _configured:
        return True
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    else:
        exporter = ConsoleSpanExporter()
    # The service name is Strata's, whatever OTEL_SERVICE_NAME says (the stack's processes share one
    # environment); OTEL_RESOURCE_ATTRIBUTES adds the rest (deployment, host, ...).
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAMES.get(service, service)}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
    _configured["provider"] = provider
    return True


def tracing_enabled() -> bool:
    return "provider" in _configured


def tracer_provider() -> Any:
    """The provider `configure_tracing` installed, or None when tracing is off. The web frame instruments FastAPI
    apps and SQLAlchemy engines with it (strata_frame.web.tracing): those instrumentations import the web stack
    and the database driver, which this core does not."""
    return _configured.get("provider")


def shutdown_tracing() -> None:
    """Exports what is still buffered (called when the process stops)."""
    provider = _configured.get("provider")
    if provider is not None:
        provider.shutdown()


@contextmanager
def client_span(method: str, url: str) -> Iterator[tuple[Any, dict[str, str]]]:
    """A client span for an HTTP request sent without httpx, with the headers (`traceparent`, `tracestate`) that
    make the next service's server span its child; when tracing is off, a no-op span and no headers."""
    if not tracing_enabled():
        yield trace.INVALID_SPAN, {}
        return
    from opentelemetry.propagate import inject

    tracer = trace.get_tracer("strata.http", tracer_provider=_configured["provider"])
    with tracer.start_as_current_span(method, kind=trace.SpanKind.CLIENT,
                                      attributes={"http.request.method": method, "url.full": url}) as span:
        headers: dict[str, str] = {}
        inject(headers)
        yield span, headers


def traced(name: str, tracer_name: str = "strata") -> Callable[[F], F]:
    """Runs the function (sync or async) in a span named `name`, carrying the log context's index, job id and
    fencing token as attributes. With tracing off the span is the API's no-op one: the cost is a function call."""
    tracer = trace.get_tracer(tracer_name)

    def attributes() -> dict[str, Any]:
        return {f"strata.{k}": v for k, v in current_fields().items()
                if k in ("index", "job_id", "fencing_token", "queue") and isinstance(v, str | int)}

    def wrap(function: F) -> F:
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with tracer.start_as_current_span(name, attributes=attributes()):
                    return await function(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            with tracer.start_as_current_span(name, attributes=attributes()):
                return function(*args, **kwargs)

        return run  # type: ignore[return-value]

    return wrap


def record_phases(phases: Sequence[tuple[str, float]], attributes: Mapping[str, Any] | None = None) -> None:
    """Child spans of the current span for phases that ran in another process which only timed them (a Spark
    task has no exporter): laid end to end and ending now, each marked `strata.timed_in=spark_task`."""
    tracer = trace.get_tracer("strata")
    start = time.time_ns() - sum(int(secs * 1e9) for _, secs in phases)
    for name, secs in phases:
        span = tracer.start_span(name, start_time=start,
                                 attributes={"strata.timed_in": "spark_task", **(attributes or {})})
        start += int(secs * 1e9)
        span.end(end_time=start)
