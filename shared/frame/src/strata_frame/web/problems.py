"""RFC 9457 problem+json responses, and the error responses every route declares in OpenAPI."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from strata_core.errors import PROBLEM_BASE, BadRequest, StrataError
from strata_metastore.conflicts import conflict_problem
from strata_metastore.engine import DatabaseUnavailable, connection_lost

PROBLEM_MEDIA_TYPE = "application/problem+json"
log = logging.getLogger("strata")


class FieldProblem(BaseModel):
    field: str = Field(description="the field, parameter or clause at fault, as a dotted path into the request")
    message: str
    line: int | None = Field(None, description="SQL syntax errors: the 1-based line of the offending token")
    column: int | None = Field(None, description="SQL syntax errors: the 1-based column of the offending token")


class Problem(BaseModel):
    """An RFC 9457 problem: `type` is a stable URI clients may switch on, `errors` names each bad field."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[FieldProblem] = []


_STANDARD_TITLES = {400: "Malformed request", 401: "Missing or unknown API key", 403: "Forbidden",
                    404: "Not found", 405: "Method not allowed", 409: "Conflict", 413: "Request body too large",
                    415: "Unsupported content type", 422: "Invalid input", 429: "Too many requests",
                    500: "Internal error", 502: "Spark job failed", 503: "Dependency unavailable",
                    504: "Timed out"}


PROBLEM_SCHEMA_REF = {"$ref": "#/components/schemas/Problem"}


def problem_response_doc(status: int) -> dict[str, Any]:
    """The OpenAPI response object of an error: problem+json with the Problem schema, and nothing else."""
    return {"description": _STANDARD_TITLES.get(status, "Error"),
            "content": {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA_REF}}}


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entries for the statuses a route answers beyond those every route of its kind does
    (strata_frame.web.openapi derives those: 400, 401, 403, 422, 503)."""
    return {status: problem_response_doc(status) for status in statuses}


# What a detail must never show a client, whatever raised it: Python reprs (`<class 'sqlglot.expressions.Glob'>`,
# `<x.Y object at 0x7f...>`) are shown by their last name, a Spark Connect address as "spark connect", a scan's
# internal view as "the index", and anything from a stack trace on (Python's or the JVM's) is cut.
_CLASS_REPR = re.compile(r"<class '(?:[\w]+\.)*(\w+)'>|<(?:[\w]+\.)*(\w+) object at 0x[0-9a-fA-F]+>")
_SPARK_ADDRESS = re.compile(r"sc://[^\s,)'\"]+?(?=:?\s|[,)'\"]|$)")
# The view a query's scan is registered as on either engine (strata_query.execution.scan_request): the user wrote
# the index's name, and an engine's message about the view means the index.
_SCAN_VIEW = re.compile(r"strata_scan_[0-9a-z]+(?:_raw)?")
_STACK = re.compile(r"\s*(?:Traceback \(most recent call last\)|JVM stacktrace:|\n\s+at [\w$.]+\().*", re.DOTALL)


def public_detail(detail: str) -> str:
    """`detail` without internals (the original is logged when anything was taken out)."""
    shown = _STACK.sub("", detail)
    shown = _CLASS_REPR.sub(lambda m: m.group(1) or m.group(2), shown)
    shown = _SPARK_ADDRESS.sub("spark connect", shown)
    shown = _SCAN_VIEW.sub("the index", shown)
    if shown != detail:
        log.warning("problem detail shown without internals; it was: %s", detail)
    return shown


def problem_body(status: int, slug: str, title: str, detail: str, instance: str | None,
                 errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"type": PROBLEM_BASE + slug, "title": title, "status": status, "detail": public_detail(detail),
            "instance": instance, "errors": [{**e, "message": public_detail(e["message"])}
                                             if isinstance(e.get("message"), str) else e for e in errors or []]}


def problem_of(exc: StrataError) -> dict[str, Any]:
    """The problem a domain error is answered with, as JSON, for a body that carries it (a failed plan's)."""
    return problem_body(exc.status, exc.slug, exc.title, exc.detail, None, exc.errors)


def problem_response(status: int, slug: str, title: str, detail: str, instance: str | None,
                     errors: list[dict[str, Any]] | None = None,
                     headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(problem_body(status, slug, title, detail, instance, errors), status_code=status,
                        media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def database_problem(exc: BaseException) -> StrataError | None:
    """The 503 a lost PostgreSQL connection, an exhausted pool or a transaction aborted by a concurrent one is
    answered with, on any door; None for any other error (a defect)."""
    if (conflict := conflict_problem(exc)) is not None:
        return conflict
    if isinstance(exc, PoolTimeout):
        return DatabaseUnavailable("no PostgreSQL connection became free in time: the API is overloaded",
                                   headers={"Retry-After": "1"})
    if isinstance(exc, DBAPIError) and (exc.connection_invalidated or connection_lost(exc)):
        return DatabaseUnavailable(f"the connection to PostgreSQL was lost: {str(exc.orig).strip()[:300]}")
    return None


def _location(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:] or parts
    return ".".join(parts)


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    # Never leak internals; the log carries the traceback.
    log.error("unhandled error on %s", request.url.path, exc_info=exc)
    return problem_response(500, "internal", "Internal error", "unexpected server error", request.url.path)


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(StrataError)
    async def _domain(request: Request, exc: StrataError) -> JSONResponse:
        return problem_response(exc.status, exc.slug, exc.title, exc.detail, request.url.path, exc.errors,
                                exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        # A body that does not parse is malformed (400); one that parses but does not fit is invalid (422).
        unparsable = [e for e in exc.errors() if e.get("type") == "json_invalid"]
        if unparsable:
            error = unparsable[0]
            position = error.get("loc", ("body", 0))[-1]
            reason = (error.get("ctx") or {}).get("error", "not JSON")
            return problem_response(400, BadRequest.slug, BadRequest.title,
                                    f"the body is not valid JSON: {reason} (at character {position})",
                                    request.url.path, [{"field": "body", "message": reason}])
        errors = [{"field": _location(tuple(e.get("loc", ()))), "message": e.get("msg", "invalid")}
                  for e in exc.errors()]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid request"
        return problem_response(422, "invalid-input", "Invalid input", detail, request.url.path, errors)

    @app.exception_handler(DBAPIError)
    @app.exception_handler(PoolTimeout)
    async def _database(request: Request, exc: DBAPIError | PoolTimeout) -> JSONResponse:
        problem = database_problem(exc)
        if problem is None:
            return await _internal_error(request, exc)
        return problem_response(problem.status, problem.slug, problem.title, problem.detail, request.url.path,
                                headers=problem.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        slug = {400: BadRequest.slug, 404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        return problem_response(exc.status_code, slug, _STANDARD_TITLES.get(exc.status_code, "Error"),
                                str(exc.detail), request.url.path, headers=getattr(exc, "headers", None))

    app.add_exception_handler(Exception, _internal_error)
