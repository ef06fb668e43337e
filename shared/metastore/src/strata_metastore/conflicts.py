"""Transactions PostgreSQL aborts because of a concurrent one (a deadlock, a serialization failure): nothing of
them was written, and the same request run again normally succeeds. They are retried where a route can run its
transaction again from the start, and otherwise answered as a 503 that says so (`web.problems`), never a bare 500.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.errors import Unavailable

T = TypeVar("T")
# SQLSTATE class 40, the ones PostgreSQL raises for a conflict with a concurrent transaction.
_CONFLICTS = {"40P01": "a deadlock with a concurrent transaction", "40001": "a serialization failure"}


class TransactionConflict(Unavailable):
    """503: PostgreSQL aborted the request's transaction because of a concurrent one; nothing was written."""

    slug, title = "transaction-conflict", "Aborted by a concurrent change"


def conflict_of(exc: BaseException) -> str | None:
    """What aborted the transaction, if `exc` is such a conflict (the driver's SQLSTATE, asyncpg or psycopg, through
    SQLAlchemy or raised by asyncpg itself, as on `plain_writes`' connections)."""
    if isinstance(exc, asyncpg.PostgresError):
        code = exc.sqlstate
    elif isinstance(exc, DBAPIError):
        code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    else:
        return None
    return _CONFLICTS.get(code) if isinstance(code, str) else None


def conflict_problem(exc: BaseException) -> TransactionConflict | None:
    if (cause := conflict_of(exc)) is None:
        return None
    return TransactionConflict(f"PostgreSQL aborted the transaction: {cause}; nothing was written, retry the "
                               "request", headers={"Retry-After": "1"})


async def retrying_conflicts(session: AsyncSession, transaction: Callable[[], Awaitable[T]], attempts: int = 3) -> T:
    """`transaction` run again from the start (after a rollback) when PostgreSQL aborts it for a conflict, up to
    `attempts` times; it must read everything it decides on itself, inside the attempt."""
    for attempt in range(1, attempts + 1):
        try:
            return await transaction()
        except DBAPIError as exc:
            if conflict_of(exc) is None or attempt == attempts:
                raise
            await session.rollback()
    raise AssertionError("unreachable")
