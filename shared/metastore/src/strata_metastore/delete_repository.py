"""All SQL of row-level deletes: accepting one (its coverage in the same transaction), the coverage in force that
query plans apply, the rewrite jobs' claims, what a publish does to the coverage of the splits it replaces, and the
reads behind the status, the receipt and the metrics.

Accepting a delete and publishing a compaction job (merge or rewrite) serialize per index on one advisory lock
(exclusive for the delete, shared for publishes): a delete's coverage is read after every publish before it has
committed, and a publish checks coverage after every delete before it. Without it a merge publishing while a delete
is accepted could leave the delete covering the merge's inputs but not its output, and the deleted rows would be
readable again in the output (DL-4).

Coverage leaves out the splits whose published index artifacts prove they hold no row the predicate matches
(`strata_core.query.artifact_pruning`, the cascade's artifact stages). Reading artifacts is object-store I/O, so
it is done before the acceptance's transaction, without the lock, and only its verdict enters it (`accept`'s
`ruled_out`): a split id it names holds no matching row whatever happened since (a split's file never changes
under its id), and a split published in between was not examined, so it is covered as before. A publish passes
coverage from its inputs to its outputs only for deletes covering an input; an input left out held no matching
row, so neither do the rows it gave an output.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import String, and_, any_, cast, exists, func, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from ulid import ULID

from strata_core.domain.split import SplitMetadata, SplitState
from strata_core.query.artifact_pruning import ArtifactCandidate, PublishedArtifact
from strata_core.query.predicate import Predicate, columns_of
from strata_core.query.predicate_json import predicate_from_data, predicate_to_data
from strata_core.query.time_range import TimeRanges
from strata_metastore.compaction_models import CompactionJobInputRow, CompactionJobRow
from strata_metastore.delete_models import DeleteRow, DeleteSplitRow
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.models import SplitRow
from strata_metastore.repositories import PublishedCandidates, SplitRepository
from strata_metastore.single_reads import session_driver

IN_FORCE = ("pending", "rewriting")
_IN_FORCE = """
SELECT c.split_id, d.delete_id, d.predicate
  FROM delete_splits c JOIN deletes d ON d.delete_id = c.delete_id
 WHERE c.split_id = ANY($1::text[]) AND c.state = ANY($2::text[])
 ORDER BY c.split_id, d.delete_id"""
_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended('strata.deletes:' || :uid, 0))")
_LOCK_SHARED = text("SELECT pg_advisory_xact_lock_shared(hashtextextended('strata.deletes:' || :uid, 0))")
# Several, in index_uid order (the sorted subquery feeds the locks one row at a time, in its order).
_LOCK_SHARED_MANY = text("SELECT pg_advisory_xact_lock_shared(hashtextextended('strata.deletes:' || u, 0)) "
                         "FROM (SELECT u FROM unnest(CAST(:uids AS text[])) AS u ORDER BY u) AS s")
_BUMP_GENERATION = text("""
    INSERT INTO plan_generations AS g (index_uid, generation) VALUES (:uid, 1)
    ON CONFLICT (index_uid) DO UPDATE SET generation = g.generation + 1
    RETURNING generation""")
# More candidates than any index holds: a delete covers every split its statistics cannot rule out.
_NO_LIMIT = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Coverage:
    """A delete in force on a split: the rows its predicate matches there are hidden until the rewrite publishes."""

    delete_id: str
    predicate: Predicate


@dataclass(frozen=True, slots=True)
class RewriteClaim:
    """A covered split no live job holds, and the oldest delete in force on it."""

    delete_id: str
    split: SplitRow


@dataclass(frozen=True, slots=True)
class Accepted:
    """A delete just recorded, and how its coverage was decided among the published splits of its scope whose
    time range meets its predicate's: the splits it covers, those split statistics ruled out, and of the rest those
    published artifacts ruled out."""

    delete: DeleteRow
    covered: int
    ruled_out_by_statistics: int
    ruled_out_by_artifacts: int


@dataclass(frozen=True, slots=True)
class DeleteCounts:
    pending: int
    running: int
    failed: int
    cancelled: int
    rows_removed: int
    oldest_pending_accepted_at: datetime | None


class DeleteRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def lock_index(self, index_uid: str, *, exclusive: bool) -> None:
        await self.session.execute(_LOCK if exclusive else _LOCK_SHARED, {"uid": index_uid})

    async def lock_indexes_shared(self, index_uids: Collection[str]) -> None:
        """`lock_index(exclusive=False)` of several indexes in one statement, in index_uid order."""
        uids = sorted(set(index_uids))
        if len(uids) == 1:
            await self.lock_index(uids[0], exclusive=False)
        elif uids:
            await self.session.execute(_LOCK_SHARED_MANY, {"uids": uids})

    # --- acceptance -----------------------------------------------------------------------------------------

    async def accept(self, *, index_uid: str, partition_id: str | None, where_sql: str, predicate: Predicate,
                     ranges_secs: TimeRanges, window_duration_secs: int, reason: str | None,
                     requested_by: str | None, now: datetime, ruled_out: Collection[str] = frozenset()) -> Accepted:
        """Record a delete and the splits it covers: the published splits of the index (of `partition_id` when
        given) in the predicate's time range that split statistics cannot rule out (the cascade's split stage,
        in PostgreSQL: never a false negative), less those in `ruled_out`, which the caller's reading of their
        published artifacts proved hold no matching row (`examinable`, then
        `artifact_pruning.splits_ruled_out`). Raises the index's plan generation so no kept plan or cached result
        from before it is served again."""
        await self.lock_index(index_uid, exclusive=True)
        generation = (await self.session.execute(_BUMP_GENERATION, {"uid": index_uid})).scalar_one()
        delete = DeleteRow(delete_id=str(ULID()), index_uid=index_uid, partition_id=partition_id,
                           where_sql=where_sql, predicate=predicate_to_data(predicate), reason=reason,
                           requested_by=requested_by, cutoff_generation=int(generation), status="pending",
                           accepted_at=now)
        self.session.add(delete)
        found = await self._candidates(index_uid, partition_id, predicate, ranges_secs, window_duration_secs)
        splits = [] if found is None else found.splits
        covered = [s for s in splits if s.split_id not in ruled_out]
        self.session.add_all([DeleteSplitRow(delete_id=delete.delete_id, split_id=s.split_id, index_uid=index_uid,
                                             state="pending", rows_before=s.num_rows) for s in covered])
        if not covered:
            delete.status, delete.finished_at = "succeeded", now
        await self.session.flush()
        return Accepted(delete, len(covered), 0 if found is None else found.files - len(splits),
                        len(splits) - len(covered))

    async def candidates(self, index_uid: str, partition_id: str | None, predicate: Predicate,
                         ranges: TimeRanges, window: int) -> list[SplitMetadata]:
        """The published splits of the scope in the time range that split statistics cannot rule out."""
        found = await self._candidates(index_uid, partition_id, predicate, ranges, window)
        return [] if found is None else found.splits

    async def examinable(self, index_uid: str, partition_id: str | None, predicate: Predicate,
                         ranges: TimeRanges, window: int) -> list[ArtifactCandidate]:
        """The candidates with the artifacts of their published snapshots (None: none published yet), for the
        caller to read outside any transaction before accepting."""
        splits = await self.candidates(index_uid, partition_id, predicate, ranges, window)
        published = await IndexingRepository(self.session).published_artifacts([s.split_id for s in splits])
        return [ArtifactCandidate(s.split_id, len(s.row_groups), None if s.split_id not in published else [
            PublishedArtifact(a.artifact_type, a.column_name, a.uri, a.content_hash)
            for a in published[s.split_id]]) for s in splits]

    async def _candidates(self, index_uid: str, partition_id: str | None, predicate: Predicate,
                          ranges: TimeRanges, window: int) -> PublishedCandidates | None:
        if ranges.is_empty:
            return None
        lo, hi = ranges.lower, ranges.upper
        stats_columns = set(columns_of(predicate)) - {"partition_id"}
        return await SplitRepository(self.session).published_candidates(
            index_uid, partition_id, None if lo is None else lo - lo % window, hi,
            include_window_zero=ranges.includes_null, ranges=ranges, predicate=predicate,
            split_columns={"partition_id": "partition_id"}, stats_columns=stats_columns, limit=_NO_LIMIT)

    # --- what query plans apply -----------------------------------------------------------------------------

    async def in_force(self, split_ids: Sequence[str]) -> dict[str, list[Coverage]]:
        """The deletes in force on each of the splits (oldest first); splits without any are left out."""
        if not split_ids:
            return {}
        # Plain asyncpg on the session's connection (a plan sends its kept candidates: one array parameter).
        driver = await session_driver(self.session)
        found: dict[str, list[Coverage]] = {}
        for split_id, delete_id, data in await driver.fetch(_IN_FORCE, list(split_ids), list(IN_FORCE)):
            found.setdefault(split_id, []).append(Coverage(delete_id, predicate_from_data(data)))
        return found

    # --- rewrite jobs ---------------------------------------------------------------------------------------

    async def claimable(self, limit: int) -> list[RewriteClaim]:
        """Covered, published splits no live job claims, each with the oldest delete pending on it, oldest
        deletes first."""
        claimed = exists().where(and_(CompactionJobInputRow.split_id == SplitRow.split_id,
                                      CompactionJobInputRow.live))
        oldest = (select(DeleteSplitRow.split_id, func.min(DeleteSplitRow.delete_id).label("delete_id"))
                  .where(DeleteSplitRow.state == "pending").group_by(DeleteSplitRow.split_id).subquery())
        rows = await self.session.execute(
            select(oldest.c.delete_id, SplitRow).join(SplitRow, SplitRow.split_id == oldest.c.split_id)
            .where(SplitRow.state == SplitState.PUBLISHED, ~claimed)
            .order_by(oldest.c.delete_id, SplitRow.split_id).limit(limit))
        return [RewriteClaim(delete_id, split) for delete_id, split in rows.all()]

    async def settle_gone(self, now: datetime) -> int:
        """Coverage of splits that left the published set without a rewrite (retention dropped their window) and
        that no live job holds: nothing is left to rewrite there. Marked done (`merged`, no new split), and the
        deletes finished when it was their last; returns how many."""
        claimed = exists().where(and_(CompactionJobInputRow.split_id == DeleteSplitRow.split_id,
                                      CompactionJobInputRow.live))
        published = exists().where(and_(SplitRow.split_id == DeleteSplitRow.split_id,
                                        SplitRow.state == SplitState.PUBLISHED))
        where = (DeleteSplitRow.state == "pending", ~published, ~claimed)
        # Their deletes' rows first, in id order, as a cancel and a rewrite job's creation lock them: a cancel
        # locks the delete, then its coverage, and this would otherwise lock in the other order.
        await self.session.execute(
            select(DeleteRow.delete_id).where(DeleteRow.delete_id.in_(select(DeleteSplitRow.delete_id).where(*where)))
            .order_by(DeleteRow.delete_id).with_for_update())
        gone = (await self.session.execute(
            update(DeleteSplitRow).where(*where)
            .values(state="merged", finished_at=now).returning(DeleteSplitRow.delete_id))).scalars().all()
        await self._finish_if_done(gone, now)
        return len(gone)

    async def cancel_of_index(self, index_uid: str, now: datetime) -> None:
        """The index was deleted: its deletes in progress end as cancelled (its splits are all going)."""
        await self.session.execute(
            update(DeleteRow).where(DeleteRow.index_uid == index_uid, DeleteRow.status.in_(("pending", "running")))
            .values(status="cancelled", finished_at=now))

    async def lock_in_progress(self, delete_id: str) -> DeleteRow | None:
        """The delete, its row locked, if it is still in progress (pending or running). Whoever changes what a
        delete covers from outside a publish (a rewrite job created, a cancel) locks its row first, so the two
        never interleave: a rewrite job is never created for a cancelled delete."""
        delete = await self.session.get(DeleteRow, delete_id, with_for_update=True, populate_existing=True)
        return delete if delete is not None and delete.status in ("pending", "running") else None

    async def rewrite_jobs_of(self, delete_id: str) -> list[str]:
        """The jobs holding the delete's coverage (unassigned, running or excluded), in id order."""
        return sorted(set((await self.session.execute(
            select(DeleteSplitRow.job_id).where(DeleteSplitRow.delete_id == delete_id,
                                                DeleteSplitRow.state == "rewriting"))).scalars().all()))

    async def rewritten_count(self, delete_id: str) -> int:
        return int(await self.session.scalar(select(func.count()).select_from(DeleteSplitRow).where(
            DeleteSplitRow.delete_id == delete_id, DeleteSplitRow.state == "rewritten")) or 0)

    async def cancel(self, delete: DeleteRow, now: datetime) -> None:
        """The delete stops hiding rows: its coverage in force ends as cancelled, and the index's plan generation
        is raised so no kept plan or cached result that hid its rows is served again. The caller has cancelled
        its rewrite jobs and checked that none published."""
        await self.session.execute(
            update(DeleteSplitRow).where(DeleteSplitRow.delete_id == delete.delete_id,
                                         DeleteSplitRow.state.in_(IN_FORCE))
            .values(state="cancelled", job_id=None, finished_at=now))
        await self.session.execute(_BUMP_GENERATION, {"uid": delete.index_uid})
        delete.status, delete.finished_at = "cancelled", now
        await self.session.flush()

    async def mark_rewriting(self, delete_id: str, split_id: str, job_id: str, now: datetime) -> None:
        await self.session.execute(
            update(DeleteSplitRow).where(DeleteSplitRow.delete_id == delete_id, DeleteSplitRow.split_id == split_id)
            .values(state="rewriting", job_id=job_id))
        await self.session.execute(
            update(DeleteRow).where(DeleteRow.delete_id == delete_id, DeleteRow.status == "pending")
            .values(status="running", started_at=now))

    async def rewrite_of_job(self, job_id: str) -> Coverage | None:
        """The delete a rewrite job applies."""
        row = (await self.session.execute(
            select(DeleteRow.delete_id, DeleteRow.predicate)
            .join(DeleteSplitRow, DeleteSplitRow.delete_id == DeleteRow.delete_id)
            .where(DeleteSplitRow.job_id == job_id))).first()
        return None if row is None else Coverage(row[0], predicate_from_data(row[1]))

    async def release_rewrite(self, job_id: str) -> None:
        """The rewrite job ended without publishing (cancelled): its coverage is pending again."""
        await self.session.execute(
            update(DeleteSplitRow).where(DeleteSplitRow.job_id == job_id, DeleteSplitRow.state == "rewriting")
            .values(state="pending", job_id=None))

    async def release_rewrites(self, job_ids: Sequence[str]) -> None:
        """`release_rewrite` of several jobs in one statement (a merge holds none: a no-op kept for the rule)."""
        t = DeleteSplitRow.__table__.c
        await self.session.execute(
            update(DeleteSplitRow.__table__)
            .where(t.job_id == any_(cast(sorted(job_ids), ARRAY(String))), t.state == "rewriting")
            .values(state="pending", job_id=None))

    # --- publishing -----------------------------------------------------------------------------------------

    async def covered_splits(self, split_ids: Sequence[str]) -> set[str]:
        """Those of the splits a delete is in force on, in one statement (`covered_among` names the deletes)."""
        t = DeleteSplitRow.__table__.c
        return set((await self.session.execute(
            select(t.split_id).where(t.split_id == any_(cast(sorted(split_ids), ARRAY(String))),
                                     t.state.in_(IN_FORCE)))).scalars().all())

    async def covered_among(self, split_ids: Sequence[str], *, except_job: str | None = None) -> list[str]:
        """The delete ids in force on any of the splits (other than the one `except_job` applies)."""
        where = [DeleteSplitRow.split_id.in_(list(split_ids)), DeleteSplitRow.state.in_(IN_FORCE)]
        if except_job is not None:
            where.append(DeleteSplitRow.job_id.is_distinct_from(except_job))
        return sorted(set((await self.session.execute(select(DeleteSplitRow.delete_id).where(*where)))
                          .scalars().all()))

    async def publish_rewrite(self, job: CompactionJobRow, input_split: SplitRow,
                              outputs: Sequence[SplitMetadata], now: datetime) -> None:
        """In the publish's transaction: the job's coverage is done (its receipt row filled in); deletes
        accepted since the job was created pass on to the outputs, which hold only rows published before them."""
        output_ids = [o.split_id for o in outputs]
        removed = input_split.num_rows - sum(o.num_rows for o in outputs)
        rows = (await self.session.execute(
            update(DeleteSplitRow).where(DeleteSplitRow.job_id == job.job_id, DeleteSplitRow.state == "rewriting")
            .values(state="rewritten", rows_removed=removed, new_split_ids=output_ids, finished_at=now)
            .returning(DeleteSplitRow.delete_id))).scalars().all()
        later = await self.covered_among([input_split.split_id], except_job=job.job_id)
        await self.session.execute(
            update(DeleteSplitRow).where(DeleteSplitRow.split_id == input_split.split_id,
                                         DeleteSplitRow.state.in_(IN_FORCE))
            .values(state="merged", new_split_ids=output_ids, finished_at=now))
        self.session.add_all([
            DeleteSplitRow(delete_id=delete_id, split_id=output.split_id, index_uid=job.index_uid, state="pending",
                           rows_before=output.num_rows, inherited_from=input_split.split_id)
            for delete_id in later for output in outputs])
        await self.session.flush()
        await self._finish_if_done([*rows, *later], now)

    async def publish_unchanged(self, job: CompactionJobRow, split: SplitRow, now: datetime) -> None:
        """In the publish's transaction: the job's delete matched no row of the split, which stays published as
        it is. The job's coverage is done (`unchanged`: nothing removed, no new split); any other delete in force
        on the split (accepted since the job was created) stays there, pending its own rewrite."""
        rows = (await self.session.execute(
            update(DeleteSplitRow).where(DeleteSplitRow.job_id == job.job_id, DeleteSplitRow.state == "rewriting",
                                         DeleteSplitRow.split_id == split.split_id)
            .values(state="unchanged", rows_removed=0, new_split_ids=[], finished_at=now)
            .returning(DeleteSplitRow.delete_id))).scalars().all()
        await self.session.flush()
        await self._finish_if_done(rows, now)

    async def _finish_if_done(self, delete_ids: Sequence[str], now: datetime) -> None:
        for delete_id in set(delete_ids):
            left = await self.session.scalar(select(func.count()).select_from(DeleteSplitRow).where(
                DeleteSplitRow.delete_id == delete_id, DeleteSplitRow.state.in_(IN_FORCE)))
            if not left:
                await self.session.execute(
                    update(DeleteRow).where(DeleteRow.delete_id == delete_id,
                                            DeleteRow.status.in_(("pending", "running")))
                    .values(status="succeeded", finished_at=now))

    # --- reads ----------------------------------------------------------------------------------------------

    async def get(self, delete_id: str) -> DeleteRow | None:
        return await self.session.get(DeleteRow, delete_id)

    async def list_of_index(self, index_uid: str, partition_id: str | None, limit: int) -> Sequence[DeleteRow]:
        where = [DeleteRow.index_uid == index_uid]
        if partition_id is not None:
            where.append(DeleteRow.partition_id == partition_id)
        return (await self.session.execute(select(DeleteRow).where(*where)
                                           .order_by(DeleteRow.delete_id.desc()).limit(limit))).scalars().all()

    async def splits_of(self, delete_id: str) -> Sequence[DeleteSplitRow]:
        return (await self.session.execute(select(DeleteSplitRow).where(DeleteSplitRow.delete_id == delete_id)
                                           .order_by(DeleteSplitRow.split_id))).scalars().all()

    async def failed_jobs_of(self, delete_id: str) -> list[tuple[str, list[Any]]]:
        """The rewrite jobs of the delete that the queue excluded after too many failures, with their log."""
        rows = await self.session.execute(
            select(CompactionJobRow.job_id, CompactionJobRow.failure_log)
            .join(DeleteSplitRow, DeleteSplitRow.job_id == CompactionJobRow.job_id)
            .where(DeleteSplitRow.delete_id == delete_id, CompactionJobRow.status == "excluded"))
        return [(job_id, list(log or [])) for job_id, log in rows.all()]

    async def counts(self) -> DeleteCounts:
        by_status = dict((await self.session.execute(
            select(DeleteRow.status, func.count()).group_by(DeleteRow.status))).all())
        # Failed is what the status read derives: a delete still in progress with an excluded rewrite job.
        failed = await self.session.scalar(
            select(func.count(func.distinct(DeleteSplitRow.delete_id)))
            .join(CompactionJobRow, CompactionJobRow.job_id == DeleteSplitRow.job_id)
            .join(DeleteRow, DeleteRow.delete_id == DeleteSplitRow.delete_id)
            .where(CompactionJobRow.status == "excluded", DeleteRow.status.in_(("pending", "running"))))
        removed = await self.session.scalar(select(func.coalesce(func.sum(DeleteSplitRow.rows_removed), 0)))
        oldest = await self.session.scalar(select(func.min(DeleteRow.accepted_at))
                                           .where(DeleteRow.status.in_(("pending", "running"))))
        return DeleteCounts(int(by_status.get("pending", 0)), int(by_status.get("running", 0)),
                            int(failed or 0), int(by_status.get("cancelled", 0)), int(removed or 0), oldest)
