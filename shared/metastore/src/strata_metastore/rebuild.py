"""`strata metastore rebuild`: the metastore restored from the bucket alone (docs/architecture.md, "The commit
log"; README, "Losing PostgreSQL").

Into an empty, migrated database: the latest checkpoint, then every entry it does not hold, in number order, in
one transaction with capture off (replaying is not a new commitment). The counters derived from the logged
tables (`published_totals`, `plan_generations`) are kept by their triggers as rows go in. What is work in
progress rather than commitment is planned again: every window holding published splits is marked for the
compaction planner, published files without a published artifact snapshot get an indexing job, and a delete's
coverage that a rewrite job held goes back to pending for a new job (in a second transaction, logged like any
change). Plan generations move past any value a query-api replica may have kept from before.

`--from-dump` rolls a database restored from an older dump forward instead: the dump's unshipped entries are
written to the bucket first (the dump may hold the only copy), then the logged tables are emptied and rebuilt as
above, keeping the dump's job history, samples and skips.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.errors import Conflict
from strata_core.storage import ObjectStore
from strata_metastore.commit_log import LOGGED_TABLES
from strata_metastore.commit_log_passes import ship_pending
from strata_metastore.commit_log_replay import FOLD_ENTRIES, Replayer, list_log, read_entries, table_shapes
from strata_metastore.indexing_repository import IndexingRepository

Progress = Callable[[str, int, int], None]



@dataclass
class RebuildReport:
    checkpoint_seq: int | None
    entries_applied: int
    last_seq: int
    rows: dict[str, int] = field(default_factory=dict)
    windows_marked: int = 0
    indexing_jobs: int = 0
    coverage_reset: int = 0
    objects_read: int = 0
    seconds: float = 0.0
    # Seconds per phase: listing, checkpoint, entries, derived (windows, counters' offset, commit), jobs.
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def splits_per_second(self) -> float:
        return self.rows.get("splits", 0) / self.seconds if self.seconds else 0.0

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "splits_per_second": self.splits_per_second}


class DatabaseNotEmpty(Conflict):
    slug, title = "database-not-empty", "The database already holds indexes"


async def refuse_a_database_with_indexes(session: AsyncSession) -> None:
    """DatabaseNotEmpty unless the database holds no index: a rebuild without --from-dump only fills an empty one."""
    if (await session.execute(text("SELECT EXISTS (SELECT 1 FROM indexes)"))).scalar_one():
        raise DatabaseNotEmpty("the database already holds indexes: rebuild into an empty database (created and "
                               "migrated), or roll a restored dump forward with --from-dump (from_dump)")


async def rebuild(sessions: async_sessionmaker[AsyncSession], storage: ObjectStore, now: datetime, *,
                  from_dump: bool = False, progress: Progress | None = None) -> RebuildReport:
    started = time.perf_counter()
    if from_dump:
        await ship_pending(sessions, storage, grace=timedelta(0))
    listing = await asyncio.to_thread(list_log, storage)
    to_apply = listing.to_apply()
    mark = _Stopwatch(started)
    checkpoint_seq = listing.checkpoint.seq if listing.checkpoint else None
    report = RebuildReport(checkpoint_seq=checkpoint_seq, entries_applied=len(to_apply),
                           last_seq=max([*to_apply, checkpoint_seq or 0]), objects_read=listing.objects_read)
    async with sessions() as session:
        if not from_dump:
            await refuse_a_database_with_indexes(session)
        await session.execute(text("SET LOCAL strata.capture = 'off'"))
        if from_dump:
            # CASCADE empties what hangs off them too: the counters (kept again below) and the dump's jobs.
            await session.execute(text(f"TRUNCATE {', '.join(LOGGED_TABLES)}, commit_log, commit_log_checkpoints "
                                       f"CASCADE"))
        replayer = Replayer(session, await table_shapes(session))
        report.phases["listing"] = mark()
        if listing.checkpoint is not None:
            await replayer.load_checkpoint(storage, listing.checkpoint)
            report.objects_read += len(listing.checkpoint.tables)
            await session.execute(text("INSERT INTO commit_log_checkpoints (seq, missing) VALUES (:seq, :missing)"),
                                  {"seq": listing.checkpoint.seq, "missing": sorted(listing.checkpoint.missing)})
        report.phases["checkpoint"] = mark()
        for start in range(0, len(to_apply), FOLD_ENTRIES):
            batch = to_apply[start:start + FOLD_ENTRIES]
            entries = await read_entries(storage, batch)
            await replayer.apply_folded(entries)
            # The entries are known to PostgreSQL again, as shipped ones: their changes are the bucket's objects, so
            # verify finds nothing the database lacks and the ship pass nothing to write.
            await session.execute(text("INSERT INTO commit_log (seq) SELECT unnest(CAST(:seqs AS bigint[]))"),
                                  {"seqs": batch})
            if progress is not None:
                progress("entries", start + len(batch), len(to_apply))
        report.phases["entries"] = mark()
        report.objects_read += len(to_apply)
        report.rows = dict(replayer.rows_applied)
        if report.last_seq:
            await session.execute(text("SELECT setval('commit_log_seq', GREATEST(:seq, "
                                       "(SELECT last_value FROM commit_log_seq)))"), {"seq": report.last_seq})
        # Equality is all a kept plan compares: numbers from the wall clock cannot repeat one kept before.
        await session.execute(text("UPDATE plan_generations SET generation = generation + :offset"),
                              {"offset": int(now.timestamp() * 1_000_000)})
        report.windows_marked = (await session.execute(text("""
            INSERT INTO compaction_windows (index_uid, window_duration_secs, window_start, dirty, final_planned)
            SELECT DISTINCT index_uid, window_duration_secs, window_start, true, false
              FROM splits WHERE state = 'published'
            ON CONFLICT (index_uid, window_duration_secs, window_start)
            DO UPDATE SET dirty = true, final_planned = false"""))).rowcount
        await session.commit()
    report.phases["derived"] = mark()
    async with sessions() as session:
        unindexed = (await session.execute(text("""
            SELECT s.split_id, s.index_uid, s.partition_id FROM splits s
             WHERE s.state = 'published' AND NOT EXISTS (
                   SELECT 1 FROM artifact_snapshots a WHERE a.split_id = s.split_id AND a.published)"""))).all()
        report.indexing_jobs = await IndexingRepository(session).enqueue(
            [tuple(r) for r in unindexed], "rebuild", now)
        report.coverage_reset = (await session.execute(text(
            "UPDATE delete_splits SET state = 'pending', job_id = NULL WHERE state = 'rewriting'"))).rowcount
        await session.commit()
    report.phases["jobs"] = mark()
    report.seconds = time.perf_counter() - started
    return report


class _Stopwatch:
    def __init__(self, started: float) -> None:
        self.last = started

    def __call__(self) -> float:
        now = time.perf_counter()
        elapsed, self.last = now - self.last, now
        return round(elapsed, 3)
