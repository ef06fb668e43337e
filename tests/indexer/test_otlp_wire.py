"""OTLP/HTTP on the wire, with requests built from the Collector's own message definitions (opentelemetry-proto):
protobuf and OTLP's JSON mapping (hex ids, int64 as strings) give the same rows; gzip bodies; late records counted
in the partial success; malformed, oversized, gzip-bomb and wrongly typed bodies answered with the specification's
status and a google.rpc.Status, with nothing written."""

from __future__ import annotations

import base64
import gzip
import json
import time

import httpx
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    AggregationTemporality,
    ExponentialHistogram,
    ExponentialHistogramDataPoint,
    Histogram,
    HistogramDataPoint,
    Metric,
    ResourceMetrics,
    ScopeMetrics,
    Summary,
    SummaryDataPoint,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from strata_core.storage import ObjectStore
from strata_services.proxy.routes import INDEXER, QUERY, api_for_path
from tests.fixtures.apps import Keys
from tests.helpers import db_snapshot, storage_snapshot
from tests.indexer.otlp_stack import OtlpStack

pytestmark = pytest.mark.timeout(120)

PROTOBUF, JSON = "application/x-protobuf", "application/json"
TRACE_ID, SPAN_ID = bytes.fromhex("5b8efff798038103d269b633813fc60c"), bytes.fromhex("eee19b7ec3c1b174")


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _resource(service: str) -> Resource:
    return Resource(attributes=[_kv("service.name", AnyValue(string_value=service)),
                                _kv("k8s.pod.name", AnyValue(string_value="pod-1")),
                                _kv("host.name", AnyValue(int_value=12)),  # not a string: stays in the JSON
                                _kv("cloud.zone", AnyValue(string_value="z1"))])


EVERY_KIND = [
    _kv("s", AnyValue(string_value="text ünïcode")), _kv("i", AnyValue(int_value=-(2**62))),
    _kv("d", AnyValue(double_value=2.5)), _kv("b", AnyValue(bool_value=False)),
    _kv("a", AnyValue(array_value=ArrayValue(values=[AnyValue(int_value=1), AnyValue(string_value="x")]))),
    _kv("m", AnyValue(kvlist_value=KeyValueList(values=[_kv("inner", AnyValue(double_value=1.0))]))),
    _kv("raw", AnyValue(bytes_value=b"\x00\xff")),
]
EVERY_KIND_PLAIN = {"s": "text ünïcode", "i": -(2**62), "d": 2.5, "b": False, "a": [1, "x"], "m": {"inner": 1.0},
                    "raw": "AP8="}


def _logs(service: str, count: int, start_ns: int) -> ExportLogsServiceRequest:
    records = [LogRecord(time_unix_nano=start_ns + i, observed_time_unix_nano=start_ns + i + 7, severity_number=9,
                         severity_text="INFO", body=AnyValue(string_value=f"line {i} of {service}"),
                         attributes=EVERY_KIND + [_kv("n", AnyValue(int_value=i))], trace_id=TRACE_ID,
                         span_id=SPAN_ID, flags=1)
               for i in range(count)]
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(
        resource=_resource(service),
        scope_logs=[ScopeLogs(scope={"name": "wire-test", "version": "1"}, log_records=records)])])


def _otlp_json(message) -> bytes:
    """OTLP's JSON mapping of a message: the canonical proto3 JSON with ids in hex instead of base64."""
    document = json_format.MessageToDict(message)

    def hexed(node):
        if isinstance(node, dict):
            return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId")
                        else hexed(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [hexed(v) for v in node]
        return node

    return json.dumps(hexed(document)).encode()


def _post(stack: OtlpStack, path: str, body: bytes, content_type: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{stack.proxy}{path}", content=body, timeout=60,
                      headers={**Keys.header(stack.keys.writer_acme), "Content-Type": content_type, **headers})


def _storage(stack: OtlpStack) -> ObjectStore:
    return ObjectStore(stack.settings.resolved_storage_uri)


async def _snapshot(stack: OtlpStack):
    return await db_snapshot(stack.settings.database_url), storage_snapshot(_storage(stack))


def test_otlp_paths_go_to_indexer_api_and_nothing_below_them():
    assert [api_for_path(p) for p in ("logs", "traces", "metrics")] == [INDEXER] * 3
    assert api_for_path("logs/more") == QUERY


def test_protobuf_and_json_requests_give_the_same_rows(otlp_stack: OtlpStack):
    now = time.time_ns()
    request = _logs("wire", 5, now)
    as_protobuf = _post(otlp_stack, "/v1/logs", request.SerializeToString(), PROTOBUF,
                        **{"X-Strata-Index": "otlp-wire-pb"})
    assert as_protobuf.status_code == 200, as_protobuf.text
    assert as_protobuf.headers["content-type"] == PROTOBUF
    assert not ExportLogsServiceResponse.FromString(as_protobuf.content).HasField("partial_success")
    as_json = _post(otlp_stack, "/v1/logs", gzip.compress(_otlp_json(request)), JSON,
                    **{"X-Strata-Index": "otlp-wire-json", "Content-Encoding": "gzip"})
    assert as_json.status_code == 200, as_json.text
    assert as_json.headers["content-type"] == JSON
    assert as_json.json() == {}

    columns = "time_unix_nano, observed_time_unix_nano, severity_number, severity_text, body, trace_id, span_id, " \
              "flags, service_name, k8s_pod_name, host_name, resource_attributes, scope_name, attributes"
    rows = {index: otlp_stack.query(f'SELECT {columns} FROM "{index}" ORDER BY time_unix_nano')
            for index in ("otlp-wire-pb", "otlp-wire-json")}
    assert rows["otlp-wire-pb"] == rows["otlp-wire-json"]
    for i, row in enumerate(rows["otlp-wire-pb"]):
        assert row["time_unix_nano"] == now + i and row["observed_time_unix_nano"] == now + i + 7
        assert (row["severity_number"], row["severity_text"], row["body"]) == (9, "INFO", f"line {i} of wire")
        assert (row["trace_id"], row["span_id"], row["flags"]) == (TRACE_ID.hex(), SPAN_ID.hex(), 1)
        assert (row["service_name"], row["k8s_pod_name"], row["host_name"]) == ("wire", "pod-1", None)
        assert json.loads(row["resource_attributes"]) == {"host.name": 12, "cloud.zone": "z1"}
        assert json.loads(row["attributes"]) == {**EVERY_KIND_PLAIN, "n": i}


def test_spans_as_json_and_every_metric_type_as_protobuf(otlp_stack: OtlpStack):
    now = time.time_ns()
    span = Span(trace_id=TRACE_ID, span_id=SPAN_ID, parent_span_id=bytes.fromhex("0102030405060708"), name="GET /",
                kind=Span.SPAN_KIND_SERVER, start_time_unix_nano=now, end_time_unix_nano=now + 1500,
                attributes=EVERY_KIND, status={"code": 2, "message": "boom"}, trace_state="k=v",
                events=[Span.Event(time_unix_nano=now + 5, name="e", attributes=[_kv("x", AnyValue(int_value=1))])],
                links=[Span.Link(trace_id=TRACE_ID, span_id=bytes.fromhex("1112131415161718"))])
    traces = ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource=_resource("api"), scope_spans=[ScopeSpans(spans=[span])])])
    answer = _post(otlp_stack, "/v1/traces", _otlp_json(traces), JSON, **{"X-Strata-Index": "otlp-wire-spans"})
    assert answer.status_code == 200, answer.text
    assert ExportTraceServiceResponse() == json_format.Parse(answer.content, ExportTraceServiceResponse())
    [row] = otlp_stack.query('SELECT * FROM "otlp-wire-spans"')
    assert (row["trace_id"], row["span_id"], row["parent_span_id"]) == (TRACE_ID.hex(), SPAN_ID.hex(),
                                                                       "0102030405060708")
    assert (row["name"], row["kind"], row["status_code"], row["status_message"]) == ("GET /", "server", "error", "boom")
    assert (row["duration_nanos"], row["trace_state"]) == (1500, "k=v")
    assert json.loads(row["attributes"]) == EVERY_KIND_PLAIN
    assert json.loads(row["events"])[0] == {"time_unix_nano": now + 5, "name": "e", "attributes": {"x": 1},
                                            "dropped_attributes_count": 0}
    assert json.loads(row["links"])[0]["span_id"] == "1112131415161718"

    cumulative = AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
    metrics = ExportMetricsServiceRequest(resource_metrics=[ResourceMetrics(
        resource=_resource("api"), scope_metrics=[ScopeMetrics(metrics=[
            Metric(name="latency", unit="ms", histogram=Histogram(aggregation_temporality=cumulative, data_points=[
                HistogramDataPoint(time_unix_nano=now, start_time_unix_nano=now - 10, count=6, sum=12.5,
                                   bucket_counts=[1, 2, 3], explicit_bounds=[1.0, 5.0], min=0.5, max=9.0,
                                   attributes=[_kv("route", AnyValue(string_value="/"))])])),
            Metric(name="sizes", exponential_histogram=ExponentialHistogram(
                aggregation_temporality=cumulative, data_points=[ExponentialHistogramDataPoint(
                    time_unix_nano=now, count=3, sum=7.0, scale=2, zero_count=1,
                    positive=ExponentialHistogramDataPoint.Buckets(offset=-1, bucket_counts=[1, 1]))])),
            Metric(name="rpc", summary=Summary(data_points=[SummaryDataPoint(
                time_unix_nano=now, count=4, sum=10.0,
                quantile_values=[SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=2.0)])])),
        ])])])
    answer = _post(otlp_stack, "/v1/metrics", metrics.SerializeToString(), PROTOBUF,
                   **{"X-Strata-Index": "otlp-wire-metrics"})
    assert answer.status_code == 200, answer.text
    assert ExportMetricsServiceResponse.FromString(answer.content) == ExportMetricsServiceResponse()
    rows = {r["metric_name"]: r for r in otlp_stack.query('SELECT * FROM "otlp-wire-metrics"')}
    latency = rows["latency"]
    assert (latency["metric_type"], latency["temporality"], latency["count"], latency["sum"], latency["min"],
            latency["max"]) == ("histogram", "cumulative", 6, 12.5, 0.5, 9.0)
    assert (json.loads(latency["bucket_counts"]), json.loads(latency["explicit_bounds"])) == ([1, 2, 3], [1.0, 5.0])
    assert json.loads(latency["attributes"]) == {"route": "/"}
    assert json.loads(rows["sizes"]["exponential"]) == {
        "scale": 2, "zero_count": 1, "zero_threshold": 0.0, "positive": {"offset": -1, "bucket_counts": [1, 1]},
        "negative": {"offset": 0, "bucket_counts": []}}
    assert json.loads(rows["rpc"]["quantiles"]) == [[0.5, 2.0]]
    assert (rows["rpc"]["metric_type"], rows["rpc"]["temporality"]) == ("summary", None)


def test_late_records_are_counted_as_rejected_in_the_partial_success(otlp_stack: OtlpStack):
    now = time.time_ns()
    request = _logs("late", 3, now)
    request.resource_logs[0].scope_logs[0].log_records[0].time_unix_nano = now - 2 * 3600 * 10**9
    answer = _post(otlp_stack, "/v1/logs", request.SerializeToString(), PROTOBUF,
                   **{"X-Strata-Index": "otlp-wire-late"})
    assert answer.status_code == 200, answer.text
    partial = ExportLogsServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_log_records == 1
    assert "late_data_acceptance_secs" in partial.error_message
    assert otlp_stack.query('SELECT count(*) AS n FROM "otlp-wire-late"') == [{"n": 2}]


def _bomb() -> bytes:
    # 64 MiB of zeros gzip to about 64 KiB: far under the body limit, far over it inflated.
    return gzip.compress(bytes(64 * 1024 * 1024), compresslevel=9)


@pytest.mark.parametrize(("name", "body", "content_type", "headers", "status"), [
    ("truncated protobuf", _logs("bad", 2, 1).SerializeToString()[:-3], PROTOBUF, {}, 400),
    ("not json", b"{resourceLogs: [", JSON, {}, 400),
    ("a json array", b"[]", JSON, {}, 400),
    ("a bad hex id", json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "zz"}]}]}]}).encode(),
     JSON, {}, 400),
    ("a wrong field type", json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"timeUnixNano": "soon"}]}]}]}).encode(), JSON, {}, 400),
    ("broken gzip", b"\x1f\x8b\x08\x00garbage", PROTOBUF, {"Content-Encoding": "gzip"}, 400),
    ("a gzip bomb", _bomb(), PROTOBUF, {"Content-Encoding": "gzip"}, 413),
    ("an oversized body", bytes(2 * 1024 * 1024), PROTOBUF, {}, 413),
    ("another media type", b"a,b\n", "text/csv", {}, 415),
    ("another content encoding", b"x", PROTOBUF, {"Content-Encoding": "br"}, 415),
    ("an invalid index name", _logs("bad", 1, time.time_ns()).SerializeToString(), PROTOBUF,
     {"X-Strata-Index": "No Such/Index"}, 400),
])
async def test_refused_requests_get_the_specs_status_and_write_nothing(otlp_stack: OtlpStack, name, body,
                                                                       content_type, headers, status):
    before = await _snapshot(otlp_stack)
    answer = _post(otlp_stack, "/v1/logs", body, content_type, **headers)
    assert answer.status_code == status, f"{name}: {answer.text}"
    if content_type == JSON:
        detail = json_format.Parse(answer.content, Status())
        assert answer.headers["content-type"] == JSON
    else:
        detail = Status.FromString(answer.content)
        assert answer.headers["content-type"] == PROTOBUF
    assert detail.message and detail.code in (3, 8)
    assert await _snapshot(otlp_stack) == before


async def test_an_index_that_cannot_hold_the_signal_is_refused_whole(otlp_stack: OtlpStack):
    created = httpx.post(f"{otlp_stack.indexer}/v1/indexes", timeout=30, headers=Keys.header(otlp_stack.keys.admin),
                         json={"index_id": "otlp-not-logs", "fields": [{"name": "timestamp", "type": "timestamp"},
                                                                       {"name": "body", "type": "string"}],
                               "timestamp_field": "timestamp", "sort_schema": "timestamp@v1",
                               "compaction_start_time": 0})
    assert created.status_code == 201, created.text
    before = await _snapshot(otlp_stack)
    answer = _post(otlp_stack, "/v1/logs", _logs("x", 2, time.time_ns()).SerializeToString(), PROTOBUF,
                   **{"X-Strata-Index": "otlp-not-logs"})
    assert answer.status_code == 400
    assert "severity_number" in Status.FromString(answer.content).message
    assert await _snapshot(otlp_stack) == before


async def test_an_empty_export_is_answered_and_creates_nothing(otlp_stack: OtlpStack):
    before = await _snapshot(otlp_stack)
    answer = _post(otlp_stack, "/v1/traces", b"", PROTOBUF, **{"X-Strata-Index": "otlp-never-created"})
    assert answer.status_code == 200
    assert ExportTraceServiceResponse.FromString(answer.content) == ExportTraceServiceResponse()
    assert await _snapshot(otlp_stack) == before


def test_a_key_without_the_writer_scope_is_refused(otlp_stack: OtlpStack):
    answer = httpx.post(f"{otlp_stack.proxy}/v1/logs", content=b"", timeout=30,
                        headers={**Keys.header(otlp_stack.keys.query_acme), "Content-Type": PROTOBUF})
    assert answer.status_code == 403
