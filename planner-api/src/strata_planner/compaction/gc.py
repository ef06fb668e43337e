"""The garbage collector: deletes the files of splits marked for deletion once the grace period has passed and no
query that started before they were replaced still runs (so queries planned before a merge published finish),
then their rows; and removes merge outputs that were never published (stale or failed attempts) once they are
older than the grace period."""

from __future__ import annotations

import asyncio
import logging
import posixpath
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.config import CompactionSettings
from strata_core.observability.tracing import traced
from strata_core.storage import ObjectStore
from strata_core.storage_layout import merges_dir
from strata_frame.maintenance.skips import MaintenancePass, PassRecorder, PassSkips, maintenance_pass
from strata_metastore.query_registry_repository import QueryRegistryRepository
from strata_metastore.repositories import IndexRepository, SplitRepository

log = logging.getLogger("strata.gc")


@dataclass(frozen=True, slots=True)
class GcReport:
    splits_deleted: int
    orphans_deleted: int
    # Entries left for a later pass (listed by GET /v1/maintenance/skips?pass=gc).
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class GarbageCollector:
    """The collector with what it works on: built once per app, run by the periodic pass and by tests."""

    sessions: async_sessionmaker[AsyncSession]
    storage: ObjectStore
    settings: CompactionSettings
    passes: PassRecorder

    @traced("gc_pass")
    async def collect(self, now: datetime) -> GcReport:
        grace = timedelta(seconds=self.settings.gc_grace_secs)
        deleted = 0
        async with self.sessions() as session:
            marked_before = await _marked_before(QueryRegistryRepository(session), now, grace,
                                                 timedelta(seconds=self.settings.gc_max_query_hold_secs))
        async with maintenance_pass(self.passes, MaintenancePass.GC, now) as skips:
            after = None
            while True:
                async with self.sessions() as session:
                    repo = SplitRepository(session)
                    rows = await repo.deletable(marked_before, self.settings.gc_batch_splits, after=after)
                    if not rows:
                        break
                    gone = []
                    for split_id, index_uid, uri, _ in rows:
                        async with skips.entry(index_uid.split(":", 1)[0], split_id) as outcome:
                            await asyncio.to_thread(self.storage.delete, uri)
                        if not outcome.skipped:
                            gone.append(split_id)
                    # Files first, rows after: a crash in between leaves rows whose files are already gone, and the
                    # next pass deletes them again (deleting a missing file is a no-op). A skipped split keeps its row.
                    await repo.delete(gone)
                    await session.commit()
                    deleted += len(gone)
                    after = (rows[-1].marked_for_deletion_at, rows[-1].split_id)
            orphans = await self._delete_unpublished_merge_outputs(now - grace, skips)
        if deleted or orphans:
            log.info("gc: deleted %d splits past their grace period, %d unpublished merge outputs", deleted, orphans)
        return GcReport(deleted, orphans, len(skips.skipped))


    async def _delete_unpublished_merge_outputs(self, older_than: datetime, skips: PassSkips) -> int:
        async with self.sessions() as session:
            indexes = await IndexRepository(session).incarnations()
        removed = 0
        for _, index_id, incarnation in indexes:
            prefix = merges_dir(index_id, incarnation)
            files: list[tuple[str, float]] = []
            async with skips.entry(index_id, self.storage.uri_for(prefix)):
                files = await asyncio.to_thread(self.storage.list_files_with_mtime, prefix)
            stale = [(uri, posixpath.basename(uri).split(".")[0]) for uri, mtime in files
                     if mtime <= older_than.timestamp()]
            if not stale:
                continue
            async with self.sessions() as session:
                known = await SplitRepository(session).existing_ids([s for _, s in stale])
            for uri, split_id in stale:
                if split_id in known:
                    continue
                async with skips.entry(index_id, uri) as outcome:
                    await asyncio.to_thread(self.storage.delete, uri)
                removed += not outcome.skipped
        return removed


async def _marked_before(queries: QueryRegistryRepository, now: datetime, grace: timedelta,
                         max_hold: timedelta) -> datetime:
    """Splits replaced before this time may go: past their grace, and before any query still running started (it
    may have planned on them: a Spark scan under load can outlast any grace), unless that query has held them
    longer than `max_hold`."""
    horizon = now - grace
    oldest_query = await queries.oldest_running_start()
    if oldest_query is not None and oldest_query < horizon:
        log.info("gc: keeping splits replaced after %s for a query running since then", oldest_query.isoformat())
        return max(oldest_query, now - max_hold)
    return horizon

