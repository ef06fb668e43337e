"""OTLP/gRPC with the OpenTelemetry SDK's own gRPC exporters: indexer-api serving `otlp_grpc_port` takes logs and
spans into the same default indexes as OTLP/HTTP (queried back through the proxy, equal to what was sent), and a
call without a known key is refused as UNAUTHENTICATED with nothing written."""

from __future__ import annotations

import json
import time

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExportResult, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from strata_core.storage import ObjectStore
from tests.fixtures.http_server import serve_in_thread
from tests.helpers import db_snapshot, storage_snapshot
from tests.indexer.otlp_stack import OtlpStack

pytestmark = pytest.mark.timeout(120)


class _Tapped:
    """An exporter that keeps what it exported and the results."""

    def __init__(self, exporter) -> None:
        self.exporter, self.sent, self.results = exporter, [], []

    def export(self, batch):
        self.sent.extend(batch)
        result = self.exporter.export(batch)
        self.results.append(result)
        return result

    def shutdown(self):
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


@pytest.fixture(scope="module")
def grpc_endpoint(otlp_stack: OtlpStack):
    from strata_indexer.app import create_app

    app = create_app(otlp_stack.settings.model_copy(update={"otlp_grpc_port": 0}), background=False)
    with serve_in_thread(app):
        yield f"127.0.0.1:{app.state.otlp_grpc_port}"


def _headers(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"), ("x-strata-index", "otlp-grpc-logs"))


def test_sdk_grpc_logs_and_spans_are_stored_exactly(otlp_stack: OtlpStack, grpc_endpoint: str):
    resource = Resource.create({"service.name": "grpc-svc", "cloud.region": "r1"})
    logs = _Tapped(OTLPLogExporter(endpoint=grpc_endpoint, insecure=True, headers=_headers(otlp_stack.keys.writer_acme),
                                   compression=None))
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    logger = provider.get_logger("grpc.scope")
    now = time.time_ns()
    for i in range(5):
        logger.emit(timestamp=now + i, severity_number=SeverityNumber.WARN, severity_text="WARN",
                    body=f"over grpc {i}", attributes={"i": i, "tags": ["x", "y"]})
    provider.shutdown()
    assert logs.results and all(r is LogRecordExportResult.SUCCESS for r in logs.results)
    rows = otlp_stack.query('SELECT time_unix_nano, body, severity_text, service_name, attributes, resource_attributes '
                            'FROM "otlp-grpc-logs" ORDER BY time_unix_nano')
    sent = sorted((r.log_record for r in logs.sent), key=lambda r: r.timestamp)
    assert [(r["time_unix_nano"], r["body"], r["severity_text"], r["service_name"], json.loads(r["attributes"]))
            for r in rows] == [(s.timestamp, s.body, "WARN", "grpc-svc", {"i": s.attributes["i"], "tags": ["x", "y"]})
                               for s in sent]
    assert json.loads(rows[0]["resource_attributes"])["cloud.region"] == "r1"

    spans = _Tapped(OTLPSpanExporter(endpoint=grpc_endpoint, insecure=True,
                                     headers=(("authorization", f"Bearer {otlp_stack.keys.writer_acme}"),)))
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    with tracer_provider.get_tracer("grpc.scope").start_as_current_span("grpc-span", attributes={"n": 1}):
        pass
    tracer_provider.shutdown()
    assert spans.results == [SpanExportResult.SUCCESS]
    [span] = spans.sent
    found = otlp_stack.query(f'SELECT name, attributes FROM "otel-traces-acme" '
                             f"WHERE span_id = '{span.context.span_id:016x}'")
    assert found == [{"name": "grpc-span", "attributes": '{"n":1}'}]


async def test_a_call_without_a_known_key_is_refused_and_writes_nothing(otlp_stack: OtlpStack, grpc_endpoint: str):
    before = (await db_snapshot(otlp_stack.settings.database_url),
              storage_snapshot(ObjectStore(otlp_stack.settings.resolved_storage_uri)))
    exporter = OTLPLogExporter(endpoint=grpc_endpoint, insecure=True, headers=_headers("no-such-key"), timeout=10)
    provider = LoggerProvider()
    tapped = _Tapped(exporter)
    provider.add_log_record_processor(SimpleLogRecordProcessor(tapped))
    provider.get_logger("x").emit(body="refused")
    provider.shutdown()
    assert tapped.results == [LogRecordExportResult.FAILURE]
    after = (await db_snapshot(otlp_stack.settings.database_url),
             storage_snapshot(ObjectStore(otlp_stack.settings.resolved_storage_uri)))
    assert after == before
