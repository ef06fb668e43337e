"""The fields a log line inherits from where it was emitted: the service, the request id, and where relevant the
index, job id and fencing token. They live in one context variable, so code deep in a call stack (a repository, a
Spark submission in a worker thread) logs them without being handed them, and asyncio tasks and `to_thread` calls
carry them along (both copy the context)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

_FIELDS: ContextVar[dict[str, object] | None] = ContextVar("strata_log_fields", default=None)


def current_fields() -> Mapping[str, object]:
    return _FIELDS.get() or {}


def current_request_id() -> str | None:
    value = current_fields().get("request_id")
    return None if value is None else str(value)


@contextmanager
def log_context(**fields: object) -> Iterator[dict[str, object]]:
    """Adds `fields` (None values left out) for the duration of the block; the caller's fields come back after.
    The dict yielded is this scope's own: `annotate` adds to it."""
    scope = {**current_fields(), **{k: v for k, v in fields.items() if v is not None}}
    token = _FIELDS.set(scope)
    try:
        yield scope
    finally:
        _FIELDS.reset(token)


def annotate(**fields: object) -> None:
    """Adds `fields` to the innermost `log_context` scope, for code that learns them after the scope was opened
    (a route learns the index from its path). Tasks that copied the context share that scope, so the request's
    access line gets them too. Outside any scope there is nothing to add to, and nothing happens."""
    scope = _FIELDS.get()
    if scope is not None:
        scope.update({k: v for k, v in fields.items() if v is not None})
