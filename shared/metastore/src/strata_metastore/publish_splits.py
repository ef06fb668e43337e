"""Publishing splits: the one use case that makes splits visible, whoever made them. Ingestion stages its splits,
writes their files, then publishes them (`stage_splits`, `publish_staged`); registration publishes files written
elsewhere, and planner-api a merge's or a rewrite's outputs (`publish_splits`; `strata_planner.compaction.publish`
runs the rest of a merge's publish around it).

The repositories below only write rows. What follows a publication is done here, in the caller's transaction, the
same way on every path:

- outputs that replace inputs are checked first, so a violation publishes nothing (`PublishConflict`): a merge
  keeps every row (MC-1), a rewrite never more than its input held (DL-1), and every output lies in the job's
  window and index (TW-3);
- the windows of the published splits are flagged changed, so the next planner pass looks at them;
- every published file gets an indexing job (`reason="published"`): its artifacts are built, the job created with
  the publication, atomically.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.dialects.postgresql.dml import Insert
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.split import SplitMetadata, SplitState
from strata_metastore.column_arrays import ColumnArrays
from strata_metastore.compaction_models import CompactionWindowRow
from strata_metastore.indexing_models import IndexingJobRow
from strata_metastore.indexing_repository import LIVE_JOB, new_job_rows
from strata_metastore.lease_queue import PublishRefused
from strata_metastore.plain_writes import PlainStatement, PlainTransaction
from strata_metastore.repositories import (
    PUBLISH_STAGED,
    SPLITS_INSERT,
    STATS_INSERT,
    PublishedSplit,
    SplitRepository,
    insert_params,
    utcnow,
)
from strata_metastore.window_repository import window_flag_rows


class PublishConflict(PublishRefused):
    """The publish would break an invariant (an input no longer published, MC-1, DL-1, TW-3): nothing is
    written."""


@dataclass(frozen=True, slots=True)
class Replacing:
    """What a merge's or a rewrite's outputs replace: the job's index and window, and the rows its inputs hold."""
    index_uid: str
    window_start: int
    input_rows: int
    rewrite: bool


def check_replacement(replacing: Replacing, outputs: Sequence[SplitMetadata]) -> None:
    """MC-1 (a merge's outputs hold its inputs' rows), DL-1 (a rewrite's never more) and TW-3 (every output in
    the job's window and index); PublishConflict names the first broken."""
    output_rows = sum(o.num_rows for o in outputs)
    if replacing.rewrite and output_rows > replacing.input_rows:
        raise PublishConflict(f"outputs hold {output_rows} rows, more than the input's {replacing.input_rows} "
                              f"(DL-1)")
    if not replacing.rewrite and replacing.input_rows != output_rows:
        raise PublishConflict(f"outputs hold {output_rows} rows, inputs {replacing.input_rows} (MC-1)")
    for output in outputs:
        if output.window_start != replacing.window_start or output.index_uid != replacing.index_uid:
            raise PublishConflict(f"output {output.split_id} is outside the job's window or index (TW-3)")


async def publish_splits(session: AsyncSession, splits: Sequence[SplitMetadata], *,
                         replacing: Replacing | None = None) -> None:
    """New splits, published at once (registration, a merge's or a rewrite's outputs, checked against what they
    replace first), and what follows their publication."""
    if replacing is not None:
        check_replacement(replacing, splits)
    if not splits:
        return
    for split in splits:
        split.state = SplitState.PUBLISHED
    now = utcnow()
    await SplitRepository(session).insert(splits, now)
    await _published(session, (PublishedSplit(s.index_uid, s.window_duration_secs, s.window_start, s.split_id,
                                              s.partition_id) for s in splits), now)


async def stage_splits(session: AsyncSession, splits: Sequence[SplitMetadata]) -> None:
    """New splits, staged (their files not written yet): no query, planner or indexer sees them, so nothing
    follows until `publish_staged`."""
    for split in splits:
        split.state = SplitState.STAGED
    await SplitRepository(session).insert(splits)


async def publish_staged(session: AsyncSession, split_ids: Sequence[str]) -> int:
    """staged -> published for exactly these splits, and what follows; returns how many moved.

    Two statements, in this order, on purpose: the counters' statement-level triggers on `splits` (migration
    0008) lock the index's totals at the end of the UPDATE, before the window flag is taken (by `AFTER_PUBLISH`,
    the flags and jobs together: neither table has triggers), as a merge's publish takes them. One statement (the
    window flags and jobs as data-modifying CTEs over the UPDATE's rows) fires those triggers at the end of the
    whole statement, after the window: under compaction that order deadlocked with merge publishes
    (docs/benchmarks.md, "Ingestion at a few ms of CPU per request")."""
    now = utcnow()
    moved = await SplitRepository(session).publish_staged(split_ids, now)
    await _published(session, moved, now)
    return len(moved)


# --- the same two use cases in a plain asyncpg transaction (`plain_writes`: ingestion's hot path) -------------

async def stage_splits_plain(transaction: PlainTransaction, splits: Sequence[SplitMetadata]) -> None:
    """`stage_splits` in a plain transaction: the same two statements, in the same order."""
    if not splits:
        return
    for split in splits:
        split.state = SplitState.STAGED
    split_params, stats_params = insert_params(splits, utcnow())
    await transaction.execute(_PLAIN_SPLITS_INSERT, split_params)
    if stats_params is not None:
        await transaction.execute(_PLAIN_STATS_INSERT, stats_params)


async def publish_staged_plain(transaction: PlainTransaction, split_ids: Sequence[str]) -> int:
    """`publish_staged` in a plain transaction: the UPDATE (its counters' triggers firing at its end, as in
    `publish_staged`), then the window flags and jobs (`AFTER_PUBLISH`); returns how many moved."""
    now = utcnow()
    rows = await transaction.fetch(_PLAIN_PUBLISH_STAGED.sql,
                                   *_PLAIN_PUBLISH_STAGED.args({"split_ids": list(split_ids), "now": now}))
    moved = [PublishedSplit(*row) for row in rows]
    params = after_publish_params(moved, now)
    if params is not None:
        await transaction.execute(_PLAIN_AFTER_PUBLISH, params)
    return len(moved)


async def _published(session: AsyncSession, published: Iterable[PublishedSplit], now: datetime) -> None:
    params = after_publish_params(published, now)
    if params is not None:
        await session.execute(AFTER_PUBLISH, params)


# The windows' change flags (`CompactionWindowRepository.mark_changed`) and the indexing jobs
# (`IndexingRepository.enqueue`) of a publication, as one statement: the upsert of the flags as a data-modifying CTE,
# the insert of the jobs as its main statement. Neither table has triggers, so nothing fires at the end of the
# statement that would take a lock out of the order of separate statements; it runs after the statements that
# change `splits` (whose counters' triggers lock the index's totals), as the two statements it replaces did.
_WINDOW_FLAGS = ColumnArrays(CompactionWindowRow.__table__, ("index_uid", "window_duration_secs", "window_start",
                                                             "dirty", "final_planned", "changed_at"), prefix="w_")
_NEW_JOBS = ColumnArrays(IndexingJobRow.__table__, prefix="j_")


def _after_publish_statement() -> Insert:
    flags = _WINDOW_FLAGS.statement
    # A window that gains a split needs planning again, including a new final merge if it had one.
    flags = flags.on_conflict_do_update(
        index_elements=["index_uid", "window_duration_secs", "window_start"],
        set_={"dirty": True, "final_planned": False, "changed_at": flags.excluded.changed_at})
    jobs = _NEW_JOBS.statement.on_conflict_do_nothing(index_elements=["split_id"], index_where=LIVE_JOB)
    return jobs.add_cte(flags.cte("flagged"))


AFTER_PUBLISH = _after_publish_statement()


def after_publish_params(published: Iterable[PublishedSplit], now: datetime) -> dict[str, list] | None:
    """`AFTER_PUBLISH`'s parameters for splits that just moved to published (None: no split moved)."""
    published = list(published)
    if not published:
        return None
    windows = window_flag_rows({(s.index_uid, s.window_duration_secs, s.window_start) for s in published},
                               datetime.now(UTC))
    # Every published file gets its artifacts built: the job is created with the publication, atomically.
    jobs = new_job_rows([(s.split_id, s.index_uid, s.partition_id) for s in published], "published", now)
    return {**_WINDOW_FLAGS.params(windows), **_NEW_JOBS.params(jobs)}


_PLAIN_SPLITS_INSERT = PlainStatement(SPLITS_INSERT.statement)
_PLAIN_PUBLISH_STAGED = PlainStatement(PUBLISH_STAGED)
_PLAIN_STATS_INSERT = PlainStatement(STATS_INSERT.statement)
_PLAIN_AFTER_PUBLISH = PlainStatement(AFTER_PUBLISH)
