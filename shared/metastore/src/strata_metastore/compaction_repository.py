"""All SQL of compaction jobs. Every worker write is conditional on its fencing token
(`WHERE job_id = :id AND fencing_token = :token AND status = 'in_progress'`): zero rows means a stale worker.

A job's claim on its inputs (`compaction_job_inputs.live`) is held while the job is unassigned, in progress or
excluded, and released when it succeeds or is cancelled; a partial unique index lets a split be claimed once. An
excluded merge holding a split a delete covers is cancelled by the rewrite planning (`supersede_excluded`): it could
never publish, and its claims would keep the delete from ever rewriting the split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import String, any_, cast, func, insert, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from ulid import ULID

from strata_core.domain.job_statuses import LIVE_STATUSES, JobStatus, check_transition
from strata_core.domain.merge_policy import MergeOperation
from strata_core.domain.scheduler_rules import COMPACTION_ASSIGNMENT_ORDER, InProgressLimits
from strata_core.domain.split import SplitState
from strata_metastore.compaction_models import CompactionJobInputRow, CompactionJobRow
from strata_metastore.delete_models import DeleteSplitRow
from strata_metastore.delete_repository import DeleteRepository, RewriteClaim
from strata_metastore.job_columns import new_job_values
from strata_metastore.lease_queue import JobFilter, LeaseQueue
from strata_metastore.models import SplitRow
from strata_metastore.window_repository import CompactionWindowRepository

NO_LIMITS = InProgressLimits()


@dataclass(frozen=True, slots=True)
class CompactionJobFilter(JobFilter):
    window_start_gte: int | None = None
    window_start_lt: int | None = None


REWRITE_KIND = "rewrite"


class CompactionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.queue = LeaseQueue(session, CompactionJobRow, "compaction_paused_at")

    # --- creation -------------------------------------------------------------------------------------------

    async def create_job(self, op: MergeOperation, now: datetime) -> str | None:
        """Insert a job claiming its inputs; None when another job claimed one of them first (nothing written)."""
        job_id = str(ULID())
        scope = op.scope
        try:
            async with self.session.begin_nested():
                self.session.add(CompactionJobRow(
                    job_id=job_id, index_uid=scope.index_uid, source_id=scope.source_id,
                    partition_id=scope.partition_id, doc_mapping_uid=scope.doc_mapping_uid,
                    sort_schema=scope.sort_schema, window_duration_secs=scope.window_duration_secs,
                    window_start=op.window_start, kind=str(op.kind), level=op.level, status=JobStatus.UNASSIGNED,
                    failures=0, failure_log=[], progress=0.0, input_split_ids=list(op.split_ids),
                    input_rows=op.num_rows, input_bytes=op.size_bytes,
                    output_split_ids=[], created_at=now, updated_at=now,
                ))
                await self.session.flush()
                # In split id order: each claim's foreign key takes a key-share lock on its split, and every
                # transaction locking several splits locks them in that order.
                self.session.add_all([CompactionJobInputRow(job_id=job_id, split_id=s, live=True)
                                      for s in sorted(op.split_ids)])
                await self.session.flush()
        except IntegrityError:
            return None
        return job_id

    async def create_jobs(self, ops: Sequence[MergeOperation], now: datetime) -> list[str] | None:
        """Insert many jobs and their claims in two statements and one savepoint; None (nothing written) when any
        claim collides with a live one, so the caller can fall back to create_job per operation."""
        if not ops:
            return []
        job_ids = [str(ULID()) for _ in ops]
        jobs, claims = [], []
        for job_id, op in zip(job_ids, ops, strict=True):
            scope = op.scope
            jobs.append({
                "job_id": job_id, "index_uid": scope.index_uid, "source_id": scope.source_id,
                "partition_id": scope.partition_id, "doc_mapping_uid": scope.doc_mapping_uid,
                "sort_schema": scope.sort_schema, "window_duration_secs": scope.window_duration_secs,
                "window_start": op.window_start, "kind": str(op.kind), "level": op.level,
                "input_split_ids": list(op.split_ids), "input_rows": op.num_rows, "input_bytes": op.size_bytes,
                "output_split_ids": [], "output_bytes": None, **new_job_values(now),
            })
            claims.extend({"job_id": job_id, "split_id": s, "live": True} for s in op.split_ids)
        # The claims' foreign keys lock their splits (key share) in the rows' order: split id order, as every
        # transaction locking several splits takes them, or a claim could wait on a split an indexing publish
        # holds while it holds one that publish waits for.
        claims.sort(key=lambda claim: claim["split_id"])
        try:
            async with self.session.begin_nested():
                await self.session.execute(insert(CompactionJobRow.__table__), jobs)
                await self.session.execute(insert(CompactionJobInputRow.__table__), claims)
        except IntegrityError:
            return None
        return job_ids

    async def create_rewrite_job(self, claim: RewriteClaim, now: datetime) -> str | None:
        """A job rewriting one covered split without the rows its oldest delete matches: a compaction job of
        kind `rewrite`, leased, fenced and published like a merge. None when a live job claimed the split first."""
        split = claim.split
        deletes = DeleteRepository(self.session)
        if await deletes.lock_in_progress(claim.delete_id) is None:
            return None  # cancelled since the claim was read
        job_id = str(ULID())
        try:
            async with self.session.begin_nested():
                self.session.add(CompactionJobRow(
                    job_id=job_id, index_uid=split.index_uid, source_id=split.source_id,
                    partition_id=split.partition_id, doc_mapping_uid=split.doc_mapping_uid,
                    sort_schema=split.sort_schema, window_duration_secs=split.window_duration_secs,
                    window_start=split.window_start, kind=REWRITE_KIND, level=0, status=JobStatus.UNASSIGNED,
                    failures=0, failure_log=[], progress=0.0, input_split_ids=[split.split_id],
                    input_rows=split.num_rows, input_bytes=split.size_bytes,
                    output_split_ids=[], created_at=now, updated_at=now,
                ))
                await self.session.flush()
                self.session.add(CompactionJobInputRow(job_id=job_id, split_id=split.split_id, live=True))
                await self.session.flush()
        except IntegrityError:
            return None
        await deletes.mark_rewriting(claim.delete_id, split.split_id, job_id, now)
        return job_id

    # --- queue ----------------------------------------------------------------------------------------------

    async def count_by_status(self) -> dict[JobStatus, int]:
        return await self.queue.count_by_status()

    async def assign(self, worker_id: str, capacity: int, now: datetime, lease: timedelta,
                     limits: InProgressLimits = NO_LIMITS) -> list[CompactionJobRow]:
        """Hand the highest-priority unassigned jobs to a worker (`COMPACTION_ASSIGNMENT_ORDER`), skipping paused
        indexes, within the caps on jobs in progress per tenant and per index."""
        return await self.queue.lease_within(COMPACTION_ASSIGNMENT_ORDER, worker_id, capacity, now, lease, limits)

    # --- operator actions -----------------------------------------------------------------------------------

    async def cancel(self, job_id: str, now: datetime, stage: str = "cancelled") -> CompactionJobRow | None:
        """Cancel a job (InvalidTransition if it already ended): its inputs are released and its window is
        looked at again by the next planner pass."""
        job = await self.queue.get(job_id, for_update=True)
        if job is None:
            return None
        self.queue.cancel(job, now, stage)
        await self.release(job.job_id)
        await CompactionWindowRepository(self.session).mark_changed(
            {(job.index_uid, job.window_duration_secs, job.window_start)})
        await self.session.flush()
        return job

    async def supersede_excluded(self, now: datetime) -> list[str]:
        """Cancel the excluded merges that claim a split a delete covers and waits to rewrite: such a merge was
        planned before the delete (covered splits are never planned), so its publish would be cancelled anyway
        (DL-4), but while it is excluded its claims keep the rewrite off the split, and the delete would wait for
        an operator forever. Cancelled as a publish would (`superseded_by_delete`), claims released, window planned
        again; a retry of it is refused from then on. Returns their ids."""
        m = CompactionJobRow
        covered = select(CompactionJobInputRow.job_id).join(
            DeleteSplitRow, DeleteSplitRow.split_id == CompactionJobInputRow.split_id).where(
            CompactionJobInputRow.live, DeleteSplitRow.state == "pending")
        jobs = (await self.session.execute(
            select(m).where(m.status == JobStatus.EXCLUDED, m.kind != REWRITE_KIND, m.job_id.in_(covered))
            .order_by(m.job_id).with_for_update(skip_locked=True))).scalars().all()
        for job in jobs:
            self.queue.cancel(job, now, stage="superseded_by_delete")
            await self.release(job.job_id)
        if jobs:
            await CompactionWindowRepository(self.session).mark_changed(
                {(j.index_uid, j.window_duration_secs, j.window_start) for j in jobs})
        await self.session.flush()
        return [job.job_id for job in jobs]

    async def retry(self, job_id: str, now: datetime) -> CompactionJobRow | None:
        """Retry an excluded job (InvalidTransition otherwise). Its claims were held while it was excluded, so
        while every input is still published it goes back to the queue with them; when an input changed (merged
        or dropped meanwhile) the job could never publish: it is cancelled instead, its claims released and its
        window planned again."""
        job = await self.queue.get(job_id, for_update=True)
        if job is None:
            return None
        check_transition(job.status, JobStatus.UNASSIGNED)
        published = await self.session.scalar(
            select(func.count()).select_from(SplitRow)
            .where(SplitRow.split_id.in_(job.input_split_ids), SplitRow.state == SplitState.PUBLISHED))
        if published == len(set(job.input_split_ids)):
            self.queue.retry(job, now)
        else:
            self.queue.cancel(job, now, stage="inputs_changed")
            await self.release(job.job_id)
            await CompactionWindowRepository(self.session).mark_changed(
                {(job.index_uid, job.window_duration_secs, job.window_start)})
        await self.session.flush()
        return job

    async def cancel_window_jobs(self, index_uid: str, window_duration_secs: int, window_start: int,
                                 now: datetime) -> list[str]:
        """Cancel the live jobs over one window (retention drops it) and release their claims; a worker's next
        write to one of them is refused, so no merge of the window publishes after it is dropped."""
        m = CompactionJobRow
        jobs = (await self.session.execute(
            select(m).where(m.index_uid == index_uid, m.window_duration_secs == window_duration_secs,
                            m.window_start == window_start, m.status.in_(LIVE_STATUSES))
            .order_by(m.job_id).with_for_update())).scalars().all()
        for job in jobs:
            self.queue.cancel(job, now, stage="window_dropped")
            await self.release(job.job_id)
        await self.session.flush()
        return [job.job_id for job in jobs]

    async def cancel_index_jobs(self, index_uid: str, now: datetime) -> int:
        """The index was deleted: its live jobs are cancelled and their claims released."""
        jobs = await self.queue.cancel_live_of_index(index_uid, now, stage="index_deleted")
        for job in jobs:
            await self.release(job.job_id)
        await DeleteRepository(self.session).cancel_of_index(index_uid, now)
        return len(jobs)

    # --- reads ----------------------------------------------------------------------------------------------

    async def get(self, job_id: str) -> CompactionJobRow | None:
        return await self.queue.get(job_id)

    async def list_page(self, flt: CompactionJobFilter, *, limit: int,
                        after_job_id: str | None) -> Sequence[CompactionJobRow]:
        m = CompactionJobRow
        where = []
        if flt.window_start_gte is not None:
            where.append(m.window_start >= flt.window_start_gte)
        if flt.window_start_lt is not None:
            where.append(m.window_start < flt.window_start_lt)
        return await self.queue.page(flt, where, limit=limit, after_job_id=after_job_id)

    # --- internals ------------------------------------------------------------------------------------------

    async def release(self, job_id: str) -> None:
        """The job's claims on its inputs (and a rewrite's on its delete) end: it succeeded or was cancelled."""
        await DeleteRepository(self.session).release_rewrite(job_id)
        await self.session.execute(
            update(CompactionJobInputRow).where(CompactionJobInputRow.job_id == job_id).values(live=False))

    async def release_many(self, job_ids: Sequence[str]) -> None:
        """`release` of several jobs, one statement per table for all of them (a poll's batch of merges)."""
        if not job_ids:
            return
        ids = cast(sorted(job_ids), ARRAY(String))
        await DeleteRepository(self.session).release_rewrites(job_ids)
        t = CompactionJobInputRow.__table__.c
        await self.session.execute(update(CompactionJobInputRow.__table__).where(t.job_id == any_(ids))
                                   .values(live=False))

