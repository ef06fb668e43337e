"""The commit log's two passes, run once across replicas by planner-api: ship the entries a writer committed but
did not write to the bucket (it died, or storage failed), and fold the log into a checkpoint so a rebuild reads
a bounded number of objects and `commit_log` stays small.

A checkpoint is taken in one REPEATABLE READ transaction: every logged table as that snapshot sees it, and the
numbers of the entries it holds. Numbers are drawn just before COMMIT, so an entry numbered below the snapshot's
highest may still be committing: it is listed as `missing` and a rebuild applies it on top. A number whose
transaction rolled back is never committed; it stays listed until the next checkpoint at least `FORGET_AFTER`
later, by when no transaction can still hold it (its drain ran immediately before its COMMIT).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.storage import ObjectStore
from strata_core.storage_layout import commit_log_checkpoint_dir, commit_log_entry_path
from strata_metastore.commit_log import ENTRY_CHANGES, LOGGED_TABLES, Entry
from strata_metastore.commit_log_replay import (
    CHECKPOINT_FORMAT,
    MANIFEST,
    checkpoint_file,
    copy_out,
    list_entries,
    list_log,
    table_shapes,
)

log = logging.getLogger("strata.commit_log")

# An entry younger than this may be one its writer is shipping right now.
SHIP_GRACE = timedelta(seconds=5)
FORGET_AFTER = timedelta(minutes=2)


async def ship_pending(sessions: async_sessionmaker[AsyncSession], storage: ObjectStore,
                       grace: timedelta = SHIP_GRACE) -> list[int]:
    """Writes to the bucket every entry of `commit_log` older than `grace` the bucket lacks; their numbers."""
    async with sessions() as session:
        pending = [s for (s,) in await session.execute(text(
            "SELECT seq FROM commit_log WHERE committed_at < now() - CAST(:grace AS interval) ORDER BY seq"),
            {"grace": grace})]
    if not pending:
        return []
    shipped = set(await asyncio.to_thread(list_entries, storage))
    missing = [s for s in pending if s not in shipped]
    if not missing:
        return []
    async with sessions() as session:
        rows = (await session.execute(
            text(f"SELECT l.seq, l.committed_at, {ENTRY_CHANGES} FROM commit_log l WHERE l.seq = ANY(:seqs) "
                 f"ORDER BY l.seq"), {"seqs": missing})).all()
    rows = [r for r in rows if r[2] is not None]  # a rebuild's restored entries are the bucket's own objects
    for row in rows:
        entry = Entry.of(*row)
        await asyncio.to_thread(storage.write_bytes, commit_log_entry_path(entry.seq), entry.body)
    if rows:
        log.warning("shipped %d commit log entries their writers had not written to the bucket (%s..%s)",
                    len(rows), rows[0][0], rows[-1][0])
    return [r[0] for r in rows]


@dataclass(frozen=True)
class CheckpointReport:
    seq: int
    missing: list[int]
    rows: dict[str, int]
    entries_folded: int


async def write_checkpoint(sessions: async_sessionmaker[AsyncSession], storage: ObjectStore,
                           min_entries: int = 1) -> CheckpointReport | None:
    """A checkpoint of every logged table, if at least `min_entries` entries were committed since the last one;
    then the entries it holds leave `commit_log`, and the bucket keeps the previous checkpoint and what follows
    it (older ones are deleted)."""
    await ship_pending(sessions, storage, grace=timedelta(0))
    async with sessions() as session:
        await session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        previous = (await session.execute(text(
            "SELECT seq, missing, written_at FROM commit_log_checkpoints ORDER BY seq DESC LIMIT 1"))).one_or_none()
        visible = [s for (s,) in await session.execute(text("SELECT seq FROM commit_log ORDER BY seq"))]
        if len(visible) < min_entries or not visible:
            return None
        high = visible[-1]
        now = (await session.execute(text("SELECT now()"))).scalar_one()
        missing = _missing(previous, set(visible), high, now)
        rows: dict[str, int] = {}
        files: dict[str, dict[str, object]] = {}
        shapes = await table_shapes(session)
        for table in LOGGED_TABLES:
            columns = shapes[table].columns
            relative = checkpoint_file(high, table)
            count = await copy_out(session, table, columns, storage, relative)
            rows[table] = count
            files[table] = {"file": relative, "rows": count, "columns": list(columns)}
        manifest = {"format": CHECKPOINT_FORMAT, "seq": high, "missing": missing, "tables": files,
                    "written_at": now.isoformat()}
    # The manifest last: a checkpoint without one is a crash's leftover, never read.
    await asyncio.to_thread(storage.write_bytes, f"{commit_log_checkpoint_dir(high)}/{MANIFEST}",
                            json.dumps(manifest).encode())
    async with sessions() as session:
        await session.execute(text("INSERT INTO commit_log_checkpoints (seq, missing, written_at) "
                                   "VALUES (:seq, :missing, :at)"), {"seq": high, "missing": missing, "at": now})
        await session.execute(text("DELETE FROM commit_log_changes WHERE xid IN (SELECT xid FROM commit_log "
                                   "WHERE seq = ANY(:seqs))"), {"seqs": visible})
        await session.execute(text("DELETE FROM commit_log WHERE seq = ANY(:seqs)"), {"seqs": visible})
        await session.execute(text("DELETE FROM commit_log_checkpoints WHERE seq < :seq"), {"seq": high})
        await session.commit()
    if previous is not None:
        await asyncio.to_thread(_forget_before, storage, previous[0], set(missing))
    return CheckpointReport(seq=high, missing=missing, rows=rows, entries_folded=len(visible))


def _missing(previous, visible: set[int], high: int, now: datetime) -> list[int]:
    """Numbers up to `high` this snapshot does not hold: the ones drawn since the previous checkpoint that are
    not visible, and the previous checkpoint's missing ones still not visible unless forgotten (module doc)."""
    start = 1 if previous is None else previous[0] + 1
    candidates = set(range(start, high + 1))
    if previous is not None and now - previous[2] < FORGET_AFTER:
        candidates |= set(previous[1])
    return sorted(candidates - visible)


def _forget_before(storage: ObjectStore, seq: int, still_missing: set[int]) -> None:
    """The bucket keeps the checkpoint `seq`, every entry after it and those the newest checkpoint still lists as
    missing; older entries and checkpoints go."""
    listing = list_log(storage)
    for entry in listing.entries:
        if entry <= seq and entry not in still_missing:
            storage.delete(commit_log_entry_path(entry))
    for checkpoint in listing.checkpoints:
        if checkpoint < seq:
            for uri in storage.list_files(commit_log_checkpoint_dir(checkpoint)):
                storage.delete(uri)
