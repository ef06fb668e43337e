"""The OpenTelemetry Python SDK's own OTLP/HTTP exporters, configured as a user would (the proxy's base URL in
OTEL_EXPORTER_OTLP_ENDPOINT, the key in OTEL_EXPORTER_OTLP_HEADERS), send logs, spans and metric points to
Strata; every item an exporter sent is then returned by a query over the tenant's default index, equal field by
field, attributes included. The exporters are tapped (a subclass that keeps what it exports), so "what was sent" is
the SDK's own batch, not a list the test wrote."""

from __future__ import annotations

import json
import time

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    Gauge,
    Histogram,
    MetricExportResult,
    PeriodicExportingMetricReader,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from tests.indexer.otlp_stack import OtlpStack

pytestmark = pytest.mark.timeout(180)

RESOURCE = {"service.name": "checkout", "service.version": "1.4.2", "deployment.environment.name": "prod",
            "host.name": "node-7", "cloud.region": "eu-west-1", "process.pid": 4242}


@pytest.fixture
def exporter_env(otlp_stack: OtlpStack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_stack.proxy)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{otlp_stack.keys.writer_acme}")


class _TappedLogs(OTLPLogExporter):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list = []
        self.results: list = []

    def export(self, batch):
        self.sent.extend(batch)
        result = super().export(batch)
        self.results.append(result)
        return result


class _TappedSpans(OTLPSpanExporter):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.sent: list = []
        self.results: list = []

    def export(self, spans):
        self.sent.extend(spans)
        result = super().export(spans)
        self.results.append(result)
        return result


class _TappedMetrics(OTLPMetricExporter):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list = []
        self.results: list = []

    def export(self, metrics_data, timeout_millis: float = 10_000, **kwargs):
        self.sent.append(metrics_data)
        result = super().export(metrics_data, timeout_millis, **kwargs)
        self.results.append(result)
        return result


def _plain(value):
    """An SDK attribute value as it reads back from the JSON columns (sequences are tuples in the SDK)."""
    return list(value) if isinstance(value, tuple) else value


def _attributes(mapping) -> dict:
    return {k: _plain(v) for k, v in (mapping or {}).items()}


def _json(text: str | None) -> dict:
    return json.loads(text) if text else {}


def _resource_rest(resource: Resource) -> dict:
    promoted = {"service.name", "service.namespace", "service.version", "service.instance.id",
                "deployment.environment.name", "host.name", "k8s.namespace.name", "k8s.pod.name"}
    return {k: _plain(v) for k, v in resource.attributes.items() if k not in promoted}


def _check_resource(row: dict, resource: Resource) -> None:
    assert row["service_name"] == "checkout"
    assert row["service_version"] == "1.4.2"
    assert row["deployment_environment_name"] == "prod"
    assert row["host_name"] == "node-7"
    assert row["service_instance_id"] == resource.attributes.get("service.instance.id")
    assert _json(row["resource_attributes"]) == _resource_rest(resource)


def test_sdk_logs_exported_through_the_proxy_are_returned_exactly(otlp_stack: OtlpStack, exporter_env):
    resource = Resource.create(RESOURCE)
    exporter = _TappedLogs()
    provider = LoggerProvider(resource=resource)
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    tracer = TracerProvider(resource=resource).get_tracer("t")
    logger = provider.get_logger("checkout.payments", "2.0.1")
    now = time.time_ns()
    for i in range(40):
        with tracer.start_as_current_span(f"pay-{i}"):
            logger.emit(timestamp=now + i, severity_number=SeverityNumber.ERROR if i % 5 == 0 else SeverityNumber.INFO,
                        severity_text="ERROR" if i % 5 == 0 else "INFO", body=f"payment {i} authorised for order o-{i}",
                        attributes={"order.id": f"o-{i}", "amount": i * 1.25, "items": i, "retry": i % 2 == 0,
                                    "tags": ["a", f"t{i}"]})
    logger.emit(body={"structured": True, "n": [1, 2]}, attributes={"kind": "map-body"})
    logger.emit(timestamp=now, body=7, event_name="checkout.counted")
    provider.force_flush()
    provider.shutdown()
    assert exporter.results and all(r is LogRecordExportResult.SUCCESS for r in exporter.results)
    sent = [r.log_record for r in exporter.sent]
    assert len(sent) == 42

    rows = otlp_stack.query('SELECT * FROM "otel-logs-acme" ORDER BY observed_time_unix_nano, time_unix_nano')
    assert len(rows) == len(sent)
    by_observed = sorted(sent, key=lambda r: (r.observed_timestamp, r.timestamp or 0))
    for row, record in zip(rows, by_observed, strict=True):
        _check_resource(row, resource)
        assert (row["scope_name"], row["scope_version"]) == ("checkout.payments", "2.0.1")
        assert row["time_unix_nano"] == (record.timestamp or 0)
        assert row["observed_time_unix_nano"] == record.observed_timestamp
        assert row["severity_number"] == (record.severity_number.value if record.severity_number else 0)
        assert row["severity_text"] == record.severity_text
        assert _json(row["attributes"]) == _attributes(record.attributes)
        assert row["event_name"] == record.event_name
        if isinstance(record.body, str):
            assert (row["body"], row["body_type"]) == (record.body, None)
        else:
            assert json.loads(row["body"]) == record.body
            assert row["body_type"] == ("int" if isinstance(record.body, int) else "kvlist")
        if record.trace_id:
            assert row["trace_id"] == f"{record.trace_id:032x}"
            assert row["span_id"] == f"{record.span_id:016x}"
            assert row["flags"] == int(record.trace_flags)
        else:
            assert row["trace_id"] is None and row["span_id"] is None

    # Full text on the body and the trace-id bloom are declared by the default schema, and the columns answer SQL.
    one = rows[3]
    found = otlp_stack.query(f'SELECT body FROM "otel-logs-acme" WHERE trace_id = \'{one["trace_id"]}\'')
    assert found == [{"body": one["body"]}]
    errors = otlp_stack.query('SELECT count(*) AS n FROM "otel-logs-acme" WHERE severity_text = \'ERROR\' '
                              "AND text_match(body, 'authorised')")
    assert errors == [{"n": 8}]


def test_sdk_spans_exported_gzipped_through_the_proxy_are_returned_exactly(otlp_stack: OtlpStack, exporter_env,
                                                                           monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    resource = Resource.create(RESOURCE)
    exporter = _TappedSpans()
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("checkout.http", "0.9")
    with tracer.start_as_current_span("POST /checkout", kind=SpanKind.SERVER,
                                      attributes={"http.request.method": "POST", "http.response.status_code": 201,
                                                  "http.route": "/checkout"}) as root:
        root.add_event("cart.loaded", attributes={"cart.items": 3, "ratio": 0.5})
        for i in range(5):
            link = Link(root.get_span_context(), attributes={"link.n": i})
            with tracer.start_as_current_span(f"charge-{i}", kind=SpanKind.CLIENT, links=[link]) as child:
                child.set_attribute("payment.attempt", i)
                child.set_attribute("payment.methods", ["card", "wallet"])
                if i == 4:
                    child.set_status(Status(StatusCode.ERROR, "card declined"))
                    child.record_exception(ValueError("declined"))
        root.set_status(Status(StatusCode.OK))
    provider.force_flush()
    provider.shutdown()
    assert exporter.results and all(r is SpanExportResult.SUCCESS for r in exporter.results)
    sent = exporter.sent
    assert len(sent) == 6

    rows = otlp_stack.query('SELECT * FROM "otel-traces-acme" ORDER BY start_time_unix_nano, span_id')
    assert len(rows) == len(sent)
    for row, span in zip(rows, sorted(sent, key=lambda s: (s.start_time, f"{s.context.span_id:016x}")), strict=True):
        _check_resource(row, resource)
        assert (row["scope_name"], row["scope_version"]) == ("checkout.http", "0.9")
        assert row["trace_id"] == f"{span.context.trace_id:032x}"
        assert row["span_id"] == f"{span.context.span_id:016x}"
        assert row["parent_span_id"] == (f"{span.parent.span_id:016x}" if span.parent else None)
        assert row["name"] == span.name
        assert row["kind"] == span.kind.name.lower()
        assert (row["start_time_unix_nano"], row["end_time_unix_nano"]) == (span.start_time, span.end_time)
        assert row["duration_nanos"] == span.end_time - span.start_time
        assert row["status_code"] == span.status.status_code.name.lower()
        assert row["status_message"] == span.status.description
        assert _json(row["attributes"]) == _attributes(span.attributes)
        events = json.loads(row["events"]) if row["events"] else []
        assert [(e["name"], e["time_unix_nano"], e["attributes"]) for e in events] == [
            (e.name, e.timestamp, _attributes(e.attributes)) for e in span.events]
        links = json.loads(row["links"]) if row["links"] else []
        assert [(k["trace_id"], k["span_id"], k["attributes"]) for k in links] == [
            (f"{k.context.trace_id:032x}", f"{k.context.span_id:016x}", _attributes(k.attributes))
            for k in span.links]
    assert sum(row["status_code"] == "error" for row in rows) == 1


def _expected_points(exported) -> list[tuple]:
    """(name, type, temporality, time, attributes, value-ish) of every data point the SDK exported."""
    points = []
    for metrics_data in exported:
        for resource_metrics in metrics_data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    data = metric.data
                    kind = {Sum: "sum", Gauge: "gauge", Histogram: "histogram"}[type(data)]
                    temporality = (data.aggregation_temporality.name.lower()
                                   if kind != "gauge" else None)
                    for point in data.data_points:
                        if kind == "histogram":
                            shape = (point.count, point.sum, point.min, point.max, list(point.bucket_counts),
                                     list(point.explicit_bounds))
                        else:
                            shape = (float(point.value), point.value if isinstance(point.value, int) else None)
                        points.append((metric.name, metric.unit or None, kind, temporality, point.time_unix_nano,
                                       _attributes(point.attributes), shape))
    return sorted(points, key=lambda p: (p[0], p[4], json.dumps(p[5], sort_keys=True)))


def test_sdk_metrics_exported_through_the_proxy_are_returned_exactly(otlp_stack: OtlpStack, exporter_env):
    resource = Resource.create(RESOURCE)
    exporter = _TappedMetrics()
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(resource=resource, metric_readers=[reader])
    meter = provider.get_meter("checkout.metrics", "3.1")
    orders = meter.create_counter("orders", unit="{order}")
    latency = meter.create_histogram("http.server.request.duration", unit="s")
    queue = meter.create_up_down_counter("queue.depth")
    temperature = meter.create_gauge("cpu.temperature", unit="Cel")
    for i in range(30):
        route = {"http.route": f"/r{i % 3}", "http.request.method": "GET"}
        orders.add(i % 4 + 1, {"region": f"r{i % 2}"})
        latency.record(0.001 * (i + 1) ** 2, route)
        queue.add(1 if i % 3 else -1)
    temperature.set(71.5, {"core": 0})
    provider.shutdown()  # one last collection, exported
    assert exporter.results and all(r is MetricExportResult.SUCCESS for r in exporter.results)
    expected = _expected_points(exporter.sent)
    assert len(expected) == 2 + 3 + 1 + 1

    rows = otlp_stack.query('SELECT * FROM "otel-metrics-acme"')
    got = []
    for row in rows:
        _check_resource(row, resource)
        assert (row["scope_name"], row["scope_version"]) == ("checkout.metrics", "3.1")
        if row["metric_type"] == "histogram":
            shape = (row["count"], row["sum"], row["min"], row["max"], json.loads(row["bucket_counts"]),
                     json.loads(row["explicit_bounds"]))
        else:
            shape = (row["value"], row["value_int"])
        got.append((row["metric_name"], row["metric_unit"], row["metric_type"], row["temporality"],
                    row["time_unix_nano"], _json(row["attributes"]), shape))
    assert sorted(got, key=lambda p: (p[0], p[4], json.dumps(p[5], sort_keys=True))) == expected
    monotonic = otlp_stack.query('SELECT DISTINCT metric_name, is_monotonic FROM "otel-metrics-acme" '
                                 "WHERE metric_type = 'sum' ORDER BY metric_name")
    assert monotonic == [{"metric_name": "orders", "is_monotonic": True},
                         {"metric_name": "queue.depth", "is_monotonic": False}]
