"""All SQL of the index catalog and the split table. Callers own the session and its transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from operator import getitem
from typing import Any, NamedTuple

import asyncpg
from sqlalchemy import (
    ARRAY,
    Row,
    String,
    any_,
    bindparam,
    cast,
    delete,
    func,
    select,
    tuple_,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import Update

from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState
from strata_core.errors import NotFound
from strata_core.query.predicate import Predicate
from strata_core.query.time_range import TimeRanges
from strata_metastore.column_arrays import ColumnArrays
from strata_metastore.commit_log import mark_captured
from strata_metastore.models import IndexRow, PublishedTotalsRow, SplitColumnStatsRow, SplitRow
from strata_metastore.single_reads import session_driver
from strata_metastore.split_pruning import Params, constant_source, may_match_sql, stats_source


def utcnow() -> datetime:
    return datetime.now(UTC)


class LiveIndex(NamedTuple):
    index_uid: str
    config: dict[str, Any]


_LIVE_CONFIG = "SELECT index_uid, config FROM indexes WHERE index_id = $1 AND deleted_at IS NULL"


class IndexRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get_live(self, index_id: str, *, for_update: bool = False) -> IndexRow | None:
        stmt = select(IndexRow).where(IndexRow.index_id == index_id, IndexRow.deleted_at.is_(None))
        if for_update:
            stmt = stmt.with_for_update()
        return (await self.session.execute(stmt)).scalar_one_or_none()

    async def live_config(self, index_id: str) -> LiveIndex | None:
        """The uid and settings of the live index `index_id` (what a query plan needs of it), read as one plain
        asyncpg row on the session's connection, in its transaction: an ORM object costs several times more."""
        row = await (await session_driver(self.session)).fetchrow(_LIVE_CONFIG, index_id)
        return None if row is None else LiveIndex(row[0], row[1])

    async def get(self, index_uid: str) -> IndexRow | None:
        """One incarnation by its uid, deleted or not."""
        return await self.session.get(IndexRow, index_uid)

    async def incarnations(self) -> list[Row]:
        """(index_uid, index_id, incarnation) of every incarnation, deleted ones too: what they left in storage
        is still theirs to clean up."""
        return list((await self.session.execute(
            select(IndexRow.index_uid, IndexRow.index_id, IndexRow.incarnation).order_by(IndexRow.index_uid))).all())

    async def list_live(self, *, limit: int, after_index_id: str | None) -> Sequence[IndexRow]:
        stmt = select(IndexRow).where(IndexRow.deleted_at.is_(None))
        if after_index_id is not None:
            stmt = stmt.where(IndexRow.index_id > after_index_id)
        stmt = stmt.order_by(IndexRow.index_id).limit(limit)
        return (await self.session.execute(stmt)).scalars().all()

    async def holding_partition(self, partition_id: str | None) -> Sequence[IndexRow]:
        """The live indexes, by name, that hold published files of `partition_id` (a tenant's own); every live
        index when None. Read from the trigger-kept published totals: one indexed lookup, never the splits."""
        stmt = select(IndexRow).where(IndexRow.deleted_at.is_(None))
        if partition_id is not None:
            held = select(PublishedTotalsRow.index_uid).where(PublishedTotalsRow.partition_id == partition_id,
                                                              PublishedTotalsRow.files > 0)
            stmt = stmt.where(IndexRow.index_uid.in_(held))
        return (await self.session.execute(stmt.order_by(IndexRow.index_id))).scalars().all()

    async def add(self, row: IndexRow) -> None:
        self.session.add(row)
        await self.session.flush()

    async def soft_delete(self, row: IndexRow) -> None:
        now = utcnow()
        row.deleted_at = now
        row.updated_at = now
        await self.session.flush()


async def load_live_index(session: AsyncSession, index_id: str, *, for_update: bool = False) -> IndexRow:
    row = await IndexRepository(session).get_live(index_id, for_update=for_update)
    if row is None:
        raise NotFound(f"index {index_id!r} does not exist")
    return row


@dataclass(frozen=True, slots=True)
class SplitFilter:
    index_uid: str
    states: tuple[SplitState, ...] = ()
    partition_id: str | None = None
    window_start_gte: int | None = None
    window_start_lt: int | None = None


class PublishedSplit(NamedTuple):
    """A split that just moved to published, as what follows a publication needs it."""
    index_uid: str
    window_duration_secs: int
    window_start: int
    split_id: str
    partition_id: str | None


class SplitRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def insert(self, splits: Sequence[SplitMetadata], now: datetime | None = None) -> None:
        """Insert splits (in the state each carries) with their typed column statistics: rows only. What follows a
        publication (windows flagged, indexing queued) is the `publish_splits` use case's."""
        if not splits:
            return
        # One statement per table whatever the batch size, so the counters' statement-level triggers (migration
        # 0008) run once per batch.
        # Each table by one binary COPY on the session's connection, in its transaction: a statement per table,
        # and asyncpg encodes the values without the per-value checks of array parameters. The commit must drain
        # what the capture triggers recorded (SQLAlchemy never sees the COPY), and a violated constraint is
        # answered as an INSERT's would be.
        split_records, stats_records = copy_records(splits, now or utcnow())
        driver = await session_driver(self.session)
        await mark_captured(self.session)
        try:
            await SPLITS_INSERT.copy(driver, split_records)
            if stats_records:
                await STATS_INSERT.copy(driver, stats_records)
        except asyncpg.IntegrityConstraintViolationError as exc:
            raise IntegrityError(f"COPY {SplitRow.__tablename__}, {_STATS_TABLE.name}", None, exc) from exc

    async def get_many(self, split_ids: Sequence[str], stats_columns: set[str] | None = None
                       ) -> dict[str, SplitMetadata]:
        """The splits with these ids, with the statistics of `stats_columns` (None: every column; empty: none, as
        for a plan whose split-level pruning already ran on summaries). Plain rows, one array parameter: a plan
        loads its survivors here, and ORM objects for each would cost more than the query."""
        if not split_ids:
            return {}
        rows = (await self.session.execute(select(SplitRow.__table__).where(
            SplitRow.split_id == any_(cast(list(split_ids), ARRAY(String)))))).all()
        stats = await self._stats_of([r.split_id for r in rows], stats_columns)
        return {r.split_id: _to_metadata(r, stats.get(r.split_id, {})) for r in rows}

    async def find_by_uris(self, uris: Sequence[str]) -> dict[str, str]:
        """uri -> split_id of the splits already holding these files."""
        if not uris:
            return {}
        result = await self.session.execute(select(SplitRow.uri, SplitRow.split_id).where(SplitRow.uri.in_(uris)))
        return {uri: split_id for uri, split_id in result.all()}

    async def publish_staged(self, split_ids: Sequence[str], now: datetime | None = None) -> list[PublishedSplit]:
        """staged -> published for exactly these splits; returns those that moved (rows only: the
        `publish_splits` use case does what follows, in its own statements, after this one)."""
        result = await self.session.execute(PUBLISH_STAGED, {"split_ids": list(split_ids), "now": now or utcnow()})
        return [PublishedSplit(*row) for row in result.all()]

    async def lock_in_order(self, split_ids: Sequence[str]) -> Sequence[SplitRow]:
        """The rows of these splits, locked FOR UPDATE in split id order (so two transactions locking overlapping
        sets cannot deadlock)."""
        return (await self.session.execute(
            select(SplitRow).where(SplitRow.split_id.in_(split_ids)).order_by(SplitRow.split_id).with_for_update()
        )).scalars().all()

    async def lock_rows_in_order(self, split_ids: Sequence[str]) -> dict[str, Row]:
        """`lock_in_order` as plain rows, one array parameter (a batch of merges locks every input at once); the
        columns a publish decides on."""
        t = SplitRow.__table__.c
        rows = (await self.session.execute(
            select(t.split_id, t.state, t.num_rows, t.created_at, t.num_merge_ops, t.generation, t.root_split_ids)
            .where(t.split_id == any_(cast(sorted(split_ids), ARRAY(String))))
            .order_by(t.split_id).with_for_update())).all()
        return {row.split_id: row for row in rows}

    async def mark_for_deletion(self, split_ids: Sequence[str], now: datetime) -> None:
        """These splits were replaced: the garbage collector deletes their files after the grace."""
        await self.session.execute(
            update(SplitRow).where(SplitRow.split_id.in_(split_ids))
            .values(state=SplitState.MARKED_FOR_DELETION, marked_for_deletion_at=now, updated_at=now))

    async def row(self, split_id: str, *, for_update: bool = False) -> SplitRow | None:
        return await self.session.get(SplitRow, split_id, with_for_update=for_update)

    async def rows(self, split_ids: Sequence[str]) -> dict[str, SplitRow]:
        if not split_ids:
            return {}
        found = await self.session.execute(select(SplitRow).where(SplitRow.split_id.in_(split_ids)))
        return {s.split_id: s for s in found.scalars().all()}

    async def existing_ids(self, split_ids: Sequence[str]) -> set[str]:
        if not split_ids:
            return set()
        found = await self.session.execute(select(SplitRow.split_id).where(SplitRow.split_id.in_(split_ids)))
        return set(found.scalars().all())

    async def deletable(self, marked_before: datetime, limit: int, *,
                        after: tuple[datetime, str] | None = None) -> list[Row]:
        """(split_id, index_uid, uri, marked_for_deletion_at) of splits marked for deletion before `marked_before`,
        in (marked_for_deletion_at, split_id) order after `after`, locked; rows another collector holds are
        skipped. The collector pages on: a split whose file it could not delete keeps its row and must not come
        back in the same pass. In mark order, so the partial index of migration 0018 reads the due rows only:
        the splits replaced within the grace, however many, are never visited."""
        stmt = select(SplitRow.split_id, SplitRow.index_uid, SplitRow.uri, SplitRow.marked_for_deletion_at).where(
            SplitRow.state == SplitState.MARKED_FOR_DELETION, SplitRow.marked_for_deletion_at <= marked_before)
        if after is not None:
            stmt = stmt.where(tuple_(SplitRow.marked_for_deletion_at, SplitRow.split_id) > tuple_(*after))
        return list((await self.session.execute(
            stmt.order_by(SplitRow.marked_for_deletion_at, SplitRow.split_id).limit(limit)
            .with_for_update(skip_locked=True))).all())

    async def delete(self, split_ids: Sequence[str]) -> None:
        await self.session.execute(delete(SplitRow).where(SplitRow.split_id.in_(split_ids)))

    async def write_amplification(self) -> list[tuple[str, float]]:
        """Per live index: how many times, on average, its published bytes have been written
        (sum(size * (1 + num_merge_ops)) / sum(size))."""
        rows = await self.session.execute(
            select(IndexRow.index_id,
                   func.sum(SplitRow.size_bytes * (1 + SplitRow.num_merge_ops)) / func.sum(SplitRow.size_bytes))
            .join(SplitRow, SplitRow.index_uid == IndexRow.index_uid)
            .where(SplitRow.state == SplitState.PUBLISHED, IndexRow.deleted_at.is_(None))
            .group_by(IndexRow.index_id))
        return [(index_id, float(value or 1.0)) for index_id, value in rows.all()]

    async def delete_staged(self, split_ids: Sequence[str]) -> None:
        await self.session.execute(
            delete(SplitRow).where(SplitRow.split_id.in_(split_ids), SplitRow.state == SplitState.STAGED)
        )

    async def mark_index_for_deletion(self, index_uid: str) -> int:
        now = utcnow()
        result = await self.session.execute(
            update(SplitRow)
            .where(SplitRow.index_uid == index_uid,
                   SplitRow.state.in_([SplitState.STAGED, SplitState.PUBLISHED]))
            .values(state=SplitState.MARKED_FOR_DELETION, marked_for_deletion_at=now, updated_at=now)
        )
        return result.rowcount

    async def list_page(
        self, flt: SplitFilter, *, limit: int, after: tuple[int, str] | None
    ) -> list[SplitMetadata]:
        """Splits in (window_start, split_id) order, keyset-paged after `after`."""
        stmt = select(SplitRow).where(SplitRow.index_uid == flt.index_uid)
        if flt.states:
            stmt = stmt.where(SplitRow.state.in_(flt.states))
        if flt.partition_id is not None:
            stmt = stmt.where(SplitRow.partition_id == flt.partition_id)
        if flt.window_start_gte is not None:
            stmt = stmt.where(SplitRow.window_start >= flt.window_start_gte)
        if flt.window_start_lt is not None:
            stmt = stmt.where(SplitRow.window_start < flt.window_start_lt)
        if after is not None:
            # A row comparison, so PostgreSQL seeks the (window_start, split_id) index to the cursor instead of
            # scanning from its first entry.
            stmt = stmt.where(tuple_(SplitRow.window_start, SplitRow.split_id) > tuple_(*after))
        stmt = stmt.order_by(SplitRow.window_start, SplitRow.split_id).limit(limit)
        rows = (await self.session.execute(stmt)).scalars().all()
        stats = await self._stats_of([r.split_id for r in rows])
        return [_to_metadata(r, stats.get(r.split_id, {})) for r in rows]

    async def published_candidates(self, index_uid: str, partition_id: str | None, window_gte: int | None,
                                   window_lte: int | None, include_window_zero: bool, ranges: TimeRanges,
                                   predicate: Predicate, split_columns: Mapping[str, str],
                                   stats_columns: set[str], limit: int,
                                   prune_columns: set[str] | None = None) -> PublishedCandidates:
        """The candidates of a query in one statement: published splits whose window starts in [window_gte,
        window_lte] (None: unbounded), plus window 0 (null timestamps) when asked; of these, the ones whose time
        range overlaps `ranges` (seconds) are counted, and of those only the ones the split statistics cannot rule
        out for `predicate` (NNF; `split_pruning.may_match_sql`) come back, as full metadata with the statistics of
        `stats_columns`, at most `limit` of them in (window_start, split_id) order.

        `split_columns`: predicate columns that are columns of `splits` (one value per split, e.g. partition_id).
        `prune_columns`: the columns whose statistics PostgreSQL prunes on (default `stats_columns`); leaving one
        out only keeps more splits.
        The counts are aggregates over the same snapshot, so every stage of a plan agrees with the next; only the
        few survivors cross the wire, as plain rows."""
        params = Params()
        where = [f"index_uid = {params.bind(index_uid)}", "state = 'published'"]
        if partition_id is not None:
            where.append(f"partition_id = {params.bind(partition_id)}")
        window = [f"window_start >= {_bigint(window_gte, params)}" if window_gte is not None else "TRUE",
                  f"window_start <= {_bigint(window_lte, params)}" if window_lte is not None else "TRUE"]
        window_sql = " AND ".join(window)
        where.append(f"(({window_sql}) OR window_start = 0)" if include_window_zero else f"({window_sql})")
        in_time = _in_time(ranges, params)
        joins, sources = [], {}
        stats_columns = stats_columns - set(split_columns)
        prune_columns = stats_columns if prune_columns is None else prune_columns & stats_columns
        for n, name in enumerate(sorted(prune_columns)):
            joins.append(f"LEFT JOIN split_column_stats st{n} ON st{n}.split_id = c.split_id "
                         f"AND st{n}.column_name = {params.bind(name)}")
            sources[name] = stats_source(f"st{n}", "c.num_rows")
        for name, split_column in split_columns.items():
            if split_column not in _SPLIT_COLUMNS:
                raise ValueError(f"{split_column!r} is not a column of splits")
            sources[name] = constant_source(f"c.{split_column}", "c.num_rows")
        prune = may_match_sql(predicate, sources, params)
        # Each survivor's statistics of `stats_columns` in the same statement, as an array of plain records (one
        # per column, fields in `_stats_from_row`'s order): no second statement to send, wait for and decode.
        stats = "NULL" if not stats_columns else (
            f"ARRAY(SELECT ROW({_STATS_FIELDS}) FROM split_column_stats s WHERE s.split_id = splits.split_id "
            f"AND s.column_name = ANY({params.bind(sorted(stats_columns))}::text[]))")
        # One statement, so the counts and the survivors are one snapshot even outside a REPEATABLE READ
        # transaction. Candidates: the windows' rows (one index range scan), each marked whether its time range
        # meets the query's. Totals: aggregates over them. Kept: the candidates split statistics cannot rule out
        # (one primary-key probe of split_column_stats per candidate and predicate column); only their full rows
        # are returned, each beside the totals (a LEFT JOIN, so the totals come back when nothing is kept).
        sql = f"""
WITH c AS MATERIALIZED (
  SELECT split_id, window_start, partition_id, num_rows, size_bytes, time_range_start, num_row_groups,
         row_group_bytes, ({in_time}) AS in_time
  FROM splits WHERE {" AND ".join(where)}
), totals AS (
  SELECT count(*) FILTER (WHERE in_time) AS totals_files,
         coalesce(sum(num_row_groups) FILTER (WHERE in_time), 0) AS totals_row_groups,
         coalesce(sum(size_bytes) FILTER (WHERE in_time), 0) AS totals_size_bytes,
         coalesce(sum(row_group_bytes) FILTER (WHERE in_time), 0) AS totals_row_group_bytes,
         min(time_range_start) FILTER (WHERE in_time) AS totals_min_start,
         count(*) FILTER (WHERE in_time AND time_range_start IS NULL) AS totals_null_starts
  FROM c
), kept AS (
  SELECT c.split_id FROM c {" ".join(joins)}
  WHERE c.in_time AND {prune}
  ORDER BY c.window_start, c.split_id LIMIT {params.bind(limit + 1)}
)
SELECT totals.*, splits.*, {stats} AS column_stats
FROM totals LEFT JOIN (kept JOIN splits ON splits.split_id = kept.split_id) ON TRUE
ORDER BY splits.window_start, splits.split_id"""
        # Plain asyncpg on the session's connection, in its transaction: the survivors' full rows (row-group
        # JSON decoded by the connection's codec) without SQLAlchemy's row processing.
        driver = await session_driver(self.session)
        numbered, args = params.numbered(sql)
        rows = await driver.fetch(numbered, *args)
        first = rows[0]
        found = [r for r in rows if r["split_id"] is not None]
        return PublishedCandidates(
            files=first["totals_files"],
            row_groups=int(first["totals_row_groups"]), size_bytes=int(first["totals_size_bytes"]),
            row_group_bytes=int(first["totals_row_group_bytes"]), min_time_range_start=first["totals_min_start"],
            null_time_range_starts=first["totals_null_starts"],
            splits=[_to_metadata(r, {st[_STATS_NAME]: _stats_from_row(st) for st in r["column_stats"] or ()}, getitem)
                    for r in found[:limit]],
            truncated=len(found) > limit)

    async def published_totals(self, index_uid: str, partition_id: str | None) -> PublishedTotals:
        """What the index (for one tenant) holds published: what a query would read without any pruning. Read
        from the trigger-kept counters, so it agrees with `published_candidates` in the same snapshot."""
        driver = await session_driver(self.session)
        if partition_id is None:
            row = await driver.fetchrow(_TOTALS, index_uid)
        else:
            row = await driver.fetchrow(_TOTALS + " AND partition_id = $2", index_uid, partition_id)
        return PublishedTotals(*(int(v) for v in row))

    async def _stats_of(self, split_ids: Sequence[str], columns: set[str] | None = None
                        ) -> dict[str, dict[str, ColumnStats]]:
        if not split_ids or columns is not None and not columns:
            return {}
        # Plain asyncpg, array parameters: one bind per list, however many splits a plan reads.
        driver = await session_driver(self.session)
        if columns is None:
            rows = await driver.fetch(_STATS_SELECT, list(split_ids))
        else:
            rows = await driver.fetch(_STATS_SELECT + " AND column_name = ANY($2::text[])", list(split_ids),
                                      sorted(columns))
        out: dict[str, dict[str, ColumnStats]] = {}
        for row in rows:
            out.setdefault(row[_STATS_SPLIT], {})[row[_STATS_NAME]] = _stats_from_row(row)
        return out


@dataclass(frozen=True, slots=True)
class PublishedTotals:
    """An index's published files, file bytes, row groups and row-group bytes (`strata_row_group_bytes`)."""

    files: int
    bytes: int
    row_groups: int
    row_group_bytes: int


@dataclass(frozen=True, slots=True)
class PublishedCandidates:
    """What `published_candidates` found. files .. row_group_bytes: of the splits whose time range overlaps the
    query's (`row_group_bytes` as `strata_row_group_bytes` counts, like the later stages); min_time_range_start and
    null_time_range_starts over those too; splits: the ones split statistics cannot rule out."""

    files: int
    row_groups: int
    size_bytes: int
    row_group_bytes: int
    min_time_range_start: int | None
    null_time_range_starts: int
    splits: list[SplitMetadata]
    truncated: bool


_BIGINT = (-(2**63), 2**63 - 1)
_SPLIT_COLUMNS = frozenset(SplitRow.__table__.columns.keys())


def _bigint(value: int, params: Params) -> str:
    """A bound that always fits a BIGINT: beyond the type's range it is clamped, which changes no comparison with
    a BIGINT column except at the very end of the range, where it can only keep more."""
    return f"CAST({params.bind(min(max(value, _BIGINT[0]), _BIGINT[1]))} AS bigint)"


def _in_time(ranges: TimeRanges, params: Params) -> str:
    """The split's time range overlaps `ranges` (`TimeRanges.overlaps`), or its timestamps are null and the ranges
    allow null."""
    overlaps = []
    for i in ranges.intervals:
        lower = "TRUE" if i.lo is None else f"(time_range_end IS NULL OR time_range_end >= {_bigint(i.lo, params)})"
        upper = "TRUE" if i.hi is None else f"time_range_start <= {_bigint(i.hi, params)}"
        overlaps.append(f"({lower} AND {upper})")
    timed = f"(time_range_start IS NOT NULL AND ({' OR '.join(overlaps)}))" if overlaps else "FALSE"
    return f"(time_range_start IS NULL OR {timed})" if ranges.includes_null else timed


def _split_values(split: SplitMetadata, now: datetime) -> dict[str, Any]:
    return {
        "split_id": split.split_id,
        "index_uid": split.index_uid,
        "source_id": split.source_id,
        "partition_id": split.partition_id,
        "doc_mapping_uid": split.doc_mapping_uid,
        "sort_schema": split.sort_schema,
        "window_start": split.window_start,
        "window_duration_secs": split.window_duration_secs,
        "time_range_start": split.time_range_start,
        "time_range_end": split.time_range_end,
        "num_rows": split.num_rows,
        "size_bytes": split.size_bytes,
        "uri": split.uri,
        "row_groups": [rg.to_json() for rg in split.row_groups],
        "num_merge_ops": split.num_merge_ops,
        "generation": split.generation,
        "root_split_ids": list(split.root_split_ids),
        "parent_split_ids": list(split.parent_split_ids),
        "state": split.state,
        "created_at": now,
        "updated_at": now,
        "published_at": now if split.state == SplitState.PUBLISHED else None,
        "marked_for_deletion_at": None,
    }


SPLITS_INSERT = ColumnArrays(SplitRow.__table__)
STATS_INSERT = ColumnArrays(SplitColumnStatsRow.__table__)


def _publish_staged_statement() -> Update:
    # On the table, not the ORM entity: no session object is affected, and the ORM's bulk-update path cost
    # ingestion's publish more than the statement itself. Bound by name, so the plain-asyncpg path
    # (`publish_splits.publish_staged_plain`) compiles this same statement.
    t = SplitRow.__table__.c
    return (update(SplitRow.__table__)
            .where(t.split_id == any_(bindparam("split_ids", type_=ARRAY(String))), t.state == SplitState.STAGED)
            .values(state=SplitState.PUBLISHED, published_at=bindparam("now"), updated_at=bindparam("now"))
            .returning(t.index_uid, t.window_duration_secs, t.window_start, t.split_id, t.partition_id))


# staged -> published for exactly the splits named, returning those that moved (`PublishedSplit`'s fields).
PUBLISH_STAGED = _publish_staged_statement()


def insert_params(splits: Sequence[SplitMetadata], now: datetime) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The parameters of `SPLITS_INSERT` and of `STATS_INSERT` (None: no statistics) for these splits, in the
    state each carries."""
    stats_rows = [_stats_values(s.split_id, st) for s in splits for st in s.column_stats.values()]
    return (SPLITS_INSERT.params([_split_values(s, now) for s in splits]),
            STATS_INSERT.params(stats_rows) if stats_rows else None)


_TYPED_COLUMNS = {"string": "string", "i64": "i64", "u64": "u64", "f64": "f64"}


def copy_records(splits: Sequence[SplitMetadata], now: datetime) -> tuple[list[tuple[Any, ...]], list[list[Any]]]:
    """The rows `SplitRepository.insert` copies into `splits` and `split_column_stats` (`SPLITS_INSERT.copy`,
    `STATS_INSERT.copy`): the same values as `insert_params`, a sequence per row in the statements' column order."""
    return (SPLITS_INSERT.records([_split_values(s, now) for s in splits]),
            [_stats_record(s.split_id, st) for s in splits for st in s.column_stats.values()])


_STATS_NAMES = STATS_INSERT.names
_STATS_WIDTH = len(_STATS_NAMES)
_COPY_SPLIT, _COPY_NAME, _COPY_TYPE, _COPY_NULL_COUNT, _COPY_REGEX = (
    _STATS_NAMES.index(name) for name in ("split_id", "column_name", "value_type", "null_count", "regex"))
_COPY_PAIRS = {kind: (_STATS_NAMES.index(f"min_{suffix}"), _STATS_NAMES.index(f"max_{suffix}"))
               for kind, suffix in _TYPED_COLUMNS.items()}


def _stats_record(split_id: str, stats: ColumnStats) -> list[Any]:
    """A statistics row in `STATS_INSERT.names` order, only its type's min/max set, u64 as Decimal (a list: 5,000
    of them a batch, no dict each)."""
    row: list[Any] = [None] * _STATS_WIDTH
    row[_COPY_SPLIT] = split_id
    row[_COPY_NAME] = stats.name
    row[_COPY_TYPE] = stats.value_type
    row[_COPY_NULL_COUNT] = stats.null_count
    row[_COPY_REGEX] = stats.regex
    pair = _COPY_PAIRS.get(stats.value_type)
    if pair is not None:
        low, high = stats.min_value, stats.max_value
        if stats.value_type == "u64":
            low = None if low is None else Decimal(low)
            high = None if high is None else Decimal(high)
        row[pair[0]], row[pair[1]] = low, high
    return row


def _stats_values(split_id: str, stats: ColumnStats) -> dict[str, Any]:
    """`_stats_record` by column name (`STATS_INSERT.params`)."""
    return dict(zip(_STATS_NAMES, _stats_record(split_id, stats), strict=True))


_STATS_TABLE = SplitColumnStatsRow.__table__
# Every column of the table in the model's order (what `_stats_from_row` indexes), whatever the stored order.
_STATS_SELECT = (f"SELECT {', '.join(_STATS_TABLE.columns.keys())} FROM split_column_stats "
                 "WHERE split_id = ANY($1::text[])")
# The same columns as fields of a record, the enum as text (asyncpg decodes a record's fields by their types).
_STATS_FIELDS = ", ".join(f"s.{name}::text" if name == "value_type" else f"s.{name}"
                          for name in _STATS_TABLE.columns.keys())
_TOTALS = ("SELECT coalesce(sum(files), 0), coalesce(sum(bytes), 0), coalesce(sum(row_groups), 0), "
           f"coalesce(sum(row_group_bytes), 0) FROM {PublishedTotalsRow.__tablename__} WHERE index_uid = $1")
# Position of each value type's (min, max) pair in a plain row of the table: a plan decodes thousands of rows,
# and indexing a tuple costs a fraction of an attribute lookup by a built name.
_STATS_PAIRS = {kind: (_STATS_TABLE.columns.keys().index(f"min_{suffix}"),
                       _STATS_TABLE.columns.keys().index(f"max_{suffix}")) for kind, suffix in _TYPED_COLUMNS.items()}
_STATS_SPLIT, _STATS_NAME, _STATS_TYPE, _STATS_NULL_COUNT, _STATS_REGEX = (
    _STATS_TABLE.columns.keys().index(name)
    for name in ("split_id", "column_name", "value_type", "null_count", "regex"))


def _stats_from_row(row: Sequence[Any]) -> ColumnStats:
    """`row`: a plain row of every column of `split_column_stats`, in table order."""
    value_type = row[_STATS_TYPE]
    pair = _STATS_PAIRS.get(value_type)
    low = high = None
    if pair is not None:
        low, high = row[pair[0]], row[pair[1]]
        if value_type == "u64":
            low = None if low is None else int(low)
            high = None if high is None else int(high)
    return ColumnStats(row[_STATS_NAME], value_type, low, high, row[_STATS_NULL_COUNT], row[_STATS_REGEX])


def _to_metadata(row: Any, stats: dict[str, ColumnStats], get: Callable[[Any, str], Any] = getattr) -> SplitMetadata:
    """From a row of the splits table: a SplitRow or a SQLAlchemy row (values as attributes, `getattr`), or a
    plain asyncpg record (`get=operator.getitem`)."""
    return SplitMetadata(
        split_id=get(row, "split_id"),
        index_uid=get(row, "index_uid"),
        source_id=get(row, "source_id"),
        partition_id=get(row, "partition_id"),
        doc_mapping_uid=get(row, "doc_mapping_uid"),
        sort_schema=get(row, "sort_schema"),
        window_start=get(row, "window_start"),
        window_duration_secs=get(row, "window_duration_secs"),
        time_range_start=get(row, "time_range_start"),
        time_range_end=get(row, "time_range_end"),
        num_rows=get(row, "num_rows"),
        uri=get(row, "uri"),
        size_bytes=get(row, "size_bytes"),
        row_groups=[RowGroupSpan(**rg) for rg in get(row, "row_groups")],
        column_stats=stats,
        num_merge_ops=get(row, "num_merge_ops"),
        generation=get(row, "generation"),
        root_split_ids=list(get(row, "root_split_ids") or []),
        parent_split_ids=list(get(row, "parent_split_ids") or []),
        state=SplitState(get(row, "state")),
    )

