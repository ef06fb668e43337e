"""Traces and logs of real processes: query-api and the proxy run as `strata serve` children with the standard
OTEL_* variables pointing at an in-test OTLP receiver. One query through the proxy is one trace across both
services (the proxy's client span is the parent of query-api's server span; planning, SQL and execution spans
hang below), and both processes' JSON log lines for it carry the request id the caller sent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from strata_services.local.api_process import ApiProcess
from strata_services.local.processes import free_port
from tests.fixtures.apps import Keys
from tests.observability.conftest import INDEX
from tests.observability.otlp_receiver import ReceivedSpan, otlp_receiver

SERVER, CLIENT = 2, 3  # OTLP span kinds
REQUEST_ID = "trace-test-0001"


def _json_lines(path: Path) -> list[dict]:
    lines = []
    for line in path.read_text().splitlines():
        assert line.startswith("{"), f"not a JSON log line in {path.name}: {line!r}"
        lines.append(json.loads(line))
    return lines


def _wait_for_trace(receiver, deadline_secs: float = 30.0) -> tuple[str, list[ReceivedSpan]]:
    """The trace of the proxy's POST /v1/query, once query-api's execution spans have arrived in it."""
    deadline = time.monotonic() + deadline_secs
    while True:
        spans = receiver.received()
        roots = [s for s in spans if s.service == "strata-proxy" and s.kind == SERVER and "/v1/" in s.name]
        for root in roots:
            trace = [s for s in spans if s.trace_id == root.trace_id]
            if {"plan_build", "execute", "serialize_result"} <= {s.name for s in trace}:
                return root.trace_id, trace
        assert time.monotonic() < deadline, sorted({(s.service, s.name) for s in spans})
        time.sleep(0.2)


def test_one_query_is_one_trace_across_proxy_and_query_api_and_its_log_lines_carry_the_request_id(
        observed_stack, keys: Keys, tmp_path: Path):
    settings = observed_stack.settings
    with otlp_receiver() as (receiver, endpoint):
        query_port, proxy_port = free_port(), free_port()
        env = {"STRATA_DATABASE_URL": settings.database_url, "STRATA_STORAGE_URI": settings.resolved_storage_uri,
               "STRATA_API_KEYS": keys.as_json(), "STRATA_HOME": str(tmp_path / "home"), "STRATA_SPARK_REMOTE": "",
               "STRATA_QUERY_UPSTREAMS": f"http://127.0.0.1:{query_port}", "STRATA_LOG_FORMAT": "json",
               "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        processes = [ApiProcess("query-api", "127.0.0.1", query_port, env, tmp_path),
                     ApiProcess("proxy", "127.0.0.1", proxy_port, env, tmp_path)]
        try:
            # In turn: the proxy's first health check must find query-api up.
            for process in processes:
                process.start()
                process.wait_healthy()
            response = httpx.post(f"http://127.0.0.1:{proxy_port}/v1/query", timeout=60,
                                  json={"sql": f'SELECT count(*) AS n FROM "{INDEX}"'},
                                  headers={**Keys.header(keys.admin), "X-Request-ID": REQUEST_ID})
            assert response.status_code == 200, response.text
            assert response.json()["rows"][0]["n"] > 0
            assert response.headers["x-request-id"] == REQUEST_ID
            trace_id, trace = _wait_for_trace(receiver)
        finally:
            for process in processes:
                process.stop()

    by_id = {s.span_id: s for s in trace}
    assert {s.service for s in trace} == {"strata-proxy", "strata-query"}
    [query_server] = [s for s in trace if s.service == "strata-query" and s.kind == SERVER]
    parent = by_id[query_server.parent_span_id]
    assert (parent.service, parent.kind) == ("strata-proxy", CLIENT), "the proxy's upstream call carried the context"
    names = {s.name for s in trace if s.service == "strata-query"}
    assert {"plan_build", "fetch_parquet", "execute", "serialize_result"} <= names
    sql = [s for s in trace if "db.statement" in s.attributes or "db.query.text" in s.attributes]
    assert sql and all(s.service == "strata-query" for s in sql), "the planner's SQL statements, instrumented"
    plan = next(s for s in trace if s.name == "plan_build")
    assert plan.attributes["strata.index_id"] == INDEX
    # Every span of the trace reaches the proxy's server span through its parents: one tree, not fragments.
    root = next(s for s in trace if s.service == "strata-proxy" and s.kind == SERVER)
    for span in trace:
        hops = 0
        while span.span_id != root.span_id:
            span = by_id[span.parent_span_id]
            hops += 1
            assert hops < 50
    # Health checks are not traced: the proxy checks its upstream every two seconds.
    assert not [s for s in receiver.received() if "healthz" in s.name]

    for process, service in zip(processes, ("strata-query", "strata-proxy"), strict=True):
        lines = _json_lines(process.log_path)
        assert all(line["service"] == service and line["level"] and line["message"] for line in lines)
        ours = [line for line in lines if line.get("request_id") == REQUEST_ID]
        assert ours, f"{service} logged nothing with the request id"
        assert any(line.get("trace_id") == trace_id for line in ours), "log lines point at the trace"
    query_lines = [line for line in _json_lines(processes[0].log_path) if line.get("request_id") == REQUEST_ID]
    assert any(line.get("index") == INDEX for line in query_lines), "the query's index joins its log context"


def test_text_log_format_for_humans(tmp_path: Path):
    """`strata up --log-format text` hands STRATA_LOG_FORMAT=text to every `strata serve`: plain lines, with the
    request id in the bracketed context."""
    from strata_services.cli import build_parser

    assert build_parser().parse_args(["up", "--log-format", "text"]).log_format == "text"
    port = free_port()
    proxy = ApiProcess("proxy", "127.0.0.1", port, {"STRATA_LOG_FORMAT": "text", "STRATA_API_KEYS": "{}",
                                                    "STRATA_QUERY_UPSTREAMS": f"http://127.0.0.1:{free_port()}"},
                       tmp_path)
    try:
        proxy.start()
        proxy.wait_healthy()
        assert httpx.get(f"http://127.0.0.1:{port}/v1/query", headers={"X-Request-ID": "text-1"}).status_code == 401
    finally:
        proxy.stop()
    lines = proxy.log_path.read_text().splitlines()
    assert lines and not any(line.startswith("{") for line in lines)
    assert any("strata-proxy uvicorn.access" in line and "[request_id=text-1]" in line
               for line in lines), lines
