"""Ingestion: a request's rows, with those of the other requests of its group (group_commit.py), become one sorted
split per window, staged, uploaded, then published.

The metastore row is staged before the upload and published after it, so a crash in between leaves a staged row
that names the object (reconcilable), never a published split whose file is missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pyarrow as pa
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from ulid import ULID

from strata_core.domain.column_stats import compute_column_stats
from strata_core.domain.index_config import IndexSettings
from strata_core.domain.ingest_batch import AdmittedRows, admit_rows, cut_admitted
from strata_core.domain.split import SplitMetadata
from strata_core.errors import NotFound, Unavailable
from strata_core.splitfile.writer import encode_split, row_group_spans
from strata_core.storage import ObjectStore
from strata_core.storage_layout import split_path
from strata_indexer.ingest.decode import decode_body
from strata_indexer.ingest.group_commit import GroupCommitter
from strata_metastore.models import IndexRow
from strata_metastore.plain_writes import PlainWrites
from strata_metastore.publish_splits import publish_staged, publish_staged_plain, stage_splits, stage_splits_plain
from strata_metastore.repositories import SplitRepository, load_live_index
from strata_metastore.single_reads import SingleReads

log = logging.getLogger("strata.ingest")


@dataclass(frozen=True, slots=True)
class EncodedSplit:
    metadata: SplitMetadata
    data: bytes


@dataclass(frozen=True, slots=True)
class IngestedShare:
    """A split that holds rows of a request, and how many: under group commit a split may hold other requests'
    rows too."""

    split: SplitMetadata
    rows_of_request: int


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    splits: list[IngestedShare]
    rows_received: int
    rows_written: int
    rows_dropped_late: int
    rows_null_timestamp: int


@dataclass(frozen=True, slots=True)
class IngestScope:
    """What the requests of one group share: the index at one version (one schema, sort schema and windows) and the
    compaction scope's partition and source, so a group's split never mixes tenants (CS-1)."""

    index_uid: str
    index_version: int
    partition_id: str
    source_id: str


IngestCommitter = GroupCommitter[AdmittedRows, list[SplitMetadata]]


@dataclass(frozen=True, slots=True)
class Ingest:
    """What the write path works with, built once per app: the catalog, the store, the group committer (the
    groups in flight of every scope) and the meter its object-store requests are counted under; `reads` looks the
    index of a request up in one round trip, and `writes` stages and publishes its splits on plain asyncpg
    connections (`strata_metastore.plain_writes`); None: through sessions, as tests that build one by hand do."""

    sessions: async_sessionmaker[AsyncSession]
    storage: ObjectStore
    committer: IngestCommitter
    measure: Callable[[str], AbstractContextManager[object]]
    reads: SingleReads | None = None
    writes: PlainWrites | None = None
    # Parsed settings by (index_uid, version): a config is immutable at a version (every update raises it), and
    # validating it again took a tenth of a millisecond per request.
    _settings: dict[tuple[str, int], IndexSettings] = field(default_factory=dict)

    # The detached index rows `live_index` answered, by the row's values: a request reading the same values gets the
    # same row, without parsing its config and building an ORM instance again (a tenth of a millisecond). Read
    # only: nothing on the write path changes the row it is given.
    _indexes: dict[tuple[Any, ...], IndexRow] = field(default_factory=dict)

    def index_of(self, values: tuple[Any, ...]) -> IndexRow:
        """The row of `_LIVE_INDEX`'s values."""
        index = self._indexes.get(values)
        if index is None:
            if len(self._indexes) >= 1024:
                self._indexes.clear()
            index_uid, index_id, incarnation, config, doc_mapping_uid, version = values
            index = self._indexes[values] = IndexRow(
                index_uid=index_uid, index_id=index_id, incarnation=incarnation, config=json.loads(config),
                doc_mapping_uid=doc_mapping_uid, version=version)
        return index

    def settings_of(self, index: IndexRow) -> IndexSettings:
        key = (index.index_uid, index.version)
        settings = self._settings.get(key)
        if settings is None:
            if len(self._settings) >= 1024:
                self._settings.clear()
            settings = self._settings[key] = IndexSettings.model_validate(index.config)
        return settings


# Turns a request into a table of exactly the index's schema, or raises a BadRequest naming what is wrong.
Decoder = Callable[[IndexSettings], pa.Table]


def admit_body(body: bytes, kind: str, settings: IndexSettings, now_secs: int) -> AdmittedRows:
    """A request's own work before it may join a group (CPU, run on a worker thread): a body that does not decode is
    refused here, alone, and late rows are counted as of the request's arrival."""
    return admit_decoded(lambda s: decode_body(body, kind, s.field_types()), settings, now_secs)


def admit_decoded(decode: Decoder, settings: IndexSettings, now_secs: int) -> AdmittedRows:
    return admit_rows(decode(settings), settings.timestamp_field, settings.window_duration_secs,
                      settings.late_data_acceptance_secs, now_secs)


def build_splits(
    batches: list[AdmittedRows],
    index: IndexRow,
    settings: IndexSettings,
    storage: ObjectStore,
    *,
    partition_id: str,
    source_id: str,
) -> list[EncodedSplit]:
    """CPU work of a commit (cut, sort, encode, stats): pure of I/O, run on a worker thread."""
    sort_schema = settings.parsed_sort_schema
    regex_columns = frozenset(sort_schema.column_names)
    encoded: list[EncodedSplit] = []
    for part in cut_admitted(batches, sort_schema):
        split_id = str(ULID())
        metadata = SplitMetadata(
            split_id=split_id,
            index_uid=index.index_uid,
            source_id=source_id,
            partition_id=partition_id,
            doc_mapping_uid=index.doc_mapping_uid,
            sort_schema=str(sort_schema),
            window_start=part.window_start,
            window_duration_secs=settings.window_duration_secs,
            time_range_start=part.time_range_start,
            time_range_end=part.time_range_end,
            num_rows=part.table.num_rows,
            uri=storage.uri_for(split_path(index.index_id, index.incarnation, split_id)),
            column_stats=compute_column_stats(part.table, regex_columns),
            root_split_ids=[split_id],
        )
        data, footer = encode_split(part.table, metadata, settings.parquet)
        metadata.size_bytes = len(data)
        metadata.row_groups = row_group_spans(footer)
        encoded.append(EncodedSplit(metadata, data))
    return encoded


async def index_to_ingest(session: AsyncSession, index_id: str) -> IndexRow:
    """The live index a request writes to, its read transaction ended at once: the write that follows must not hold
    a connection idle."""
    index = await load_live_index(session, index_id)
    await session.commit()
    return index


_LIVE_INDEX = ("SELECT index_uid, index_id, incarnation, config::text, doc_mapping_uid, version FROM indexes "
               "WHERE index_id = $1 AND deleted_at IS NULL")


async def live_index(ingest: Ingest, index_id: str) -> IndexRow:
    """The live index a request writes to, read in one autocommit round trip (`SingleReads`: no pool checkout,
    ping, BEGIN or COMMIT around it), as a detached row: the same columns `index_to_ingest` reads."""
    if ingest.reads is None:
        async with ingest.sessions() as session:
            return await index_to_ingest(session, index_id)
    row = await ingest.reads.fetchrow(_LIVE_INDEX, index_id)
    if row is None:
        raise NotFound(f"index {index_id!r} does not exist")
    return ingest.index_of(tuple(row))


async def ingest_table(
    ingest: Ingest,
    index: IndexRow,
    body: bytes,
    kind: str,
    *,
    partition_id: str,
    source_id: str,
    now_secs: int | None = None,
) -> IngestOutcome:
    return await ingest_decoded(ingest, index, lambda s: decode_body(body, kind, s.field_types()),
                                partition_id=partition_id, source_id=source_id, now_secs=now_secs)


async def ingest_decoded(
    ingest: Ingest,
    index: IndexRow,
    decode: Decoder,
    *,
    partition_id: str,
    source_id: str,
    now_secs: int | None = None,
) -> IngestOutcome:
    """The ingest path for a request already in another wire format (OTLP): `decode` runs on the request's worker
    thread, like the NDJSON and Arrow decoders, and everything after it (late data, group commit, publish) is the
    same."""
    settings = ingest.settings_of(index)
    now = int(time.time()) if now_secs is None else now_secs
    build = partial(build_splits, index=index, settings=settings, storage=ingest.storage,
                    partition_id=partition_id, source_id=source_id)

    async def publish(encoded: list[EncodedSplit]) -> list[SplitMetadata]:
        with ingest.measure("ingest"):
            await _stage_upload_publish(ingest, encoded)
        return [e.metadata for e in encoded]

    async def commit(batches: list[AdmittedRows]) -> list[SplitMetadata]:
        return await publish(await asyncio.to_thread(build, batches))

    async def commit_alone() -> tuple[AdmittedRows, list[SplitMetadata]]:
        # The request's own work and its commit's in one hand-off to a thread: a body that does not decode is
        # refused from there, alone, as before.
        admitted, encoded = await asyncio.to_thread(_admit_and_build, decode, settings, now, build)
        if not encoded:
            return admitted, []
        ingest.committer.observe(1)
        return admitted, await publish(encoded)

    scope = IngestScope(index.index_uid, index.version, partition_id, source_id)
    alone = ingest.committer.alone(scope, commit_alone)
    if alone is not None:
        admitted, splits = await alone
    else:
        admitted = await asyncio.to_thread(admit_decoded, decode, settings, now)
        splits = []
        if admitted.table.num_rows:
            splits = await ingest.committer.submit(scope, admitted, rows=admitted.table.num_rows,
                                                   nbytes=admitted.table.nbytes, commit=commit)
    # The request's rows are in the group's splits of the windows they fall in (one split per window, TW-1).
    mine = admitted.rows_by_window()
    return IngestOutcome(
        splits=[IngestedShare(s, mine[s.window_start]) for s in splits if s.window_start in mine],
        rows_received=admitted.rows_received,
        rows_written=admitted.table.num_rows,
        rows_dropped_late=admitted.rows_dropped_late,
        rows_null_timestamp=admitted.rows_null_timestamp,
    )


def _admit_and_build(decode: Decoder, settings: IndexSettings, now_secs: int,
                     build: Callable[[list[AdmittedRows]], list[EncodedSplit]],
                     ) -> tuple[AdmittedRows, list[EncodedSplit]]:
    admitted = admit_decoded(decode, settings, now_secs)
    return admitted, (build([admitted]) if admitted.table.num_rows else [])


def _upload(storage: ObjectStore, encoded: list[EncodedSplit]) -> tuple[list[str], Exception | None]:
    """The files written, in order, until one fails: the URIs written and the failure (blocking; a worker
    thread's)."""
    uploaded: list[str] = []
    try:
        for item in encoded:
            storage.write_bytes(item.metadata.uri, item.data)
            uploaded.append(item.metadata.uri)
    except Exception as exc:  # noqa: BLE001 - answered by the caller, after the staged rows are removed
        return uploaded, exc
    return uploaded, None


async def _stage_upload_publish(ingest: Ingest, encoded: list[EncodedSplit]) -> None:
    split_ids = [e.metadata.split_id for e in encoded]
    upload = partial(_upload, ingest.storage, encoded)
    if ingest.writes is not None:
        async with ingest.writes.transaction() as transaction:
            await stage_splits_plain(transaction, [e.metadata for e in encoded])
            shipment = await transaction.commit_unshipped()
        # The stage's commit-log entry, then the files, on one worker thread (the entry before the files, as when
        # the commit shipped it).
        outcome = await shipment.ship(then=upload)
        assert outcome is not None
        uploaded, failure = outcome
    else:
        async with ingest.sessions() as session:
            await stage_splits(session, [e.metadata for e in encoded])
            await session.commit()
        uploaded, failure = await asyncio.to_thread(upload)

    if failure is not None:
        log.error("upload failed; rolling back %d staged splits", len(split_ids), exc_info=failure)
        await _unstage(ingest, split_ids, uploaded)
        raise Unavailable(f"object storage write failed: {failure}") from failure

    if ingest.writes is not None:
        async with ingest.writes.transaction() as transaction:
            moved = await publish_staged_plain(transaction, split_ids)
            await transaction.commit()
    else:
        async with ingest.sessions() as session:
            moved = await publish_staged(session, split_ids)
            await session.commit()
    if moved != len(split_ids):
        # Another actor deleted a staged row (e.g. an index delete raced): report it rather than half-publish.
        log.warning("published %d of %d staged splits", moved, len(split_ids))


async def _unstage(ingest: Ingest, split_ids: list[str], uploaded: list[str]) -> None:
    for uri in uploaded:
        await asyncio.to_thread(ingest.storage.delete, uri)
    async with ingest.sessions() as session:
        await SplitRepository(session).delete_staged(split_ids)
        await session.commit()
