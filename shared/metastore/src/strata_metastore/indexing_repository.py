"""All SQL of indexing jobs, artifacts and snapshots.

Jobs go through the shared `LeaseQueue` (leases, fencing tokens, failures, pauses, retries), ordered oldest first
and limited in progress globally and per tenant. A file's artifact set becomes visible in one statement: its
snapshot row flips to `published` with the list of artifact ids, in the transaction that registers the last of
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import String, and_, delete, func, literal, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.util import identity_key
from ulid import ULID

from strata_core.domain.artifact_refs import ArtifactRef
from strata_core.domain.job_statuses import JobStatus, check_transition
from strata_core.domain.scheduler_rules import INDEXING_ASSIGNMENT_ORDER, InProgressLimits
from strata_core.domain.split import SplitState
from strata_metastore.column_arrays import ColumnArrays
from strata_metastore.indexing_models import ArtifactRow, ArtifactSnapshotRow, IndexingJobRow
from strata_metastore.job_columns import new_job_values
from strata_metastore.lease_queue import JobFilter, LeaseQueue
from strata_metastore.models import SplitRow
from strata_metastore.single_reads import session_driver

_JOBS_INSERT = ColumnArrays(IndexingJobRow.__table__)
LIVE_JOB = text("status IN ('unassigned', 'in_progress')")


def new_job_rows(splits: Sequence[tuple[str, str, str]], reason: str, now: datetime) -> list[dict[str, Any]]:
    """The rows of `enqueue`'s insert: one new job per (split_id, index_uid, partition_id)."""
    return [{"job_id": str(ULID()), "split_id": s, "index_uid": i, "partition_id": p, "reason": reason,
             "artifact_count": None, "artifact_bytes": None, "skipped": [], **new_job_values(now)}
            for s, i, p in sorted(set(splits))]


class PublishedArtifactRow(NamedTuple):
    artifact_id: str
    artifact_type: str
    column_name: str
    uri: str
    content_hash: str


# Each published snapshot's artifacts in the snapshot's order (a snapshot listing none: one row of nulls; an id
# without its artifact row is left out, as it is unusable). Each id is looked up by primary key (OFFSET 0 keeps the
# lookup a per-id subquery): joined plainly, PostgreSQL estimates 100 ids per snapshot and hashes every artifact
# of the table instead (0.9 vs 0.3 ms for the bench's 29 files and 87 artifacts).
_PUBLISHED_ARTIFACTS = """
SELECT s.split_id, a.artifact_id, a.artifact_type, a.column_name, a.uri, a.content_hash
  FROM artifact_snapshots s
  LEFT JOIN LATERAL jsonb_array_elements_text(s.artifact_ids) WITH ORDINALITY AS listed(artifact_id, n) ON TRUE
  LEFT JOIN LATERAL (SELECT * FROM index_artifacts a WHERE a.artifact_id = listed.artifact_id OFFSET 0) a ON TRUE
 WHERE s.split_id = ANY($1::text[]) AND s.published
 ORDER BY s.split_id, listed.n"""


class SnapshotToPublish(NamedTuple):
    """A file's artifact set to publish: its artifacts, the manifest listing them, who publishes it."""

    split: SplitRow
    artifacts: Sequence[ArtifactRow]
    manifest_uri: str
    published_by: str


class ArtifactConflict(Exception):
    """An artifact with the same identity (file, type, column, version) is registered with other content."""


@dataclass(frozen=True, slots=True)
class IndexingJobFilter(JobFilter):
    split_id: str | None = None


@dataclass(frozen=True, slots=True)
class IndexingLag:
    index_uid: str
    files_waiting: int
    oldest_published_at: datetime | None


class IndexingRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.queue = LeaseQueue(session, IndexingJobRow, "indexing_paused_at")

    # --- jobs -----------------------------------------------------------------------------------------------

    async def enqueue(self, splits: Sequence[tuple[str, str, str]], reason: str, now: datetime) -> int:
        """One job per (split_id, index_uid, partition_id) that has no live job yet; returns how many were new."""
        if not splits:
            return 0
        rows = new_job_rows(splits, reason, now)
        stmt = _JOBS_INSERT.statement.on_conflict_do_nothing(
            index_elements=["split_id"], index_where=LIVE_JOB).returning(IndexingJobRow.__table__.c.job_id)
        return len((await self.session.execute(stmt, _JOBS_INSERT.params(rows))).all())

    async def cancel_orphaned(self, now: datetime, head: int) -> int:
        """Waiting jobs whose file is no longer published (merged away, index deleted) will never be read: cancel
        those among the `head` next to be handed out (`INDEXING_ASSIGNMENT_ORDER`) rather than spend a build on
        them. Only the head, and each job's file by its key: a cost of `head` lookups a poll, however long the
        queue or the split table (a join of every waiting job with the splits not published scanned every split,
        19.6 ms at 20,000; a lookup per waiting job took 25.6 ms at 6,652 waiting). A job further back is
        cancelled on its way to the head."""
        m = IndexingJobRow
        next_up = (select(m.job_id).where(m.status == JobStatus.UNASSIGNED)
                   .order_by(*self.queue.ordered(INDEXING_ASSIGNMENT_ORDER)).limit(head))
        state = select(SplitRow.state).where(SplitRow.split_id == m.split_id).scalar_subquery()
        jobs = (await self.session.execute(
            select(m).where(m.job_id.in_(next_up), m.status == JobStatus.UNASSIGNED,
                            state.is_distinct_from(SplitState.PUBLISHED))
            .with_for_update(skip_locked=True))).scalars().all()
        for job in jobs:
            self.queue.cancel(job, now, stage="file_not_published")
        await self.session.flush()
        return len(jobs)

    async def cancel_index_jobs(self, index_uid: str, now: datetime) -> int:
        """The index was deleted: its files will not be read, so their builds are cancelled."""
        return len(await self.queue.cancel_live_of_index(index_uid, now, stage="index_deleted"))

    async def assign(self, worker_id: str, capacity: int, now: datetime, lease: timedelta,
                     limits: InProgressLimits) -> list[IndexingJobRow]:
        """Oldest waiting jobs first, skipping paused indexes, within the caps on jobs in progress."""
        return await self.queue.lease_within(INDEXING_ASSIGNMENT_ORDER, worker_id, capacity, now, lease, limits)

    async def cancel(self, job_id: str, now: datetime) -> IndexingJobRow | None:
        """An operator's cancel (InvalidTransition if the job already ended): its worker's next write is refused."""
        job = await self.queue.get(job_id, for_update=True)
        if job is None:
            return None
        self.queue.cancel(job, now)
        await self.session.flush()
        return job

    async def retry(self, job_id: str, now: datetime) -> IndexingJobRow | None:
        """Retry an excluded job (InvalidTransition otherwise): back to the queue while its file is still published
        and no other job builds it; otherwise there is nothing left for it to do, and it is cancelled."""
        job = await self.queue.get(job_id, for_update=True)
        if job is None:
            return None
        check_transition(job.status, JobStatus.UNASSIGNED)
        state = await self.session.scalar(select(SplitRow.state).where(SplitRow.split_id == job.split_id))
        other = await self.session.scalar(select(IndexingJobRow.job_id).where(
            IndexingJobRow.split_id == job.split_id, IndexingJobRow.job_id != job.job_id, LIVE_JOB).limit(1))
        if state is not SplitState.PUBLISHED:
            self.queue.cancel(job, now, stage="inputs_changed")
        elif other is not None:
            self.queue.cancel(job, now, stage="superseded")
        else:
            self.queue.retry(job, now)
        await self.session.flush()
        return job

    async def get(self, job_id: str) -> IndexingJobRow | None:
        return await self.queue.get(job_id)

    async def list_page(self, flt: IndexingJobFilter, *, limit: int,
                        after_job_id: str | None) -> Sequence[IndexingJobRow]:
        where = [] if flt.split_id is None else [IndexingJobRow.split_id == flt.split_id]
        return await self.queue.page(flt, where, limit=limit, after_job_id=after_job_id)

    async def count_by_status(self) -> dict[JobStatus, int]:
        return await self.queue.count_by_status()

    # --- artifacts and snapshots ----------------------------------------------------------------------------

    async def artifacts_of(self, split_id: str) -> list[ArtifactRow]:
        return list((await self.session.execute(
            select(ArtifactRow).where(ArtifactRow.split_id == split_id)
            .order_by(ArtifactRow.artifact_type, ArtifactRow.column_name, ArtifactRow.format_version)
        )).scalars().all())

    async def artifacts_and_snapshot(self, split_id: str) -> tuple[list[ArtifactRow], ArtifactSnapshotRow | None]:
        """A file's registered artifacts and its snapshot, read in one statement: read in two, a publication
        committing in between showed a published snapshot beside no artifacts (or the reverse)."""
        key = select(literal(split_id, String).label("split_id")).subquery()
        rows = (await self.session.execute(
            select(ArtifactSnapshotRow, ArtifactRow).select_from(key)
            .outerjoin(ArtifactSnapshotRow, ArtifactSnapshotRow.split_id == key.c.split_id)
            .outerjoin(ArtifactRow, ArtifactRow.split_id == key.c.split_id)
            .order_by(ArtifactRow.artifact_type, ArtifactRow.column_name, ArtifactRow.format_version)
            .execution_options(populate_existing=True))).all()
        return [artifact for _, artifact in rows if artifact is not None], rows[0][0]

    async def artifacts_of_index(self, index_uid: str) -> list[ArtifactRow]:
        return list((await self.session.execute(
            select(ArtifactRow).where(ArtifactRow.index_uid == index_uid))).scalars().all())

    async def unregister(self, artifact_id: str) -> None:
        await self.session.execute(delete(ArtifactRow).where(ArtifactRow.artifact_id == artifact_id))

    async def register(self, split: SplitRow, refs: Sequence[ArtifactRef], registered_by: str, *,
                       replace: bool) -> list[tuple[ArtifactRow, bool]]:
        """Register artifacts of one file; (row, created) each. The same identity with the same content is a
        no-op; with other content it is an ArtifactConflict, unless `replace` (a fenced rebuild of the file owns
        its artifacts and may supersede them)."""
        [registered] = await self.register_many([(split, refs, registered_by)], replace=replace)
        return registered

    async def register_many(self, builds: Sequence[tuple[SplitRow, Sequence[ArtifactRef], str]], *,
                            replace: bool) -> list[list[tuple[ArtifactRow, bool]]]:
        """`register` for several files at once, (file, refs, registered_by) each: their registered artifacts
        read in one statement and the new ones inserted in one, so a poll's builds cost one statement per kind
        (and one commit-log capture each), not one per build."""
        ids = sorted({split.split_id for split, _, _ in builds})
        existing: dict[tuple[str, tuple[str, str, int]], ArtifactRow] = {}
        if ids:
            for row in (await self.session.execute(
                    select(ArtifactRow).where(ArtifactRow.split_id.in_(ids)))).scalars():
                existing[(row.split_id, (row.artifact_type, row.column_name, row.format_version))] = row
        out = []
        for split, refs, registered_by in builds:
            registered = []
            for ref in refs:
                key = (split.split_id, ref.identity)
                row = existing.get(key)
                if row is not None:
                    registered.append((row, False))
                    if (row.content_hash, row.size_bytes, row.uri) == (ref.content_hash, ref.size_bytes, ref.uri):
                        continue
                    if not replace:
                        raise ArtifactConflict(
                            f"{ref.artifact_type} artifact{' of column ' + ref.column if ref.column else ''} "
                            f"v{ref.format_version} of split {split.split_id} is already registered with content "
                            f"{row.content_hash}, not {ref.content_hash}")
                    row.uri, row.size_bytes, row.content_hash = ref.uri, ref.size_bytes, ref.content_hash
                    row.registered_by = registered_by
                    continue
                row = ArtifactRow(artifact_id=str(ULID()), split_id=split.split_id, index_uid=split.index_uid,
                                  artifact_type=ref.artifact_type, column_name=ref.column,
                                  format_version=ref.format_version, uri=ref.uri, size_bytes=ref.size_bytes,
                                  content_hash=ref.content_hash, registered_by=registered_by)
                self.session.add(row)
                existing[key] = row
                registered.append((row, True))
            out.append(registered)
        await self.session.flush()
        return out

    async def publish_snapshot(self, split: SplitRow, artifacts: Sequence[ArtifactRow], manifest_uri: str,
                               published_by: str, now: datetime) -> None:
        """The file's artifact set becomes visible at commit, all of it."""
        await self.publish_snapshots([SnapshotToPublish(split, artifacts, manifest_uri, published_by)], now)

    async def publish_snapshots(self, snapshots: Sequence[SnapshotToPublish], now: datetime) -> None:
        """`publish_snapshot` for several files in one statement. Its rows go in (index, file) order: the
        statement's trigger raises each index's plan generation, and concurrent publishes take those rows in one
        order."""
        if not snapshots:
            return
        values = [{"split_id": s.split.split_id, "index_uid": s.split.index_uid, "manifest_uri": s.manifest_uri,
                   "published": True, "published_by": s.published_by, "published_at": now, "updated_at": now,
                   "artifact_ids": [a.artifact_id for a in sorted(s.artifacts, key=lambda a: (
                       a.artifact_type, a.column_name, a.format_version))]}
                  for s in sorted(snapshots, key=lambda s: (s.split.index_uid, s.split.split_id))]
        stmt = pg_insert(ArtifactSnapshotRow).values(values)
        stmt = stmt.on_conflict_do_update(index_elements=["split_id"], set_={
            column: stmt.excluded[column] for column in (
                "manifest_uri", "published", "artifact_ids", "published_by", "published_at", "updated_at")})
        await self.session.execute(stmt)
        # Written around the ORM: a copy of a row this session holds is stale now, and is read again if used.
        for s in snapshots:
            key = identity_key(ArtifactSnapshotRow, s.split.split_id)
            if (held := self.session.identity_map.get(key)) is not None:
                self.session.expire(held)

    async def unpublish_snapshot(self, split_id: str, now: datetime) -> None:
        await self.session.execute(update(ArtifactSnapshotRow).where(ArtifactSnapshotRow.split_id == split_id)
                                   .values(published=False, updated_at=now))

    async def published_artifacts(self, split_ids: Sequence[str]) -> dict[str, list[PublishedArtifactRow]]:
        """The artifacts queries may use: exactly those listed by each file's published snapshot, in its order, as
        plain rows (artifact_id, artifact_type, column_name, uri, content_hash); a file whose snapshot lists none
        has an empty list, a file without a published snapshot none. A plan reads them for every file it keeps:
        one plain asyncpg statement on the session's connection (ORM objects, or SQLAlchemy's row handling of two
        statements, would cost more than the rest of the plan)."""
        if not split_ids:
            return {}
        driver = await session_driver(self.session)
        found: dict[str, list[PublishedArtifactRow]] = {}
        for row in await driver.fetch(_PUBLISHED_ARTIFACTS, list(split_ids)):
            listed = found.setdefault(row[0], [])
            if row[1] is not None:
                listed.append(PublishedArtifactRow(*row[1:]))
        return found

    async def lag(self, now: datetime, index_uid: str | None = None) -> list[IndexingLag]:
        """Per index (or of one index): published files without a published snapshot, and when the oldest of them
        was published."""
        stmt = (select(SplitRow.index_uid, func.count(), func.min(SplitRow.published_at))
                .outerjoin(ArtifactSnapshotRow, and_(ArtifactSnapshotRow.split_id == SplitRow.split_id,
                                                     ArtifactSnapshotRow.published))
                .where(SplitRow.state == SplitState.PUBLISHED, ArtifactSnapshotRow.split_id.is_(None))
                .group_by(SplitRow.index_uid))
        if index_uid is not None:
            stmt = stmt.where(SplitRow.index_uid == index_uid)
        rows = (await self.session.execute(stmt)).all()
        return [IndexingLag(index_uid, count, oldest) for index_uid, count, oldest in rows]
