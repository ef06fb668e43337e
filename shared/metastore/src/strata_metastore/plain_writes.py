"""Write transactions on plain asyncpg connections, for a hot write path (ingestion's stage and publish).

Through SQLAlchemy a statement cost ingestion about 0.37 ms of the event loop against 0.12 ms on plain asyncpg
(docs/benchmarks.md, "Interactive latency"), and a unit of work also paid a session, a pool checkout bridged by a
greenlet and a ping: a third of the busy samples of a py-spy profile of indexer-api under sequential ingest
requests were SQLAlchemy's ("Ingestion at a few ms of CPU per request"). Here a transaction is BEGIN, its
statements (SQLAlchemy statements compiled once for asyncpg, `PlainStatement`, so the SQL stays the models'), and
the commit log's protocol (`commit_log.commit_logged`, which `CommitLogSession` runs too): the drain (numbering
the transaction's captures as one entry, inside the transaction), COMMIT, then the entry shipped to storage, with
the crash steps (`commit_log.STEPS`).

The connections are `SingleReads`' (kept open between uses). A connection PostgreSQL dropped while it was idle
fails its BEGIN, before anything is written: it is discarded and the transaction begun on a new one, as the
engine's pre-ping replaces one unseen. A transaction that fails after that is rolled back (or its connection
closed, which rolls it back) and its error answered as the session path answers it: a conflict with a concurrent
transaction is `TransactionConflict`, a lost connection `DatabaseUnavailable` (both 503).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.sql.expression import Executable

from strata_metastore.commit_log import DRAIN, CommitLogWriter, Shipment, commit_logged, commit_unshipped
from strata_metastore.conflicts import conflict_problem
from strata_metastore.engine import DatabaseUnavailable, connection_lost, database_unavailable
from strata_metastore.single_reads import SingleReads

_DIALECT = PGDialect_asyncpg()
_PLAIN_CONSTANTS = (bool, int, float, str, type(None))


class PlainStatement:
    """A SQLAlchemy statement compiled once for asyncpg (`$n` parameters); `args` puts a call's parameters, by
    name, in their positions. Constants the statement binds itself (`True` in an ON CONFLICT's SET) keep their
    compiled value; they must be of types asyncpg encodes as SQLAlchemy would (checked here), since no bind
    processor runs."""

    def __init__(self, statement: Executable) -> None:
        compiled = statement.compile(dialect=_DIALECT)
        self.sql = str(compiled)
        self.names = tuple(compiled.positiontup or ())
        self._constants = {k: v for k, v in compiled.params.items() if v is not None}
        for name, value in self._constants.items():
            if not isinstance(value, _PLAIN_CONSTANTS):
                raise TypeError(f"constant {name}={value!r} of {type(value).__name__} needs a bind processor")

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        missing = [n for n in self.names if n not in params and n not in self._constants]
        if missing:
            raise KeyError(f"no value for the statement's parameters {', '.join(missing)}")
        return [params[n] if n in params else self._constants[n] for n in self.names]


class PlainTransaction:
    """One transaction's statements, then `commit` (the commit log's drain, COMMIT, ship)."""

    def __init__(self, connection: asyncpg.Connection, commit_log: CommitLogWriter | None) -> None:
        self.connection = connection
        self.commit_log = commit_log
        self.committed = False

    async def execute(self, statement: PlainStatement, params: Mapping[str, Any]) -> None:
        await self.connection.execute(statement.sql, *statement.args(params))

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await self.connection.fetch(sql, *args)

    async def commit(self) -> None:
        """The drain, COMMIT and the entry written to storage: `commit_logged`, the protocol the session path runs
        too (these statements all write logged tables, so the drain always runs: it numbers nothing when no row
        changed)."""
        await commit_logged(lambda: self.connection.fetchrow(_DRAIN_SQL), self._commit, self.commit_log)

    async def commit_unshipped(self) -> Shipment:
        """`commit` up to its COMMIT; the caller ships the returned entry (`Shipment.ship`) before it goes on,
        after the transaction's block (the connection is given back first)."""
        return await commit_unshipped(lambda: self.connection.fetchrow(_DRAIN_SQL), self._commit, self.commit_log)

    async def _commit(self) -> None:
        await self.connection.execute("COMMIT")
        self.committed = True


_DRAIN_SQL = str(DRAIN.compile(dialect=_DIALECT))


class PlainWrites:
    """Write transactions on `reads`' connections, at most `max_open` at a time (as the engine's pool bounds the
    session path's), entries shipped by `commit_log` (None: they wait in PostgreSQL for the ship pass)."""

    def __init__(self, reads: SingleReads, commit_log: CommitLogWriter | None, max_open: int = 10) -> None:
        self.reads = reads
        self.commit_log = commit_log
        self._open = asyncio.Semaphore(max_open)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PlainTransaction]:
        """A transaction begun; the block ends it with `commit()`, else it is rolled back on the way out."""
        async with self._open:
            connection = await self._begin()
            transaction = PlainTransaction(connection, self.commit_log)
            try:
                yield transaction
            except Exception as exc:
                await self._end_failed(connection, transaction)
                answer = _answered(exc, self.reads.where)
                if answer is exc:
                    raise
                raise answer from exc
            except BaseException:
                # Cancelled, or a crash injected at a commit step: the connection is closed, which rolls back
                # whatever is open, as a process dying would.
                connection.terminate()
                raise
            if transaction.committed:
                self.reads.release(connection)
            else:
                await self._end_failed(connection, transaction)

    async def _begin(self) -> asyncpg.Connection:
        for attempt in (1, 2):
            connection = await self.reads.checkout()
            try:
                await connection.execute("BEGIN")
            except Exception as exc:
                if not connection.is_closed():
                    # The statement failed on a sound connection (PostgreSQL refusing transactions, say).
                    self.reads.release(connection)
                    raise
                # Dropped while idle (a restart): the others are too, and nothing was written yet.
                self.reads.close()
                if attempt == 2:
                    raise database_unavailable(self.reads.where, exc, "closed the connection") from exc
                continue
            except BaseException:
                connection.terminate()
                raise
            return connection
        raise AssertionError("unreachable")

    async def _end_failed(self, connection: asyncpg.Connection, transaction: PlainTransaction) -> None:
        if transaction.committed or connection.is_closed():
            if not connection.is_closed():
                self.reads.release(connection)
            return
        try:
            await connection.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - the transaction's own error is the one to answer; this connection goes
            connection.terminate()
            return
        except BaseException:
            connection.terminate()
            raise
        self.reads.release(connection)


def _answered(exc: Exception, where: str) -> Exception:
    """The error the session path answers `exc` with: 503s for a conflict and a lost connection, else `exc`."""
    if isinstance(exc, asyncpg.PostgresError):
        problem = conflict_problem(exc)
        if problem is not None:
            return problem
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if isinstance(exc, (asyncpg.ConnectionDoesNotExistError, asyncpg.InterfaceError, OSError)) \
            or connection_lost(exc):
        return database_unavailable(where, exc, "closed the connection")
    return exc
