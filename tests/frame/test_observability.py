"""Log context, log line formats, the request-id middleware, and when tracing is switched on: pure, in process."""

from __future__ import annotations

import asyncio
import io
import json
import logging

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI

from strata_core.observability.context import annotate, current_fields, current_request_id, log_context
from strata_core.observability.logs import JsonFormatter, TextFormatter, configure_logging
from strata_core.observability.tracing import exporter_from_env
from strata_frame.web.request_context import install_request_context, path_fields, request_id_from

log = logging.getLogger("strata.test")


def _record(message: str = "hello %s", *args: object, exc_info=None) -> logging.LogRecord:
    return log.makeRecord("strata.test", logging.WARNING, __file__, 1, message, args or ("world",), exc_info)


def test_log_context_nests_restores_and_drops_none():
    assert current_fields() == {}
    with log_context(request_id="r1", index="idx", job_id=None):
        assert current_fields() == {"request_id": "r1", "index": "idx"}
        with log_context(job_id="j1", fencing_token=7):
            assert current_fields() == {"request_id": "r1", "index": "idx", "job_id": "j1", "fencing_token": 7}
        assert current_fields() == {"request_id": "r1", "index": "idx"}
        assert current_request_id() == "r1"
    assert current_fields() == {} and current_request_id() is None


def test_annotate_adds_to_the_innermost_scope_only():
    annotate(index="nowhere")
    assert current_fields() == {}, "outside any scope there is nothing to add to"
    with log_context(request_id="r1") as scope:
        annotate(index="idx", split_id=None)
        assert scope == {"request_id": "r1", "index": "idx"}
    assert current_fields() == {}


async def test_log_context_follows_tasks_and_worker_threads():
    with log_context(job_id="j1", fencing_token=3):
        in_task = await asyncio.create_task(asyncio.sleep(0, result=dict(current_fields())))
        in_thread = await asyncio.to_thread(lambda: dict(current_fields()))
    assert in_task == in_thread == {"job_id": "j1", "fencing_token": 3}


def test_json_line_has_the_service_the_message_and_the_context():
    formatter = JsonFormatter("strata-planner")
    with log_context(service="strata-planner", request_id="r1", index="idx", job_id="j1", fencing_token=42):
        line = json.loads(formatter.format(_record()))
    assert line["service"] == "strata-planner" and line["message"] == "hello world"
    assert (line["level"], line["logger"]) == ("warning", "strata.test")
    assert (line["request_id"], line["index"], line["job_id"], line["fencing_token"]) == ("r1", "idx", "j1", 42)
    assert line["ts"].endswith("Z") and "trace_id" not in line, "no span is recording"


def test_json_line_keeps_exceptions_and_values_json_cannot_hold():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = _record(exc_info=sys.exc_info())
    with log_context(when=object.__new__(type("Odd", (), {"__str__": lambda self: "odd"}))):
        line = json.loads(JsonFormatter("strata-query").format(record))
    assert "ValueError: boom" in line["exception"] and line["when"] == "odd"


def test_text_line_is_one_readable_line_with_the_context():
    with log_context(request_id="r1", index="idx"):
        text = TextFormatter("strata-indexer").format(_record())
    assert "WARNING strata-indexer strata.test: hello world  [request_id=r1 index=idx]" in text
    assert "\n" not in text


def test_configure_logging_replaces_the_root_handlers_and_refuses_an_unknown_format():
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    try:
        stream = io.StringIO()
        configure_logging("strata-proxy", "json", "INFO", stream)
        configure_logging("strata-proxy", "json", "INFO", stream)
        logging.getLogger("strata.proxy").info("upstream %s is down", "u1")
        [line] = stream.getvalue().splitlines()
        assert json.loads(line)["message"] == "upstream u1 is down"
        with pytest.raises(ValueError, match="json, text"):
            configure_logging("strata-proxy", "yaml")
    finally:
        root.handlers[:] = saved
        root.setLevel(level)


@pytest.mark.parametrize(("header", "kept"), [("req-123", True), ("a" * 128, True), ("a" * 129, False),
                                              ("bad id", False), ("x\ny", False), ("", False), (None, False)])
def test_request_id_is_the_callers_when_plain_else_new(header, kept):
    request_id = request_id_from(header)
    assert (request_id == header) is kept
    assert len(request_id) <= 128 and request_id.replace("-", "").isalnum()


async def test_middleware_puts_request_id_and_path_ids_on_every_line_and_echoes_the_id():
    router = APIRouter()
    seen: list[dict] = []

    @router.get("/v1/indexes/{index_id}/things/{job_id}")
    async def thing(index_id: str, job_id: str) -> dict:
        seen.append(dict(current_fields()))
        return {}

    app = FastAPI()
    app.include_router(router, dependencies=[Depends(path_fields)])
    install_request_context(app, "planner-api")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        given = await client.get("/v1/indexes/idx/things/j1", headers={"x-request-id": "caller-7"})
        made = await client.get("/v1/indexes/idx/things/j2")
    assert given.headers["x-request-id"] == "caller-7"
    assert seen[0] == {"service": "strata-planner", "request_id": "caller-7", "index": "idx", "job_id": "j1"}
    assert made.headers["x-request-id"] == seen[1]["request_id"] and len(seen[1]["request_id"]) == 32
    assert current_fields() == {}, "nothing leaks into the caller's context"


@pytest.mark.parametrize(("environ", "exporter"), [
    ({}, None),
    ({"OTEL_SERVICE_NAME": "x", "OTEL_RESOURCE_ATTRIBUTES": "a=b"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "otlp"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, "otlp"),
    ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, None),
    ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, "otlp"),
])
def test_tracing_is_on_only_when_the_environment_asks(environ, exporter):
    assert exporter_from_env(environ) == exporter


@pytest.mark.parametrize(("environ", "message"), [
    ({"OTEL_TRACES_EXPORTER": "zipkin"}, "zipkin is not supported"),
    ({"OTEL_TRACES_EXPORTER": "otlp,console"}, "more than one"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "'grpc' is not"),
])
def test_a_tracing_setting_strata_cannot_honour_is_refused_naming_it(environ, message):
    with pytest.raises(ValueError, match=message):
        exporter_from_env(environ)
