"""`strata metastore verify`: does PostgreSQL hold what the bucket's commit log says is committed, and does the
bucket hold what PostgreSQL has committed and every file PostgreSQL publishes?

In one REPEATABLE READ transaction: the bucket's log is replayed into temporary copies of the logged tables
(the checkpoint PostgreSQL names as its latest, then the entries after it that PostgreSQL holds, each from the
bucket, or from PostgreSQL when its writer has not shipped it yet) and compared row by row with the tables
themselves in the same snapshot. Drift is reported by kind:

- `rows_only_in_postgres` / `rows_only_in_bucket`, per table: the state differs from its own log (a change
  made with capture off, an edit by hand, a log object lost or altered);
- `unshipped`: entries committed more than a grace ago that the bucket lacks (the ship pass writes them);
- `bucket_only`: entries in the bucket PostgreSQL never committed (a database restored from an older dump:
  `rebuild --from-dump` rolls it forward);
- `missing_files`: published splits whose file is not in storage.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.storage import ObjectStore, PathOutsideRoot
from strata_core.storage_layout import COMMIT_LOG_DIR
from strata_metastore.commit_log import ENTRY_CHANGES, LOGGED_TABLES
from strata_metastore.commit_log_passes import SHIP_GRACE
from strata_metastore.commit_log_replay import (
    FOLD_ENTRIES,
    Replayer,
    list_log,
    read_checkpoint,
    read_entries,
    table_shapes,
)
from strata_metastore.conflicts import conflict_of

_COPY = "verify_"
_EXAMPLES = 5


@dataclass
class TableDrift:
    rows_only_in_postgres: int = 0
    rows_only_in_bucket: int = 0
    examples: list[dict[str, object]] = field(default_factory=list)


@dataclass
class VerifyReport:
    checkpoint_seq: int | None
    entries_checked: int
    tables: dict[str, TableDrift] = field(default_factory=dict)
    unshipped: list[int] = field(default_factory=list)
    bucket_only: list[int] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    checkpoint_missing: bool = False

    @property
    def drift(self) -> dict[str, int]:
        """Counts by kind, for the metric and the CLI's exit status."""
        return {
            "rows_only_in_postgres": sum(t.rows_only_in_postgres for t in self.tables.values()),
            "rows_only_in_bucket": sum(t.rows_only_in_bucket for t in self.tables.values()),
            "unshipped": len(self.unshipped),
            "bucket_only": len(self.bucket_only),
            "missing_files": len(self.missing_files),
            "checkpoint_missing": int(self.checkpoint_missing),
        }

    @property
    def agrees(self) -> bool:
        return not any(self.drift.values())

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "drift": self.drift, "agrees": self.agrees}


async def verify(sessions: async_sessionmaker[AsyncSession], storage: ObjectStore,
                 grace: timedelta = SHIP_GRACE, attempts: int = 3) -> VerifyReport:
    """Reads only (its temporary tables drop with its transaction), so a run PostgreSQL aborts for a concurrent
    one (two verifies creating their temporary tables can deadlock on the catalog) is run again from the start."""
    for attempt in range(1, attempts + 1):
        try:
            return await _verify_once(sessions, storage, grace)
        except DBAPIError as exc:
            if conflict_of(exc) is None or attempt == attempts:
                raise
    raise AssertionError("unreachable")


async def _verify_once(sessions: async_sessionmaker[AsyncSession], storage: ObjectStore,
                       grace: timedelta) -> VerifyReport:
    async with sessions() as session:
        await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        checkpoint_row = (await session.execute(text(
            "SELECT seq FROM commit_log_checkpoints ORDER BY seq DESC LIMIT 1"))).one_or_none()
        held = {seq: young for seq, young in await session.execute(text(
            "SELECT seq, committed_at >= now() - CAST(:grace AS interval) FROM commit_log ORDER BY seq"),
            {"grace": grace})}
        listing = await asyncio.to_thread(list_log, storage)
        in_bucket = set(listing.entries)
        checkpoint = None
        report = VerifyReport(checkpoint_seq=checkpoint_row[0] if checkpoint_row else None, entries_checked=0)
        if checkpoint_row is not None:
            if checkpoint_row[0] in listing.checkpoints:
                checkpoint = await asyncio.to_thread(read_checkpoint, storage, checkpoint_row[0])
            else:
                report.checkpoint_missing = True
        shapes = await table_shapes(session)
        for table in LOGGED_TABLES:
            await session.execute(text(f'CREATE TEMPORARY TABLE "{_COPY}{table}" (LIKE "{table}" INCLUDING ALL) '
                                       f"ON COMMIT DROP"))
        replayer = Replayer(session, shapes, prefix=_COPY)
        if checkpoint is not None:
            await replayer.load_checkpoint(storage, checkpoint)
        ordered = sorted(held)
        from_bucket = dict(zip([s for s in ordered if s in in_bucket],
                               await read_entries(storage, [s for s in ordered if s in in_bucket]), strict=True))
        not_shipped = [s for s in ordered if s not in in_bucket]
        from_postgres = {seq: text_ for seq, text_ in await session.execute(
            text(f"SELECT l.seq, {ENTRY_CHANGES} FROM commit_log l WHERE l.seq = ANY(:seqs)"),
            {"seqs": not_shipped})}
        entries = []
        for seq in ordered:
            if seq in from_bucket:
                entries.append(from_bucket[seq])
                continue
            if not held[seq]:
                report.unshipped.append(seq)
            if from_postgres.get(seq) is not None:  # None: a restored entry whose object has since gone
                entries.append(json.loads(from_postgres[seq]))
        for start in range(0, len(entries), FOLD_ENTRIES):
            await replayer.apply_folded(entries[start:start + FOLD_ENTRIES])
        report.entries_checked = len(held)
        for table, shape in shapes.items():
            report.tables[table] = await _compare(session, table, shape.key)
        published = [u for (u,) in await session.execute(text("SELECT uri FROM splits WHERE state = 'published'"))]
        await session.rollback()
    candidates = [s for s in listing.entries if s not in held and (checkpoint is None or not checkpoint.holds(s))]
    if candidates:
        # Committed after the snapshot is not drift: only what PostgreSQL still lacks now is.
        async with sessions() as session:
            now_held = {s for (s,) in await session.execute(
                text("SELECT seq FROM commit_log WHERE seq = ANY(:seqs)"), {"seqs": candidates})}
        report.bucket_only = [s for s in candidates if s not in now_held]
    stored = set(await asyncio.to_thread(_stored_files, storage))
    report.missing_files = sorted(u for u in published if _canonical(storage, u) not in stored)
    return report


async def _compare(session: AsyncSession, table: str, key: tuple[str, ...]) -> TableDrift:
    drift = TableDrift()
    columns = ", ".join(f'"{c}"' for c in key)
    for direction, left, right in (("postgres", table, _COPY + table), ("bucket", _COPY + table, table)):
        rows = (await session.execute(text(
            f'SELECT {columns} FROM (SELECT * FROM "{left}" EXCEPT SELECT * FROM "{right}") AS d'))).all()
        setattr(drift, f"rows_only_in_{direction}", len(rows))
        drift.examples += [{"only_in": direction, **dict(zip(key, r, strict=True))} for r in rows[:_EXAMPLES]]
    return drift


def _canonical(storage: ObjectStore, uri: str) -> str | None:
    try:
        return storage.canonical_uri(uri)
    except PathOutsideRoot:
        return None  # never registered so (registration refuses it): a file this store cannot hold is missing


def _stored_files(storage: ObjectStore) -> list[str]:
    return [u for u in storage.list_files() if not u.startswith(storage.uri_for(COMMIT_LOG_DIR) + "/")]
