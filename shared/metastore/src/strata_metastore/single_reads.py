"""Single statements on a hot read path, on plain asyncpg connections kept open between them.

query-api checks its kept plan on every repeated query: one indexed read, a tenth of a millisecond in PostgreSQL.
Through SQLAlchemy (a pool checkout bridged by a greenlet, the statement's compiled-cache lookup, the result's
row processing) the same read took 0.37 ms of the event loop's time; here 0.12 ms (docs/benchmarks.md,
"Interactive latency"). Autocommit: a statement is one round trip, with no BEGIN, ping or ROLLBACK around it.

A connection PostgreSQL dropped (a restart, `pg_terminate_backend`) fails its statement: it is discarded and the
statement sent once more on a new connection (reads, or writes that do the same when sent twice, such as query-api's
batches of running queries: sending twice is harmless). A server that cannot be
reached is `DatabaseUnavailable` (503) naming it, as for every other metastore access.

`session_driver` is the same plain-asyncpg path for reads that must share a session's transaction (a query plan's
reads are one REPEATABLE READ snapshot): the statements run on the session's own connection, inside its transaction.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from strata_metastore.engine import database_unavailable

# Keys of SQLAlchemy's asyncpg connect arguments that are SQLAlchemy's own, not asyncpg.connect's.
_SQLALCHEMY_ONLY = ("prepared_statement_cache_size", "prepared_statement_name_func", "async_fallback")


async def session_driver(session: AsyncSession) -> asyncpg.Connection:
    """The asyncpg connection under `session`, inside the session's transaction: statements sent on it
    (`$1`-style parameters) read what the session's own statements would, in the same snapshot, without
    SQLAlchemy's compile, execution context and row processing around each (a query plan's reads: ~3 ms of its
    ~14 ms of CPU; docs/benchmarks.md, "EXPLAIN over 1,000,000 published splits"). Pending ORM changes are flushed
    first, as the session's own statements would. The connection is the session's: never closed or kept here,
    and the session's commit or rollback ends what was sent on it."""
    if session.new or session.dirty or session.deleted:
        await session.flush()
    connection = await session.connection()
    fairy = await connection.get_raw_connection()
    adapted = fairy.dbapi_connection  # SQLAlchemy's adapter of the asyncpg connection
    if adapted._transaction is None:
        # The adapter begins its transaction with its first statement (with the session's isolation level and
        # read-only setting); before a statement of ours, begin it the same way, so it is the session's to end.
        await adapted._start_transaction()
    return fairy.driver_connection


class SingleReads:
    def __init__(self, database_url: str, application_name: str, max_idle: int = 4) -> None:
        url = make_url(database_url)
        # The connect arguments SQLAlchemy's own asyncpg dialect derives from the URL (host, port, socket
        # directory, user, password, database, ssl and the rest of its query), so both reach the same server alike.
        args, kwargs = PGDialect_asyncpg().create_connect_args(url)
        for key in _SQLALCHEMY_ONLY:
            kwargs.pop(key, None)
        settings = dict(kwargs.pop("server_settings", None) or {})
        settings["application_name"] = application_name
        self._args, self._kwargs = args, {**kwargs, "server_settings": settings}
        self.where = url.render_as_string(hide_password=True)
        self.max_idle = max_idle
        self._idle: list[asyncpg.Connection] = []

    async def fetchrow(self, sql: str, *params: Any) -> asyncpg.Record | None:
        """The first row of `sql` (`$1`-style parameters), or None."""
        for attempt in (1, 2):
            connection = await self.checkout()
            try:
                row = await connection.fetchrow(sql, *params)
            except Exception as exc:
                if not connection.is_closed():
                    # The statement failed on a sound connection (a bad parameter, a missing table).
                    self.release(connection)
                    raise
                # Dropped: after a restart the idle ones are too, so the statement goes to a new connection.
                self.close()
                if attempt == 2:
                    raise database_unavailable(self.where, exc, "closed the connection") from exc
                continue
            except BaseException:
                # Interrupted mid-statement (a cancelled request): its answer may still be on the wire.
                connection.terminate()
                raise
            self.release(connection)
            return row
        raise AssertionError("unreachable")

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.terminate()

    async def checkout(self) -> asyncpg.Connection:
        """An idle connection, or a new one; given back with `release` (`plain_writes` begins its transactions on
        these too)."""
        return self._idle.pop() if self._idle else await self._connect()

    def release(self, connection: asyncpg.Connection) -> None:
        if len(self._idle) < self.max_idle:
            self._idle.append(connection)
        else:
            connection.terminate()

    async def _connect(self) -> asyncpg.Connection:
        try:
            return await asyncpg.connect(*self._args, **self._kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure to connect is the database being unavailable
            raise database_unavailable(self.where, exc) from exc
