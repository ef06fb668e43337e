"""The commit log: every transaction that changes committed state leaves one numbered entry, in PostgreSQL and
then in object storage, so the bucket alone can rebuild the metastore (docs/architecture.md, "The commit log").

Triggers (migration 0017) capture what each statement did to a table of `LOGGED_TABLES`. A session of
`CommitLogSession` (every session `engine.session_factory` makes) ends such a transaction in three steps:

1. *drain*: one statement numbers the transaction's captures as one `commit_log` entry (a row naming the
   transaction, its number drawn from `commit_log_seq`) and reads them back, inside the transaction (CL-1: an
   entry exists iff its transaction committed). The captures stay where the triggers wrote them, written once;
   a checkpoint deletes them with their entry;
2. *commit*: PostgreSQL commits the change and its entry together;
3. *ship*: the entry is written to `_commit_log/entries/{seq}.json` under the storage root before the session's
   caller goes on, so a change acknowledged to a client is in the bucket unless storage refused that write
   (CL-2). A writer that dies between 2 and 3, or whose write storage refused, leaves the entry in `commit_log`,
   which the ship pass (`commit_log_passes.ship_pending`) writes.

The number is drawn in the drain, after every row lock the transaction takes, so of two transactions touching a
same row the later to commit has the larger number: replaying entries in number order gives each row its last
committed value (CL-3). Transactions that touch no common row may commit out of number order; their entries are
independent, so their order does not matter.

Which transaction captured anything is known from its statements (`_WRITES_LOGGED`, matched as they run): a
transaction that wrote no logged table pays no drain, so the query path's writes (its shared registry) cost no
extra round trip. A write the pattern misses still fails loudly: the deferred trigger of migration 0017 refuses
to commit captures left undrained.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.storage import ObjectStore
from strata_core.storage_layout import commit_log_entry_path
from strata_metastore import commit_log_models  # noqa: F401 - registers the tables

log = logging.getLogger("strata.commit_log")
T = TypeVar("T")

# table -> primary key columns. The capture triggers of migration 0017 are on exactly these tables (pinned by
# tests/metastore/test_commit_log.py against the database): what decides what a query sees. Counters derived from
# them by triggers (`published_totals`, `plan_generations`) are derived again when the log is replayed; jobs,
# leases, samples and skips are work in progress, not commitments, and are planned again after a rebuild.
LOGGED_TABLES: dict[str, tuple[str, ...]] = {
    "indexes": ("index_uid",),
    "splits": ("split_id",),
    "split_column_stats": ("split_id", "column_name"),
    "index_artifacts": ("artifact_id",),
    "artifact_snapshots": ("split_id",),
    "deletes": ("delete_id",),
    "delete_splits": ("delete_id", "split_id"),
}
ENTRY_FORMAT = 1

_WRITES_LOGGED = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:ONLY\s+)?(?:\w+\.)?\"?(?:"
    + "|".join(LOGGED_TABLES) + r")\b", re.IGNORECASE)
_CAPTURED = "strata_commit_log_captured"

# An entry's changes as JSON text, in capture order: its transaction's captures (NULL for an entry restored by a
# rebuild, whose changes are the bucket's object). `l` is the commit_log row. Concatenated as text: the captures
# are JSON text already, and parsing them to build the entry would cost more than the rest of the commit
# (docs/benchmarks.md, "Commit log").
ENTRY_CHANGES = """(
    SELECT '[' || string_agg('{"table": ' || to_json(c.table_name)::text || ', "op": "' || c.op || '", "rows": '
                             || c.rows::text || '}', ', ' ORDER BY c.id) || ']'
      FROM commit_log_changes c WHERE c.xid = l.xid)"""
# One statement: the transaction's captures become one numbered entry, read back. No entry (and no number drawn)
# when a statement matched but changed no row.
DRAIN = text(f"""
    WITH l AS (
        INSERT INTO commit_log (seq, xid)
        SELECT nextval('commit_log_seq'), t.xid FROM (SELECT pg_current_xact_id_if_assigned() AS xid) t
         WHERE EXISTS (SELECT 1 FROM commit_log_changes c WHERE c.xid = t.xid)
        RETURNING seq, xid, committed_at
    )
    SELECT l.seq, l.committed_at, {ENTRY_CHANGES} FROM l
""")


@dataclass(frozen=True)
class Entry:
    seq: int
    body: bytes

    @classmethod
    def of(cls, seq: int, committed_at: Any, changes_json: str) -> Entry:
        stamp = committed_at.isoformat() if hasattr(committed_at, "isoformat") else str(committed_at)
        body = (f'{{"format": {ENTRY_FORMAT}, "seq": {seq}, "committed_at": "{stamp}", '
                f'"changes": {changes_json}}}').encode()
        return cls(seq, body)


def install_capture_tracking(engine: Engine) -> None:
    """Marks a connection whose transaction wrote a logged table, and clears the mark when it ends."""

    @event.listens_for(engine, "before_cursor_execute")
    def _mark(conn, _cursor, statement, _parameters, _context, _executemany):
        if _WRITES_LOGGED.search(statement):
            conn.info[_CAPTURED] = True

    @event.listens_for(engine, "commit")
    @event.listens_for(engine, "rollback")
    def _clear(conn):
        # An invalidated connection (PostgreSQL ended it) has no info to read, and reading it would raise over the
        # error that ended it; the pool's checkin below clears its record.
        if not conn.invalidated:
            conn.info.pop(_CAPTURED, None)

    @event.listens_for(engine.pool, "checkin")
    def _clear_on_return(_dbapi_connection, record):
        record.info.pop(_CAPTURED, None)


# --- crash injection: tests kill a commit at each step of its protocol -------------------------------------------

STEPS = ("before-drain", "before-commit", "before-ship", "after-ship")
_crash_at: set[str] = set()


class SimulatedCrash(BaseException):
    """Raised at an injected step: a BaseException, so no handler meant for real errors recovers from it."""


@contextmanager
def crash_at(step: str) -> Iterator[None]:
    if step not in STEPS:
        raise ValueError(f"unknown commit step {step!r}; one of {', '.join(STEPS)}")
    _crash_at.add(step)
    try:
        yield
    finally:
        _crash_at.discard(step)


def _step(step: str) -> None:
    if step in _crash_at:
        _crash_at.discard(step)  # one crash per injection: what runs after it (the ship pass) must not crash too
        raise SimulatedCrash(step)


async def commit_logged(drain: Callable[[], Awaitable[Any]] | None, commit: Callable[[], Awaitable[None]],
                        commit_log: CommitLogWriter | None) -> None:
    """The protocol around a transaction's COMMIT, whatever runs its statements (an ORM session, a plain asyncpg
    connection): `drain` (the DRAIN statement, inside the transaction; None when it captured nothing) numbers its
    changes as one entry, `commit` commits, then the entry is shipped to storage. The named steps are where a test
    injects a crash."""
    await (await commit_unshipped(drain, commit, commit_log)).ship()


async def commit_unshipped(drain: Callable[[], Awaitable[Any]] | None, commit: Callable[[], Awaitable[None]],
                           commit_log: CommitLogWriter | None) -> Shipment:
    """`commit_logged` up to its COMMIT: the entry is the returned shipment's to write, which the caller ships
    before it goes on (CL-2), with blocking work of its own after it on the same worker thread if it has some
    (ingestion's upload: one hand-off to a thread instead of two)."""
    entry = None
    if drain is not None:
        _step("before-drain")
        row = await drain()
        entry = None if row is None else Entry.of(*row)
    _step("before-commit")
    await commit()
    return Shipment(entry if commit_log is not None else None, commit_log)


@dataclass(frozen=True, slots=True)
class Shipment:
    """A committed transaction's entry, not yet in storage (None: nothing to ship)."""

    entry: Entry | None
    commit_log: CommitLogWriter | None

    async def ship(self, then: Callable[[], T] | None = None) -> T | None:
        """The entry written to storage, then `then` (blocking work that must follow the entry, such as an upload
        of files the transaction staged) on the same worker thread; returns what `then` returns. The crash steps
        are those of `commit_logged`, `after-ship` before `then`."""
        entry, commit_log = self.entry, self.commit_log
        if entry is None or commit_log is None:
            return None if then is None else await asyncio.to_thread(then)
        _step("before-ship")

        def ship_then() -> T | None:
            commit_log.write_or_keep(entry)
            _step("after-ship")
            return None if then is None else then()

        return await asyncio.to_thread(ship_then)


class CommitLogWriter:
    """Writes entries to object storage."""

    def __init__(self, storage: ObjectStore) -> None:
        self.storage = storage

    def write(self, entry: Entry) -> None:
        self.storage.write_bytes(commit_log_entry_path(entry.seq), entry.body)

    def write_or_keep(self, entry: Entry) -> bool:
        """Whether the entry is in the bucket. A failure is not the caller's: its change is committed (a 5xx now
        would make a client retry what succeeded), and the ship pass writes the entry once storage answers."""
        try:
            self.write(entry)
        except OSError as exc:
            log.warning("commit log entry %d committed but not written to object storage (%s: %s); the ship pass "
                        "writes it", entry.seq, type(exc).__name__, exc)
            return False
        return True

    async def ship(self, entry: Entry) -> bool:
        """`write_or_keep` on a worker thread."""
        return await asyncio.to_thread(self.write_or_keep, entry)


class CommitLogSession(AsyncSession):
    """An AsyncSession whose commit writes the transaction's commit log entry (module docstring)."""

    def __init__(self, *args: Any, commit_log: CommitLogWriter | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commit_log = commit_log

    async def commit(self) -> None:
        drain = None
        if self.in_transaction() and await self._captured():
            async def drain() -> Any:
                return (await self.execute(DRAIN)).one_or_none()
        await commit_logged(drain, super().commit, self.commit_log)

    async def _captured(self) -> bool:
        connection = await self.connection()
        return bool(connection.sync_connection.info.get(_CAPTURED))


async def mark_captured(session: AsyncSession) -> None:
    """The session's transaction writes a logged table by a statement SQLAlchemy does not see (a COPY on its
    connection, `single_reads.session_driver`): its commit must drain, as `install_capture_tracking` makes it for
    the statements it sees (else the commit is refused: a change committed without its entry)."""
    connection = await session.connection()
    connection.sync_connection.info[_CAPTURED] = True


def session_class_kwargs(storage: ObjectStore | None) -> dict[str, Any]:
    """What `async_sessionmaker` needs to make commit-logging sessions (with no storage, entries wait in
    PostgreSQL for the ship pass)."""
    return {"class_": CommitLogSession, "commit_log": CommitLogWriter(storage) if storage is not None else None}
