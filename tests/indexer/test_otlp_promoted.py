"""Which attributes become columns is a property of the index: an index declaring the default logs schema plus
fields named after attribute keys (dots as underscores) gets those attributes' values in them when the types fit,
null otherwise, and keeps every attribute in the JSON column too."""

from __future__ import annotations

import json
import time

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from strata_indexer.otlp.schemas import Signal, default_settings
from tests.fixtures.apps import Keys
from tests.indexer.otlp_stack import OtlpStack

PROMOTED = [{"name": "http_route", "type": "string"}, {"name": "http_response_status_code", "type": "i64"},
            {"name": "duration_ms", "type": "f64"}, {"name": "retry", "type": "bool"}]


def _kv(key: str, **value) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(**value))


def test_an_index_promotes_the_attributes_it_declares_as_columns(otlp_stack: OtlpStack):
    config = default_settings(Signal.LOGS).model_dump(mode="json")
    config["fields"] += PROMOTED
    created = httpx.post(f"{otlp_stack.indexer}/v1/indexes", json={"index_id": "otlp-promoted", **config},
                         headers=Keys.header(otlp_stack.keys.admin), timeout=30)
    assert created.status_code == 201, created.text
    now = time.time_ns()
    records = [
        LogRecord(time_unix_nano=now, body=AnyValue(string_value="fits"),
                  attributes=[_kv("http.route", string_value="/pay"), _kv("http.response.status_code", int_value=502),
                              _kv("duration_ms", int_value=12), _kv("retry", bool_value=True)]),
        LogRecord(time_unix_nano=now + 1, body=AnyValue(string_value="does not fit"),
                  attributes=[_kv("http.route", int_value=7), _kv("http.response.status_code", string_value="502"),
                              _kv("retry", string_value="yes")]),
    ]
    body = ExportLogsServiceRequest(resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])])
    answer = httpx.post(f"{otlp_stack.proxy}/v1/logs", content=body.SerializeToString(), timeout=60,
                        headers={**Keys.header(otlp_stack.keys.writer_acme), "Content-Type": "application/x-protobuf",
                                 "X-Strata-Index": "otlp-promoted"})
    assert answer.status_code == 200, answer.text

    rows = otlp_stack.query('SELECT body, http_route, http_response_status_code, duration_ms, retry, attributes '
                            'FROM "otlp-promoted" ORDER BY time_unix_nano')
    assert [(r["http_route"], r["http_response_status_code"], r["duration_ms"], r["retry"]) for r in rows] == [
        ("/pay", 502, 12.0, True), (None, None, None, None)]
    assert json.loads(rows[0]["attributes"]) == {"http.route": "/pay", "http.response.status_code": 502,
                                                 "duration_ms": 12, "retry": True}
    assert json.loads(rows[1]["attributes"]) == {"http.route": 7, "http.response.status_code": "502", "retry": "yes"}
    found = otlp_stack.query('SELECT body FROM "otlp-promoted" WHERE http_route = \'/pay\'')
    assert found == [{"body": "fits"}]
