"""Everything Strata shows outside while a test runs, collected so the test can assert a secret is nowhere in it:
every response of the watched clients (status, headers, body: problems included), every finished span (name,
attributes, events such as recorded exceptions, status), every log record at any level with its traceback, and
the session's Spark Connect server log (where the executors' failures land)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

# The test's own boto3 client (the listing made outside Strata, which never uses boto) logs its signed requests,
# with the access key id, at DEBUG.
OUTSIDE_STRATA = ("botocore", "boto3", "s3transfer", "urllib3")


class ShownText:
    def __init__(self, caplog: pytest.LogCaptureFixture, spark_logs: list[Path]) -> None:
        self.caplog = caplog
        self.spark_logs = spark_logs
        self.responses: list[str] = []
        self.exporter = None

    async def _record(self, response: httpx.Response) -> None:
        await response.aread()
        self.responses.append(f"{response.status_code} {dict(response.headers)} {response.text}")

    def texts(self) -> dict[str, str]:
        spans = []
        for span in self.exporter.get_finished_spans():
            spans.append(f"{span.name} {dict(span.attributes or {})} {span.status.description}")
            spans.extend(f"{event.name} {dict(event.attributes or {})}" for event in span.events)
        formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
        logs = [formatter.format(record) for record in self.caplog.records
                if not record.name.startswith(OUTSIDE_STRATA)]
        return {"responses": "\n".join(self.responses), "spans": "\n".join(spans), "logs": "\n".join(logs),
                "spark server log": "\n".join(p.read_text(errors="replace") for p in self.spark_logs)}

    def assert_nowhere(self, *secrets: str) -> None:
        assert self.responses and self.caplog.records, "nothing was watched"
        for where, text in self.texts().items():
            for secret in secrets:
                assert secret not in text, f"{secret!r} shows in the {where}"


@contextmanager
def watching(caplog: pytest.LogCaptureFixture, tmp_path_factory: pytest.TempPathFactory,
             *clients: httpx.AsyncClient) -> Iterator[ShownText]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    # The local server the session started (tests/fixtures/spark.py) logs under its work directory.
    spark_logs = sorted(tmp_path_factory.getbasetemp().glob("spark-connect*/logs/*.log"))
    shown = ShownText(caplog, spark_logs)
    shown.exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(shown.exporter))
    for client in clients:
        client.event_hooks["response"].append(shown._record)
    caplog.set_level(logging.DEBUG)
    try:
        yield shown
    finally:
        for client in clients:
            client.event_hooks["response"].remove(shown._record)
        # The provider keeps its processors: a stopped exporter records nothing more.
        shown.exporter.shutdown()
