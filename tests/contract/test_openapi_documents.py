"""Every operation of every OpenAPI document (the three APIs and the query proxy) says what it answers: every
error as problem+json with the Problem schema, 400/401/403/422/503 wherever the route's kind can answer them,
both security schemes on every authenticated operation and none on the open ones, int64 bounds on every integer
a request carries, and a pattern on every id in a path."""

from __future__ import annotations

from typing import Any

import pytest

from strata_core.config import Settings

PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
OPEN_OPERATIONS = {"/healthz", "/readyz", "/metrics"}
INT64 = (-(2**63), 2**63 - 1)
# Typed statistics a merge reports: a u64 column's min/max is stored as numeric(20, 0), past int64.
UINT64_STATISTICS = ("column_stats.*.min", "column_stats.*.max")


def _documents() -> dict[str, dict[str, Any]]:
    from strata_indexer.app import create_app as indexer_app
    from strata_planner.app import create_app as planner_app
    from strata_query.app import create_app as query_app
    from strata_services.proxy.app import create_proxy_app

    settings = Settings(database_url="postgresql+asyncpg://spec@127.0.0.1/spec", api_keys="{}")
    apps = {"indexer": indexer_app(settings, background=False), "planner": planner_app(settings, background=False),
            "query": query_app(settings), "proxy": create_proxy_app(settings)}
    return {name: app.openapi() for name, app in apps.items()}


DOCUMENTS = _documents()


def _operations(spec: dict[str, Any]):
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", path, operation


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _integers(spec: dict[str, Any], schema: dict[str, Any], where: str, seen: set[str]):
    """(location, schema) of every integer a request schema can carry, through refs, unions, arrays, objects."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in seen:
            return
        seen = seen | {name}
        schema = _resolve(spec, schema)
    if schema.get("type") == "integer":
        yield where, schema
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, []):
            yield from _integers(spec, option, where, seen)
    if "items" in schema:
        yield from _integers(spec, schema["items"], f"{where}[]", seen)
    for name, prop in schema.get("properties", {}).items():
        yield from _integers(spec, prop, f"{where}.{name}", seen)
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _integers(spec, schema["additionalProperties"], f"{where}.*", seen)


@pytest.mark.parametrize("api", sorted(DOCUMENTS))
def test_every_operation_documents_its_errors_as_problems(api):
    spec = DOCUMENTS[api]
    assert spec["openapi"].startswith("3.1")
    schemas = spec["components"]["schemas"]
    assert "Problem" in schemas and "HTTPValidationError" not in schemas
    operation_ids = []
    for name, path, operation in _operations(spec):
        operation_ids.append(operation["operationId"])
        responses = operation["responses"]
        assert any(code[0] == "2" for code in responses), name
        for code, response in responses.items():
            if code[0] in "45":
                assert response.get("content") == PROBLEM, f"{name} {code}: {response.get('content')}"
        body = operation.get("requestBody", {}).get("content", {})
        if "application/json" in body:
            assert "400" in responses, f"{name}: a malformed JSON body answers 400"
        if operation.get("parameters") or body:
            assert "422" in responses, f"{name}: invalid input answers 422"
        if path.startswith("/v1/"):
            assert "503" in responses, f"{name}: a dependency down answers 503"
    assert len(operation_ids) == len(set(operation_ids)), "operationIds are unique"


@pytest.mark.parametrize("api", sorted(DOCUMENTS))
def test_security_schemes_apply_per_operation(api):
    spec = DOCUMENTS[api]
    schemes = spec["components"]["securitySchemes"]
    assert schemes["bearer"] == {"type": "http", "scheme": "bearer", "description": schemes["bearer"]["description"]}
    assert schemes["apiKey"]["type"] == "apiKey" and schemes["apiKey"]["in"] == "header"
    assert schemes["apiKey"]["name"] == "X-API-Key"
    for name, path, operation in _operations(spec):
        if path in OPEN_OPERATIONS:
            assert "security" not in operation, name
            assert "401" not in operation["responses"], name
            continue
        # Either scheme alone is enough: two requirement objects, not one with both.
        assert operation["security"] == [{"bearer": []}, {"apiKey": []}], name
        assert "401" in operation["responses"], name
        assert "**Authorization**" in operation["description"], f"{name} names the scopes it needs"
        if "scope" in operation["description"].split("**Authorization**")[1]:
            assert "403" in operation["responses"], name


@pytest.mark.parametrize("api", sorted(DOCUMENTS))
def test_request_integers_are_int64_and_path_ids_have_patterns(api):
    spec = DOCUMENTS[api]
    for name, _, operation in _operations(spec):
        for parameter in operation.get("parameters", []):
            where = f"{name} {parameter['in']} {parameter['name']}"
            for location, schema in _integers(spec, parameter["schema"], where, set()):
                assert INT64[0] <= schema.get("minimum", INT64[0] - 1) and \
                    schema.get("maximum", INT64[1] + 1) <= INT64[1], f"{location} is not bounded to int64"
            if parameter["in"] == "path" and parameter["name"] != "path":
                assert "pattern" in parameter["schema"], f"{where} has no pattern"
        for media, content in operation.get("requestBody", {}).get("content", {}).items():
            for location, schema in _integers(spec, content.get("schema", {}), f"{name} {media}", set()):
                high = 2**64 - 1 if location.endswith(UINT64_STATISTICS) else INT64[1]
                assert INT64[0] <= schema.get("minimum", INT64[0] - 1) and \
                    schema.get("maximum", high + 1) <= high, f"{location} is not bounded to int64"


def test_ingestion_documents_every_media_type_it_accepts():
    body = DOCUMENTS["indexer"]["paths"]["/v1/indexes/{index_id}/ingest"]["post"]["requestBody"]
    assert body["required"] is True
    assert set(body["content"]) == {"application/vnd.apache.arrow.stream", "application/octet-stream",
                                    "application/x-ndjson"}
    assert body["content"]["application/octet-stream"]["schema"] == {"type": "string", "format": "binary"}
