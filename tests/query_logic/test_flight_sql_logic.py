"""The pure parts of query-api's Flight SQL door: the generated messages match their .proto, problems map onto
gRPC codes with their JSON intact, keys are read from the call's headers as on HTTP, filter patterns follow SQL
LIKE, and the metadata tables have FlightSql.proto's shapes."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as flight
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_core.errors import InvalidInput, Unauthorized
from strata_query.flight import catalog
from strata_query.flight.auth import call_headers, presented_key
from strata_query.flight.proto import FlightSql_pb2 as sql
from strata_query.flight.sql_info import SCHEMA, sql_info_table
from strata_query.flight.status import error_class, flight_error

CODEGEN = Path(__file__).resolve().parents[2] / "query-api" / "flight_sql_codegen.py"


def _codegen():
    spec = importlib.util.spec_from_file_location("flight_sql_codegen", CODEGEN)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_generated_messages_are_what_the_proto_generates():
    codegen = _codegen()
    committed = codegen.MODULE.read_text()
    assert committed.startswith(codegen.GENERATED_HEADER)
    assert committed == codegen.generate(), "run: .tools/bin/uv run python query-api/flight_sql_codegen.py"


def test_the_vendored_proto_keeps_its_license_header():
    text = _codegen().PROTO.read_text()
    assert "Licensed to the Apache Software Foundation (ASF)" in text.split("syntax")[0]
    assert "package arrow.flight.protocol.sql;" in text


@pytest.mark.parametrize(("status", "kind"), [
    (400, pa.ArrowInvalid), (422, pa.ArrowInvalid), (401, flight.FlightUnauthenticatedError),
    (403, flight.FlightUnauthorizedError), (404, pa.ArrowKeyError), (409, flight.FlightCancelledError),
    (429, flight.FlightUnavailableError), (503, flight.FlightUnavailableError), (502, flight.FlightUnavailableError),
    (504, flight.FlightTimedOutError), (500, flight.FlightInternalError), (418, pa.ArrowInvalid),
])
def test_problems_map_onto_grpc_codes(status, kind):
    assert error_class(status) is kind


def test_a_flight_error_carries_the_problem_json():
    problem = {"type": "https://strata.dev/problems/invalid-sql", "title": "Invalid SQL", "status": 400,
               "detail": "unexpected ')' — at 1:7", "instance": None,
               "errors": [{"field": "sql", "message": "x", "line": 1, "column": 7}]}
    error = flight_error(problem)
    assert isinstance(error, pa.ArrowInvalid)
    carried = json.loads(str(error))
    assert carried == {key: value for key, value in problem.items() if key != "instance"}


def test_a_query_over_its_time_limit_is_deadline_exceeded_though_a_422_on_http():
    problem = {"type": "https://strata.dev/problems/query-timeout", "title": "Query over its time limit",
               "status": 422, "detail": "query q did not finish within its time limit of 5 s and was interrupted"}
    assert isinstance(flight_error(problem), flight.FlightTimedOutError)
    assert isinstance(flight_error({**problem, "type": "https://strata.dev/problems/invalid-sql"}), pa.ArrowInvalid)


def test_keys_are_read_as_on_http():
    assert presented_key("Bearer abc", None) == ("abc", None)
    assert presented_key(None, "from-x-api-key") == ("from-x-api-key", None)
    assert presented_key("bearer  abc ", "other") == ("abc", None)
    basic = base64.b64encode(b"anyone:the-key").decode()
    # A basic password is the key, and is answered as the bearer token; unpadded base64 (Go's) too.
    assert presented_key(f"Basic {basic}", None) == ("the-key", "the-key")
    assert presented_key(f"Basic {basic.rstrip('=')}", None) == ("the-key", "the-key")
    with pytest.raises(Unauthorized):
        presented_key("Basic !!!", None)


def test_call_headers_choose_engine_cap_and_cache():
    headers = call_headers({"x-strata-engine": ["spark"], "x-strata-max-rows": ["5"],
                            "cache-control": ["no-cache"]})
    assert (headers.engine, headers.max_rows, headers.cache_control) == ("spark", 5, "no-cache")
    assert call_headers({}).max_rows is None
    with pytest.raises(InvalidInput):
        call_headers({"x-strata-max-rows": ["-1"]})


def _like_reference(pattern: str, value: str) -> bool:
    """SQL LIKE by translation through fnmatch-free regex on the unescaped pattern (no backslashes in it)."""
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL) is not None


@given(st.text(alphabet="ab%_-", max_size=8), st.text(alphabet="ab_%-", max_size=8))
def test_filter_patterns_follow_sql_like(pattern, value):
    assert catalog.like_matches(pattern, value) == _like_reference(pattern, value)


def test_filter_patterns_escape_wildcards():
    assert catalog.like_matches("a\\_b", "a_b") and not catalog.like_matches("a\\_b", "axb")
    assert catalog.like_matches("100\\%", "100%") and not catalog.like_matches("100\\%", "1000")
    assert catalog.like_matches(None, "anything")


def test_tables_listing_filters_and_carries_schemas():
    columns = pa.schema([pa.field("ts", pa.int64()), pa.field("msg", pa.string())])
    tables = [("logs-a", columns), ("logs-b", columns), ("metrics", columns)]
    listed = catalog.tables_table(tables, catalog=None, schema_pattern=None, table_pattern="logs%",
                                  table_types=[], include_schema=True)
    assert listed.schema == catalog.TABLES_WITH_SCHEMA_SCHEMA
    assert listed.column("table_name").to_pylist() == ["logs-a", "logs-b"]
    assert pa.ipc.read_schema(pa.py_buffer(listed.column("table_schema")[0].as_py())) == columns
    assert set(listed.column("catalog_name").to_pylist()) == {"strata"}
    assert set(listed.column("db_schema_name").to_pylist()) == {"indexes"}
    assert catalog.tables_table(tables, catalog=None, schema_pattern="other%", table_pattern=None,
                                table_types=[], include_schema=False).num_rows == 0
    assert catalog.tables_table(tables, catalog="elsewhere", schema_pattern=None, table_pattern=None,
                                table_types=[], include_schema=False).num_rows == 0
    assert catalog.tables_table(tables, catalog=None, schema_pattern=None, table_pattern=None,
                                table_types=["VIEW"], include_schema=False).num_rows == 0


def test_sql_info_has_the_protocols_shape():
    table = sql_info_table([sql.FLIGHT_SQL_SERVER_NAME, sql.FLIGHT_SQL_SERVER_READ_ONLY,
                            sql.FLIGHT_SQL_SERVER_TRANSACTION, 99_999])
    assert table.schema == SCHEMA
    assert table.to_pylist() == [{"info_name": sql.FLIGHT_SQL_SERVER_NAME, "value": "Strata query-api"},
                                 {"info_name": sql.FLIGHT_SQL_SERVER_READ_ONLY, "value": True},
                                 {"info_name": sql.FLIGHT_SQL_SERVER_TRANSACTION,
                                  "value": sql.SQL_SUPPORTED_TRANSACTION_NONE}]
    assert sql_info_table([]).num_rows > 10
