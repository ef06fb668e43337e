"""The OpenAPI document as the code behaves. What every operation of a kind can answer is derived from its route
here, once, so the document cannot drift from the handlers:

- every error is `application/problem+json` with the Problem schema (problems.py answers nothing else);
- an operation with parameters or a body answers 422 (a value that does not validate, or a string PostgreSQL
  cannot store), and one with a JSON body 400 when the body does not parse;
- an operation behind an API key lists both security schemes (FastAPI adds them from `presented_key`), answers
  401, and 403 when it needs a scope; its description names the scopes;
- an operation that uses the app's state (PostgreSQL, Spark, storage) answers 503 when they are down.

A route adds only what it alone answers (404, 409, 413, 429, ...) with `problem_responses()`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts

from strata_core.domain.wire_types import INT64_MAX, INT64_MIN, UINT64_MAX
from strata_frame.web.auth import presented_key
from strata_frame.web.deps import app_state, db_session
from strata_frame.web.problems import PROBLEM_MEDIA_TYPE, PROBLEM_SCHEMA_REF, Problem, problem_response_doc

# FastAPI's own validation-error schemas: every 422 here is a Problem instead.
_FASTAPI_ERROR_SCHEMAS = ("HTTPValidationError", "ValidationError")


def _dependants(dependant: Dependant) -> Iterator[Dependant]:
    yield dependant
    for sub in dependant.dependencies:
        yield from _dependants(sub)


@dataclass(frozen=True, slots=True)
class RouteContract:
    """What a route's signature says it can answer."""

    authenticated: bool
    scopes: tuple[str, ...]
    json_body: bool
    has_inputs: bool
    uses_state: bool

    @classmethod
    def of(cls, route: APIRoute) -> RouteContract:
        nodes = list(_dependants(route.dependant))
        calls = {node.call for node in nodes}
        scopes = tuple(scope for node in nodes for scope in getattr(node.call, "required_scopes", ()))
        inputs = any(node.path_params or node.query_params or node.header_params or node.cookie_params
                     for node in nodes)
        return cls(authenticated=presented_key in calls, scopes=scopes, json_body=route.body_field is not None,
                   has_inputs=inputs or route.body_field is not None,
                   uses_state=bool(calls & {app_state, db_session})
                   or any(getattr(call, "uses_app_state", False) for call in calls))

    def statuses(self) -> list[int]:
        derived = []
        if self.json_body:
            derived.append(400)
        if self.authenticated:
            derived.append(401)
        if self.scopes:
            derived.append(403)
        if self.has_inputs:
            derived.append(422)
        if self.uses_state:
            derived.append(503)
        return derived

    def authorization_note(self) -> str | None:
        if not self.authenticated:
            return None
        if not self.scopes:
            return "**Authorization**: any valid API key."
        needed = " or ".join(f"`{scope}`" for scope in self.scopes)
        admin = "" if "admin" in self.scopes else " (or `admin`)"
        return f"**Authorization**: an API key with the {needed} scope{admin}."


def _complete_operation(operation: dict[str, Any], contract: RouteContract) -> None:
    responses = operation["responses"]
    for status in contract.statuses():
        responses.setdefault(str(status), problem_response_doc(status))
    operation["responses"] = responses = dict(sorted(responses.items()))
    for code, response in responses.items():
        if code[0] in "45":
            response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA_REF}}
            if code == "422":
                response["description"] = problem_response_doc(422)["description"]
    if (note := contract.authorization_note()) is not None:
        operation["description"] = f"{operation.get('description', '').rstrip()}\n\n{note}".lstrip()


def api_routes(routes: list[Any]) -> Iterator[APIRoute]:
    """Every API route, those of included routers too, as FastAPI sees it when it writes the document (prefixed
    path, the app's and the router's dependencies)."""
    for context in iter_route_contexts(routes):
        if isinstance(context.original_route, APIRoute):
            yield context


def _exact_bound(value: float) -> int:
    if value >= 2.0**64:
        return UINT64_MAX
    if value >= 2.0**63:
        return INT64_MAX
    return INT64_MIN if value <= -(2.0**63) else int(value)


def _exact_integer_bounds(node: Any) -> None:
    """FastAPI's OpenAPI models hold bounds as floats, and a float cannot hold 2**63 - 1 (it rounds up to 2**63,
    one past int64): put the exact integers back on every integer schema. The only bounds at or past 2**63 in
    magnitude are int64's and uint64's own (strata_core.domain.wire_types); smaller ones are exact in a float."""
    if isinstance(node, list):
        for item in node:
            _exact_integer_bounds(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "integer":
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            value = node.get(key)
            if isinstance(value, float):
                node[key] = _exact_bound(value)
    for child in node.values():
        _exact_integer_bounds(child)


def complete_spec(spec: dict[str, Any], routes: list[Any]) -> dict[str, Any]:
    """Adds what every route's kind answers to the document FastAPI generated, in place."""
    _exact_integer_bounds(spec)
    for route in api_routes(routes):
        if not route.include_in_schema:
            continue
        contract = RouteContract.of(route)
        for method in route.methods:
            _complete_operation(spec["paths"][route.path_format][method.lower()], contract)
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    for name in _FASTAPI_ERROR_SCHEMAS:
        schemas.pop(name, None)
    problem = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(problem.pop("$defs", {}))
    schemas["Problem"] = problem
    return spec


def install_openapi(app: FastAPI) -> None:
    """Makes `app.openapi()` (and /openapi.json, /docs) serve the completed document."""
    generate = app.openapi
    completed: list[dict[str, Any]] = []

    def openapi() -> dict[str, Any]:
        # FastAPI caches its document and writes a new one when routes change: complete each new one once.
        spec = generate()
        if not completed or completed[0] is not spec:
            completed[:] = [complete_spec(spec, app.routes)]
        return spec

    app.openapi = openapi
