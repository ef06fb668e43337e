"""Reading the commit log back from the bucket and applying it to tables: what rebuild and verify share.

What the bucket holds (`storage_layout`): entries `_commit_log/entries/{seq}.json`, one per committed
transaction (`commit_log.Entry`), and checkpoints `_commit_log/checkpoints/{seq}/`: one gzipped file per logged
table in PostgreSQL's COPY text format, its columns named in `manifest.json`, written last, which makes the
checkpoint count. COPY, not JSON, because a checkpoint is what a large rebuild spends its time loading: COPY
loads at close to PostgreSQL's own insert rate, where parsing JSON rows took five times that
(docs/benchmarks.md, "Commit log"); the columns listed make a table's file loadable after a migration added one.

A checkpoint holds every entry numbered up to its `seq` except those it lists as `missing` (numbered, not yet
committed when it was taken); the state is the latest checkpoint with every later or missing entry applied in
number order (CL-3).

An entry's rows are applied with `json_populate_recordset`, so PostgreSQL itself turns each JSON value back into its
column's type (enums, timestamps, arrays, numerics), and an upsert sets the whole row: applying an entry twice,
or an entry a checkpoint already holds, changes nothing.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import String, bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.storage import ObjectStore
from strata_core.storage_layout import (
    COMMIT_LOG_CHECKPOINTS_DIR,
    COMMIT_LOG_ENTRIES_DIR,
    commit_log_checkpoint_dir,
    commit_log_entry_path,
    commit_log_seq_of,
)
from strata_metastore.commit_log import LOGGED_TABLES

CHECKPOINT_FORMAT = 1
MANIFEST = "manifest.json"
# Rows per statement when entries are applied, and bytes per read of a checkpoint's file.
LOAD_CHUNK = 2_000
COPY_CHUNK = 1 << 20
# Entries applied as one net change (`Replayer.apply_folded`), and read this many at once.
FOLD_ENTRIES = 1_000
READ_CONCURRENCY = 16


@dataclass(frozen=True)
class CheckpointTable:
    file: str  # relative to the storage root
    columns: tuple[str, ...]
    rows: int


@dataclass(frozen=True)
class Checkpoint:
    seq: int
    missing: frozenset[int]
    tables: dict[str, CheckpointTable]

    def holds(self, seq: int) -> bool:
        return seq <= self.seq and seq not in self.missing


@dataclass
class LogListing:
    """What one listing of the bucket found: the latest complete checkpoint and every entry's number."""

    checkpoints: list[int]
    entries: list[int]
    checkpoint: Checkpoint | None = None
    objects_read: int = 0

    def to_apply(self) -> list[int]:
        """The entries the latest checkpoint does not hold, in number order."""
        if self.checkpoint is None:
            return list(self.entries)
        return [seq for seq in self.entries if not self.checkpoint.holds(seq)]


def checkpoint_file(seq: int, table: str) -> str:
    return f"{commit_log_checkpoint_dir(seq)}/{table}.copy.gz"


def list_entries(storage: ObjectStore) -> list[int]:
    """The numbers of the entries in the bucket, in order: one listing, no object read."""
    return sorted(s for uri in storage.list_files(COMMIT_LOG_ENTRIES_DIR) if (s := commit_log_seq_of(uri)) is not None)


def list_log(storage: ObjectStore) -> LogListing:
    entries = list_entries(storage)
    manifests = {}
    for uri in storage.list_files(COMMIT_LOG_CHECKPOINTS_DIR):
        directory, _, name = uri.rpartition("/")
        if name == MANIFEST and (seq := commit_log_seq_of(directory)) is not None:
            manifests[seq] = uri
    listing = LogListing(checkpoints=sorted(manifests), entries=entries)
    if manifests:
        listing.checkpoint = read_checkpoint(storage, max(manifests))
        listing.objects_read += 1
    return listing


def read_checkpoint(storage: ObjectStore, seq: int) -> Checkpoint:
    with storage.open_input(f"{commit_log_checkpoint_dir(seq)}/{MANIFEST}") as stream:
        manifest = json.loads(stream.read())
    if manifest.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {seq} has format {manifest.get('format')!r}; this version reads "
                         f"{CHECKPOINT_FORMAT}")
    return Checkpoint(seq=int(manifest["seq"]), missing=frozenset(manifest.get("missing", ())),
                      tables={t: CheckpointTable(info["file"], tuple(info["columns"]), int(info["rows"]))
                              for t, info in manifest["tables"].items()})


def read_entry(storage: ObjectStore, seq: int) -> list[dict[str, Any]]:
    """An entry's changes: [{"table", "op": "upsert" | "delete", "rows": [...]}, ...] in capture order."""
    with storage.open_input(commit_log_entry_path(seq)) as stream:
        entry = json.loads(stream.read())
    if entry.get("seq") != seq:
        raise ValueError(f"commit log object {commit_log_entry_path(seq)} holds entry {entry.get('seq')!r}")
    return entry["changes"]


async def read_entries(storage: ObjectStore, seqs: list[int]) -> list[list[dict[str, Any]]]:
    """The entries' changes, in the order asked, read concurrently (each is one GET: on S3 its latency, not its
    size, is the cost)."""
    limit = asyncio.Semaphore(READ_CONCURRENCY)

    async def one(seq: int) -> list[dict[str, Any]]:
        async with limit:
            return await asyncio.to_thread(read_entry, storage, seq)
    return list(await asyncio.gather(*(one(s) for s in seqs)))


async def _decompressed(storage: ObjectStore, relative: str) -> AsyncIterator[bytes]:
    """A gzipped object's bytes, a chunk at a time, read off the event loop."""
    raw = await asyncio.to_thread(storage.open_input, relative)
    try:
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
        while chunk := await asyncio.to_thread(stream.read, COPY_CHUNK):
            yield chunk
    finally:
        raw.close()


async def copy_out(session: AsyncSession, table: str, columns: tuple[str, ...], storage: ObjectStore,
                   relative: str) -> int:
    """The table's rows, read in the session's transaction, written to `relative` in COPY text format, gzipped,
    through a local temporary file (a table larger than memory); how many."""
    connection = await _driver_connection(session)
    with tempfile.TemporaryFile() as spool:
        with gzip.GzipFile(fileobj=spool, mode="wb", compresslevel=1) as out:
            async def sink(chunk: bytes) -> None:
                out.write(chunk)
            status = await connection.copy_from_query(f'SELECT {_quoted(columns)} FROM "{table}"', output=sink)
        spool.seek(0)
        await asyncio.to_thread(storage.write_from, relative, spool)
    return int(status.split()[-1])


async def _driver_connection(session: AsyncSession):
    """The asyncpg connection under the session, in its transaction: COPY has no SQLAlchemy statement."""
    raw = await (await session.connection()).get_raw_connection()
    return raw.driver_connection


@dataclass(frozen=True)
class TableShape:
    columns: tuple[str, ...]  # writable columns (generated ones are computed again)
    key: tuple[str, ...]


async def table_shapes(session: AsyncSession) -> dict[str, TableShape]:
    """Each logged table's writable columns, from the catalog: a row logged before a column existed gets the
    column's default... as NULL, which a later migration's backfill must then handle as it handles old rows."""
    rows = (await session.execute(text("""
        SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = current_schema() AND c.relname = ANY(:tables) AND a.attnum > 0 AND NOT a.attisdropped
           AND a.attgenerated = '' ORDER BY c.relname, a.attnum"""), {"tables": list(LOGGED_TABLES)})).all()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    return {t: TableShape(tuple(columns[t]), key) for t, key in LOGGED_TABLES.items()}


def _quoted(names: tuple[str, ...]) -> str:
    return ", ".join(f'"{n}"' for n in names)


@dataclass
class Replayer:
    """Applies logged rows to the logged tables, or to copies of them named `prefix + table` (verify's)."""

    session: AsyncSession
    shapes: dict[str, TableShape]
    prefix: str = ""
    rows_applied: dict[str, int] = field(default_factory=dict)

    def _target(self, table: str) -> str:
        if table not in self.shapes:
            raise ValueError(f"the commit log names table {table!r}, which is not logged by this version")
        return f'"{self.prefix}{table}"'

    async def upsert(self, table: str, rows_json: str, count: int, *, into_empty: bool = False) -> None:
        """`into_empty`: the table holds none of these keys (a checkpoint loaded into empty tables), so a plain
        INSERT does, without the conflict checks."""
        shape, target = self.shapes[table], self._target(table)
        columns = _quoted(shape.columns)
        updates = ", ".join(f'"{c}" = EXCLUDED."{c}"' for c in shape.columns if c not in shape.key)
        on_conflict = "" if into_empty else f" ON CONFLICT ({_quoted(shape.key)}) DO UPDATE SET {updates}"
        # `json`, not `jsonb`: parsed once, straight into the rows.
        statement = text(
            f"INSERT INTO {target} ({columns}) SELECT {columns} FROM json_populate_recordset(NULL::{target}, "
            f"CAST(:rows AS json)){on_conflict}"
        ).bindparams(bindparam("rows", type_=String))
        await self.session.execute(statement, {"rows": rows_json})
        self.rows_applied[table] = self.rows_applied.get(table, 0) + count

    async def delete(self, table: str, keys_json: str) -> None:
        shape, target = self.shapes[table], self._target(table)
        match = " AND ".join(f't."{c}" = d."{c}"' for c in shape.key)
        statement = text(
            f"DELETE FROM {target} AS t USING json_populate_recordset(NULL::{target}, CAST(:rows AS json)) AS d "
            f"WHERE {match}").bindparams(bindparam("rows", type_=String))
        await self.session.execute(statement, {"rows": keys_json})

    async def apply(self, changes: list[dict[str, Any]]) -> None:
        for change in changes:
            rows = json.dumps(change["rows"])
            if change["op"] == "upsert":
                await self.upsert(change["table"], rows, len(change["rows"]))
            elif change["op"] == "delete":
                await self.delete(change["table"], rows)
            else:
                raise ValueError(f"unknown commit log operation {change['op']!r}")

    async def apply_folded(self, entries: list[list[dict[str, Any]]], chunk: int = LOAD_CHUNK) -> None:
        """Entries applied as their net effect: each row's last image (or its deletion) in these entries, found
        in memory, then written a table at a time, a chunk per statement. The same state as applying them one by
        one (every image is a whole row, and the rows of one key are independent of other keys'), in a few
        statements instead of a few per entry: deletions first, children before parents, then upserts, parents
        before children, so foreign keys hold."""
        net: dict[str, dict[tuple[Any, ...], dict[str, Any] | None]] = {t: {} for t in LOGGED_TABLES}
        for changes in entries:
            for change in changes:
                table, rows = change["table"], change["rows"]
                if table not in net:
                    raise ValueError(f"the commit log names table {table!r}, which is not logged by this version")
                key = self.shapes[table].key
                deleted = change["op"] == "delete"
                if not deleted and change["op"] != "upsert":
                    raise ValueError(f"unknown commit log operation {change['op']!r}")
                for row in rows:
                    net[table][tuple(row[c] for c in key)] = None if deleted else row
        for table in reversed(LOGGED_TABLES):
            key = self.shapes[table].key
            gone = [dict(zip(key, k, strict=True)) for k, row in net[table].items() if row is None]
            for start in range(0, len(gone), chunk):
                await self.delete(table, json.dumps(gone[start:start + chunk]))
        for table in LOGGED_TABLES:
            rows = [row for row in net[table].values() if row is not None]
            for start in range(0, len(rows), chunk):
                part = rows[start:start + chunk]
                await self.upsert(table, json.dumps(part), len(part))

    async def load_checkpoint(self, storage: ObjectStore, checkpoint: Checkpoint) -> None:
        """Into empty tables (a rebuild's, emptied first with --from-dump; verify's copies), with COPY."""
        connection = await _driver_connection(self.session)
        # Parents before children (LOGGED_TABLES' order), so foreign keys hold as the rows go in.
        for table in LOGGED_TABLES:
            part = checkpoint.tables.get(table)
            if part is None:
                continue
            self._target(table)
            await connection.copy_to_table(f"{self.prefix}{table}", source=_decompressed(storage, part.file),
                                           columns=list(part.columns), format="text")
            self.rows_applied[table] = self.rows_applied.get(table, 0) + part.rows
