"""Typed domain errors. Services raise these; one handler per app turns them into RFC 9457 problem+json.

Each class has a stable `type` slug that clients may switch on; messages name what is wrong.
"""

from __future__ import annotations

from typing import Any

PROBLEM_BASE = "https://strata.dev/problems/"


class StrataError(Exception):
    status = 500
    slug = "internal"
    title = "Internal error"

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []
        self.headers = headers or {}

    @property
    def type_uri(self) -> str:
        return PROBLEM_BASE + self.slug


class BadRequest(StrataError):
    status, slug, title = 400, "bad-request", "Malformed request"


class Unauthorized(StrataError):
    status, slug, title = 401, "unauthorized", "Missing or unknown API key"


class Forbidden(StrataError):
    status, slug, title = 403, "forbidden", "API key lacks the scope or tenant"


class NotFound(StrataError):
    status, slug, title = 404, "not-found", "Not found"


class Conflict(StrataError):
    status, slug, title = 409, "conflict", "Conflict"


class PayloadTooLarge(StrataError):
    status, slug, title = 413, "payload-too-large", "Request body too large"


class UnsupportedMediaType(StrataError):
    status, slug, title = 415, "unsupported-media-type", "Unsupported content type"


class InvalidInput(StrataError):
    """422: the request is well-formed but a field's value is not acceptable; `errors` names each field."""

    status, slug, title = 422, "invalid-input", "Invalid input"

    @classmethod
    def field(cls, field: str, message: str) -> InvalidInput:
        return cls(f"{field}: {message}", errors=[{"field": field, "message": message}])

    @classmethod
    def fields(cls, problems: list[tuple[str, str]]) -> InvalidInput:
        detail = "; ".join(f"{f}: {m}" for f, m in problems)
        return cls(detail, errors=[{"field": f, "message": m} for f, m in problems])


class Unavailable(StrataError):
    status, slug, title = 503, "unavailable", "Dependency unavailable"


class TooManyRequests(StrataError):
    """429: the caller is over a rate or concurrency limit; a `Retry-After` header says when to try again."""

    status, slug, title = 429, "rate-limited", "Too many requests"
