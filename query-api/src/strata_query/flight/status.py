"""A problem (RFC 9457, as the HTTP API answers it) as a Flight status: the gRPC code its HTTP status maps to, and
the problem's JSON (type, title, status, detail, errors) as the message, so a Flight client reads the same type and
detail as an HTTP client.

pyarrow's server reaches only some gRPC codes: INVALID_ARGUMENT and NOT_FOUND through ArrowInvalid and
ArrowKeyError, the rest through its FlightError classes. It has no way to answer RESOURCE_EXHAUSTED (Arrow's
transport codes have none to map to it), so a 429 (over the tenant's rate or cap, or query-api's admission) is
UNAVAILABLE, the code gRPC clients retry with backoff. It is also the one Flight clients read as "try later":
Arrow's C++ and Python clients turn RESOURCE_EXHAUSTED into ArrowInvalid and ADBC's Flight SQL driver into an
internal error, while UNAVAILABLE is FlightUnavailableError and ADBC's IO status. The problem's status (429) and
detail (the limit, when to retry) tell it apart from a replica going away."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

# HTTP status -> the exception class pyarrow turns into the gRPC code.
_BY_STATUS: dict[int, type[Exception]] = {
    400: pa.ArrowInvalid,  # INVALID_ARGUMENT
    406: pa.ArrowInvalid,
    413: pa.ArrowInvalid,
    415: pa.ArrowInvalid,
    422: pa.ArrowInvalid,
    401: flight.FlightUnauthenticatedError,  # UNAUTHENTICATED
    403: flight.FlightUnauthorizedError,  # PERMISSION_DENIED
    404: pa.ArrowKeyError,  # NOT_FOUND
    409: flight.FlightCancelledError,  # CANCELLED: the query was cancelled
    429: flight.FlightUnavailableError,  # UNAVAILABLE: see the module's docstring
    502: flight.FlightUnavailableError,
    503: flight.FlightUnavailableError,
    504: flight.FlightTimedOutError,  # DEADLINE_EXCEEDED
}
# A query over its time limit is a 422 on HTTP (its own limit, not a retryable failure) and DEADLINE_EXCEEDED here,
# the code gRPC clients know for it.
_BY_SLUG: dict[str, type[Exception]] = {"query-timeout": flight.FlightTimedOutError}


def error_class(status: int) -> type[Exception]:
    """The exception pyarrow answers with the gRPC code of an HTTP status; INTERNAL for any other 5xx, INVALID_ARGUMENT
    for any other 4xx."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return pa.ArrowInvalid if 400 <= status < 500 else flight.FlightInternalError


def flight_error(problem: dict[str, Any]) -> Exception:
    """The exception to raise from a Flight handler for `problem` (a `problem_of` body)."""
    body = {key: value for key, value in problem.items() if key != "instance" and value not in (None, [])}
    by_slug = _BY_SLUG.get(str(problem.get("type", "")).rsplit("/", 1)[-1])
    return (by_slug or error_class(int(problem["status"])))(json.dumps(body, separators=(",", ":"), ensure_ascii=False))
