"""RFC 9457 problem+json responses, and the error responses every route declares in OpenAPI."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from strata_shared.errors import PROBLEM_BASE, StrataError

PROBLEM_MEDIA_TYPE = "application/problem+json"


class FieldProblem(BaseModel):
    field: str
    message: str


class Problem(BaseModel):
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


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entries for these statuses, all problem+json."""
    return {
        status: {"model": Problem, "description": _STANDARD_TITLES.get(status, "Error"),
                 "content": {PROBLEM_MEDIA_TYPE: {}}}
        for status in statuses
    }


def problem_response(status: int, slug: str, title: str, detail: str, instance: str | None,
                     errors: list[dict[str, Any]] | None = None,
                     headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"type": PROBLEM_BASE + slug, "title": title, "status": status, "detail": detail,
            "instance": instance, "errors": errors or []}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def _location(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:] or parts
    return ".".join(parts)


def install_problem_handlers(app: FastAPI) -> None:
    @app.exception_handler(StrataError)
    async def _domain(request: Request, exc: StrataError) -> JSONResponse:
        return problem_response(exc.status, exc.slug, exc.title, exc.detail, request.url.path, exc.errors,
                                exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"field": _location(tuple(e.get("loc", ()))), "message": e.get("msg", "invalid")}
                  for e in exc.errors()]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid request"
        return problem_response(422, "invalid-input", "Invalid input", detail, request.url.path, errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
        return problem_response(exc.status_code, slug, _STANDARD_TITLES.get(exc.status_code, "Error"),
                                str(exc.detail), request.url.path, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Never leak internals; the structured log carries the traceback.
        import logging

        logging.getLogger("strata").exception("unhandled error on %s", request.url.path)
        return problem_response(500, "internal", "Internal error", "unexpected server error", request.url.path)
