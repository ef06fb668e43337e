"""The SQL the README shows for each OTLP signal runs over the default schemas and finds what was sent: the
statements are read from the README itself, so the documentation cannot drift from the schemas."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    AggregationTemporality,
    Histogram,
    HistogramDataPoint,
    Metric,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from tests.fixtures.apps import Keys
from tests.indexer.otlp_stack import OtlpStack

pytestmark = pytest.mark.timeout(120)

README = Path(__file__).resolve().parents[2] / "README.md"
TRACE_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c")
RESOURCE = Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value="checkout"))])


def _readme_statements() -> list[str]:
    section = README.read_text().split("## OpenTelemetry (OTLP) ingest", 1)[1].split("\n## ", 1)[0]
    sql = re.search(r"```sql\n(.*?)```", section, re.S).group(1)
    lines = [line for line in sql.splitlines() if not line.startswith("--")]
    return [statement.strip() for statement in "\n".join(lines).split(";") if statement.strip()]


def _send(stack: OtlpStack, path: str, message) -> None:
    answer = httpx.post(f"{stack.proxy}{path}", content=message.SerializeToString(), timeout=60,
                        headers={**Keys.header(stack.keys.writer_acme), "Content-Type": "application/x-protobuf"})
    assert answer.status_code == 200, answer.text


def test_the_readme_queries_answer_over_the_default_schemas(otlp_stack: OtlpStack):
    now = time.time_ns()
    _send(otlp_stack, "/v1/logs", ExportLogsServiceRequest(resource_logs=[ResourceLogs(resource=RESOURCE, scope_logs=[
        ScopeLogs(log_records=[LogRecord(time_unix_nano=now - i * 10**9, severity_number=17, severity_text="ERROR",
                                         body=AnyValue(string_value=f"payment declined for order {i}"),
                                         trace_id=TRACE_ID, span_id=bytes([i + 1] * 8)) for i in range(3)])])]))
    _send(otlp_stack, "/v1/traces", ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource=RESOURCE, scope_spans=[ScopeSpans(spans=[
            Span(trace_id=TRACE_ID, span_id=bytes([i + 1] * 8), name="POST /pay", kind=Span.SPAN_KIND_SERVER,
                 start_time_unix_nano=now - i * 10**9, end_time_unix_nano=now - i * 10**9 + (i + 1) * 10**6,
                 status={"code": 2 if i == 0 else 1}) for i in range(3)])])]))
    cumulative = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
    _send(otlp_stack, "/v1/metrics", ExportMetricsServiceRequest(resource_metrics=[ResourceMetrics(
        resource=RESOURCE, scope_metrics=[ScopeMetrics(metrics=[
            Metric(name="orders", sum=Sum(aggregation_temporality=cumulative, is_monotonic=True, data_points=[
                NumberDataPoint(time_unix_nano=now - i * 10**9, as_int=10 + i) for i in range(3)])),
            Metric(name="http.server.request.duration", unit="s", histogram=Histogram(
                aggregation_temporality=cumulative, data_points=[HistogramDataPoint(
                    time_unix_nano=now, count=3, sum=0.3, bucket_counts=[1, 2], explicit_bounds=[0.1])])),
        ])])]))

    statements = _readme_statements()
    assert len(statements) == 7
    for sql in statements:
        rows = otlp_stack.query(sql)
        assert rows, f"no rows for the README's {sql!r}"
