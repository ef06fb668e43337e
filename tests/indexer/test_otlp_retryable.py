"""The OTLP answers an exporter retries: a commit that fails on a dependency (here object storage) is a 503 with
Retry-After and a google.rpc.Status, nothing published; a tenant over the proxy's rate limit gets a 429 with
Retry-After before its request reaches indexer-api."""

from __future__ import annotations

import time

import httpx
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from strata_core.storage import ObjectStore
from tests.fixtures.apps import Keys
from tests.fixtures.http_server import serve_in_thread
from tests.helpers import db_snapshot, storage_snapshot
from tests.indexer.otlp_stack import OtlpStack

PROTOBUF = "application/x-protobuf"


def _body() -> bytes:
    now = time.time_ns()
    records = [LogRecord(time_unix_nano=now + i, body=AnyValue(string_value=f"line {i}")) for i in range(4)]
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])]) \
        .SerializeToString()


def _headers(stack: OtlpStack, index: str) -> dict[str, str]:
    return {**Keys.header(stack.keys.writer_acme), "Content-Type": PROTOBUF, "X-Strata-Index": index}


async def test_a_storage_failure_is_a_503_with_retry_after_and_publishes_nothing(otlp_stack: OtlpStack, tmp_path):
    from strata_indexer.app import create_app

    # The index exists (created through the healthy stack): only the write of the split can fail below.
    created = httpx.post(f"{otlp_stack.proxy}/v1/logs", content=_body(), headers=_headers(otlp_stack, "otlp-broken"),
                         timeout=60)
    assert created.status_code == 200, created.text
    root = tmp_path / "objects"
    root.mkdir()
    breaking = otlp_stack.settings.model_copy(update={"storage_uri": root.as_uri()})
    before = (await db_snapshot(otlp_stack.settings.database_url),
              storage_snapshot(ObjectStore(otlp_stack.settings.resolved_storage_uri)))
    with serve_in_thread(create_app(breaking, background=False)) as indexer:
        # Broken once the API runs (it checks its storage root at startup): a file where the root should be.
        root.rmdir()
        root.write_text("a file where the storage root should be")
        answer = httpx.post(f"{indexer}/v1/logs", content=_body(), headers=_headers(otlp_stack, "otlp-broken"),
                            timeout=60)
    assert answer.status_code == 503, answer.text
    assert int(answer.headers["retry-after"]) > 0
    status = Status.FromString(answer.content)
    assert status.code == 14 and "object storage" in status.message
    after = (await db_snapshot(otlp_stack.settings.database_url),
             storage_snapshot(ObjectStore(otlp_stack.settings.resolved_storage_uri)))
    assert after == before


def test_a_tenant_over_its_rate_is_a_429_with_retry_after(otlp_stack: OtlpStack):
    from strata_services.proxy.app import create_proxy_app

    strict = otlp_stack.settings.model_copy(update={"indexer_url": otlp_stack.indexer, "proxy_rate_per_sec": 0.01,
                                                    "proxy_burst": 1})
    with serve_in_thread(create_proxy_app(strict)) as proxy:
        first = httpx.post(f"{proxy}/v1/logs", content=_body(), headers=_headers(otlp_stack, "otlp-limited"),
                           timeout=60)
        second = httpx.post(f"{proxy}/v1/logs", content=_body(), headers=_headers(otlp_stack, "otlp-limited"),
                            timeout=60)
    assert first.status_code == 200, first.text
    assert second.status_code == 429, second.text
    assert int(second.headers["retry-after"]) >= 1
