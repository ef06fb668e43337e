"""The one lease and fencing mechanism every job queue uses (compaction jobs, indexing jobs).

A job table mixes in `job_columns.LeasedJobColumns`; `LeaseQueue(model)` does the status bookkeeping on it: handing
jobs out with a lease and a fencing token drawn from one PostgreSQL sequence, fenced worker writes (`job_id`,
`fencing_token`, `in_progress`, else `StaleToken`), failures counted toward exclusion, lease expiry treated as
a failure, and a lease given back by a worker shutting down (`release`), which is not one. The transitions are
`domain.job_statuses`' table; the queue's order is `domain.scheduler_rules`', and what a job holds is its owner's
business. It lives in the metastore, with the SQL of every other aggregate, so the job tables' repositories
(`compaction_repository.py`, `indexing_repository.py`) build on it; the scheduler and the routes above it are
`strata_frame.jobqueue`.

The operator's controls are here too, once for every queue: pausing an index (`pause_column` of `indexes`: while
set, `waiting` skips the index's jobs, so no worker is handed one), the caps on jobs in progress per tenant and
per index (`lease_within`), and a retry of an excluded job (`retry`: back to the queue, failure count reset,
failure log kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from sqlalchemy import Select, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.job_statuses import LIVE_STATUSES, JobStatus, check_transition, status_after_failure
from strata_core.domain.scheduler_rules import InProgressLimits, SortKey, choose_within_limits
from strata_metastore.job_columns import LeasedJobColumns, fencing_token_seq
from strata_metastore.models import IndexRow


class StaleToken(Exception):
    """The job is no longer this worker's: reassigned (larger token), cancelled, or finished."""


class PublishRefused(Exception):
    """A success whose result cannot be published (an input gone, an output or artifact failing its checks): the
    scheduler records it as a failed attempt instead."""


J = TypeVar("J", bound=LeasedJobColumns)


@dataclass(frozen=True, slots=True)
class JobFilter:
    """What every queue's job listing can be filtered by; a queue's own filter adds its fields."""

    index_uid: str | None = None
    statuses: tuple[JobStatus, ...] = ()


def look_ahead(capacity: int) -> int:
    """How far down the queue a lease of `capacity` jobs looks when caps apply, past the head, so one busy
    tenant's backlog does not starve the others."""
    return capacity * 8 + 32


class LeaseQueue(Generic[J]):
    def __init__(self, session: AsyncSession, model: type[J], pause_column: str) -> None:
        self.session = session
        self.model = model
        # The `indexes` column that pauses this queue for an index (compaction_paused_at, indexing_paused_at).
        self.paused_at = getattr(IndexRow, pause_column)

    # --- pausing --------------------------------------------------------------------------------------------

    def _not_paused(self) -> Any:
        return self.model.index_uid.not_in(select(IndexRow.index_uid).where(self.paused_at.is_not(None)))

    async def set_paused(self, index_uid: str, paused: bool, now: datetime) -> datetime | None:
        """Pause (or resume) this queue for one index; pausing an index already paused keeps its first time."""
        value = func.coalesce(self.paused_at, now) if paused else None
        return await self.session.scalar(
            update(IndexRow).where(IndexRow.index_uid == index_uid).values({self.paused_at.key: value})
            .returning(self.paused_at))

    async def in_progress_of_index(self, index_uid: str) -> list[J]:
        """The index's running jobs, locked (a pause with --cancel-running cancels them)."""
        return list((await self.session.execute(
            select(self.model).where(self.model.index_uid == index_uid, self.model.status == JobStatus.IN_PROGRESS)
            .order_by(self.model.job_id).with_for_update())).scalars().all())

    async def excluded_of_index(self, index_uid: str) -> list[str]:
        """Ids of the index's excluded jobs (a bulk retry), oldest first."""
        return list((await self.session.execute(
            select(self.model.job_id).where(self.model.index_uid == index_uid,
                                            self.model.status == JobStatus.EXCLUDED)
            .order_by(self.model.job_id))).scalars().all())

    def retry(self, job: J, now: datetime) -> None:
        """An excluded job back in the queue: its failure count starts again, its failure log stays (the history
        of what went wrong), and its next lease draws a new fencing token as any assignment does."""
        check_transition(job.status, JobStatus.UNASSIGNED)
        job.status = JobStatus.UNASSIGNED
        job.failures = 0
        job.worker_id = None
        job.finished_at = None
        job.stage = "retried"
        job.progress = 0.0
        job.updated_at = now

    async def count_by_status(self) -> dict[JobStatus, int]:
        rows = await self.session.execute(select(self.model.status, func.count()).group_by(self.model.status))
        return {JobStatus(s): n for s, n in rows.all()}

    async def expire_leases(self, now: datetime, max_failures: int) -> list[J]:
        """Revoke every expired lease: a failure each (a crashed worker never reports one), then back to the
        queue or excluded at the threshold."""
        m = self.model
        rows = (await self.session.execute(
            select(m).where(m.status == JobStatus.IN_PROGRESS, m.lease_expires_at <= now)
            .with_for_update(skip_locked=True))).scalars().all()
        for job in rows:
            self.record_failure(job, f"lease expired (worker {job.worker_id} stopped reporting)", now, max_failures)
        await self.session.flush()
        return list(rows)

    def ordered(self, order: Sequence[SortKey]) -> list[Any]:
        """The ORDER BY terms of the queue's declared order (`domain.scheduler_rules`)."""
        keys = []
        for key in order:
            column = getattr(self.model, key.column)
            ordered = column.desc() if key.descending else column.asc()
            keys.append(ordered.nulls_first() if key.nulls_first else ordered.nulls_last())
        return keys

    async def waiting(self, order: Sequence[SortKey], limit: int, where: Sequence[Any] = (), *,
                      lock: bool = True) -> list[Any]:
        """(job_id, index_uid, partition_id) of unassigned jobs of indexes not paused, in the queue's declared
        order (`domain.scheduler_rules`), locked (rows other schedulers hold are skipped) unless only counted.
        Keys, not jobs: a look past the head reads a hundred rows a poll, and loading each as a job (arrays of
        input ids and all) was most of planner-api's CPU in a drain."""
        m = self.model
        stmt: Select = select(m.job_id, m.index_uid, m.partition_id).where(m.status == JobStatus.UNASSIGNED,
                                                                          self._not_paused(), *where)
        stmt = stmt.order_by(*self.ordered(order)).limit(limit)
        if lock:
            stmt = stmt.with_for_update(of=m, skip_locked=True)
        return list((await self.session.execute(stmt)).all())

    async def lease_within(self, order: Sequence[SortKey], worker_id: str, capacity: int, now: datetime,
                           lease: timedelta, limits: InProgressLimits) -> list[J]:
        """Lease up to `capacity` waiting jobs in `order`, within the caps on jobs in progress in total, per tenant
        and per index (`domain.scheduler_rules.choose_within_limits`)."""
        chosen = [key.job_id for key in await self._within(order, capacity, limits, lock=True)]
        if not chosen:
            return []
        # Locked by `_within` already (taking the locks again waits for nothing); loaded whole only now, the few
        # chosen.
        jobs = await self.lock_many(chosen)
        return await self.lease([jobs[job_id] for job_id in chosen], worker_id, now, lease)

    async def assignable(self, order: Sequence[SortKey], capacity: int, limits: InProgressLimits) -> int:
        """How many of `capacity` slots the waiting jobs could fill now. Planning counts these, not every waiting
        job: jobs of a paused index, or of a tenant at its cap, wait for nothing a worker can give, and counting
        them would stop new jobs being planned for everyone else."""
        return len(await self._within(order, capacity, limits, lock=False))

    async def _within(self, order: Sequence[SortKey], capacity: int, limits: InProgressLimits, *,
                      lock: bool) -> list[Any]:
        if capacity <= 0:
            return []
        m = self.model
        running = [(i, p) for i, p in (await self.session.execute(
            select(m.index_uid, m.partition_id).where(m.status == JobStatus.IN_PROGRESS))).all()]
        budget = capacity if limits.total is None else min(capacity, limits.total - len(running))
        if budget <= 0:
            return []
        capped = limits.per_tenant is not None or limits.per_index is not None
        # With caps, look past the head of the queue, so one busy tenant's backlog does not starve the others.
        candidates = await self.waiting(order, limit=look_ahead(budget) if capped else budget, lock=lock)
        return choose_within_limits(candidates, budget, limits, running, lambda j: (j.index_uid, j.partition_id))

    async def get(self, job_id: str, *, for_update: bool = False) -> J | None:
        return await self.session.get(self.model, job_id, with_for_update=for_update)

    async def page(self, flt: JobFilter, where: Sequence[Any] = (), *, limit: int,
                   after_job_id: str | None) -> Sequence[J]:
        """Jobs in creation order (job ids are ULIDs), keyset-paged after `after_job_id`; `where` holds the
        conditions of the queue's own filter fields."""
        m = self.model
        stmt = select(m).where(*where)
        if flt.index_uid is not None:
            stmt = stmt.where(m.index_uid == flt.index_uid)
        if flt.statuses:
            stmt = stmt.where(m.status.in_(flt.statuses))
        if after_job_id is not None:
            stmt = stmt.where(m.job_id > after_job_id)
        return (await self.session.execute(stmt.order_by(m.job_id).limit(limit))).scalars().all()

    async def lease(self, jobs: Sequence[J], worker_id: str, now: datetime, lease: timedelta) -> list[J]:
        """Hand these (locked, unassigned) jobs to a worker, each with a new lease and a larger token (all drawn in
        one statement: a worker leasing a batch of tiny jobs would otherwise pay a round trip per job)."""
        if not jobs:
            return []
        tokens = sorted((await self.session.execute(
            select(fencing_token_seq.next_value()).select_from(func.generate_series(1, len(jobs))))).scalars())
        for job, token in zip(jobs, tokens, strict=True):
            check_transition(job.status, JobStatus.IN_PROGRESS)
            job.fencing_token = token
            job.status = JobStatus.IN_PROGRESS
            job.worker_id = worker_id
            job.lease_expires_at = now + lease
            job.assigned_at = now
            job.first_assigned_at = job.first_assigned_at or now
            job.stage = "assigned"
            job.progress = 0.0
            job.updated_at = now
        await self.session.flush()
        return list(jobs)

    async def lock_many(self, job_ids: Sequence[str]) -> dict[str, J]:
        """These jobs (those that exist), locked in one statement in job id order (as every path locking several
        jobs locks them) and kept locked to the transaction's end: `fenced` then reads them from the session
        instead of a statement each. A poll's updates lock their jobs here first, outside any savepoint (a lock
        taken in a savepoint is let go when it rolls back)."""
        ids = sorted(set(job_ids))
        if not ids:
            return {}
        m = self.model
        rows = (await self.session.execute(
            select(m).where(m.job_id.in_(ids)).order_by(m.job_id).with_for_update()
            .execution_options(populate_existing=True))).scalars().all()
        self._locked().update(ids)
        return {job.job_id: job for job in rows}

    async def fenced_many(self, tokens: dict[str, int]) -> dict[str, J]:
        """Of these jobs (job id -> the token reporting on it), those the token still owns, locked (`lock_many`
        for any not locked yet); the others are left out, nothing written: what `fenced` would refuse."""
        await self.lock_many([job_id for job_id in tokens if job_id not in self._locked()])
        owned = {}
        for job_id, token in tokens.items():
            job = await self.get(job_id)
            if job is not None and job.fencing_token == token and job.status is JobStatus.IN_PROGRESS:
                owned[job_id] = job
        return owned

    def forget_locks(self) -> None:
        """The transaction ended (committed or rolled back): what `lock_many` locked is no longer held."""
        self._locked().clear()

    def _locked(self) -> set[str]:
        return self.session.info.setdefault(f"strata.locked.{self.model.__tablename__}", set())

    async def fenced(self, job_id: str, token: int) -> J:
        """The job, locked, if `token` still owns it; StaleToken otherwise."""
        if job_id in self._locked():
            # Locked by `lock_many` in this transaction: the session's copy (a plain read if it was expired).
            job = await self.get(job_id)
        else:
            job = await self.get(job_id, for_update=True)
        if job is None or job.fencing_token != token or job.status is not JobStatus.IN_PROGRESS:
            raise StaleToken(stale_reason(job, token))
        return job

    async def refresh(self, job_id: str, token: int, now: datetime, lease: timedelta, stage: str | None,
                      progress: float | None, operation_tag: str | None) -> J:
        job = await self.fenced(job_id, token)
        job.lease_expires_at = now + lease
        if stage is not None:
            job.stage = stage
        if progress is not None:
            job.progress = max(0.0, min(1.0, progress))
        if operation_tag is not None:
            job.spark_operation_tag = operation_tag
        job.updated_at = now
        # Written with the session's next flush (at the latest its commit): a poll's refreshes go as one batch.
        return job

    async def release(self, job_id: str, token: int, now: datetime) -> J:
        """The worker gives the job back unfinished (it is shutting down): back to the queue at once, no failure
        counted, unlike a lease left to expire. The next lease draws a new token, so whatever this attempt still
        reports is refused."""
        job = await self.fenced(job_id, token)
        check_transition(job.status, JobStatus.UNASSIGNED)
        job.status = JobStatus.UNASSIGNED
        job.worker_id = None
        job.stage = "released"
        job.progress = 0.0
        job.updated_at = now
        await self.session.flush()
        return job

    async def fail(self, job_id: str, token: int, reason: str, now: datetime, max_failures: int) -> J:
        job = await self.fenced(job_id, token)
        self.record_failure(job, reason, now, max_failures)
        await self.session.flush()
        return job

    def succeed(self, job: J, now: datetime, stage: str) -> None:
        check_transition(job.status, JobStatus.SUCCESS)
        job.status = JobStatus.SUCCESS
        job.stage = stage
        job.progress = 1.0
        job.finished_at = now
        job.updated_at = now

    async def cancel_live_of_index(self, index_uid: str, now: datetime, stage: str) -> list[J]:
        """Cancel every live job of one index incarnation (its index was deleted: the files are going, and so
        is the work on them); a worker's next write to one of them is refused."""
        jobs = (await self.session.execute(
            select(self.model).where(self.model.index_uid == index_uid, self.model.status.in_(LIVE_STATUSES))
            .with_for_update())).scalars().all()
        for job in jobs:
            self.cancel(job, now, stage)
        await self.session.flush()
        return list(jobs)

    def cancel(self, job: J, now: datetime, stage: str = "cancelled") -> None:
        check_transition(job.status, JobStatus.CANCELLED)
        job.status = JobStatus.CANCELLED
        job.finished_at = now
        job.updated_at = now
        job.stage = stage

    def record_failure(self, job: J, reason: str, now: datetime, max_failures: int) -> None:
        target = status_after_failure(job.failures + 1, max_failures)
        check_transition(job.status, target)
        job.failure_log = [*job.failure_log, {"at": now.isoformat(), "fencing_token": job.fencing_token,
                                              "worker_id": job.worker_id, "reason": reason[:2000]}]
        job.failures += 1
        job.last_error = reason[:2000]
        job.status = target
        job.worker_id = None
        job.stage = "excluded" if target is JobStatus.EXCLUDED else "waiting_retry"
        job.updated_at = now
        if target is JobStatus.EXCLUDED:
            job.finished_at = now


def stale_reason(job: LeasedJobColumns | None, token: int) -> str:
    if job is None:
        return "job does not exist"
    if job.status is not JobStatus.IN_PROGRESS:
        return f"job is {job.status}"
    return f"fencing token {token} is stale: the job now holds token {job.fencing_token}"
