"""The one scheduler behind every `POST /v1/<queue>/poll`: apply the worker's status updates (each fenced by its
token, all in one transaction, each publish in its own savepoint), revoke expired leases, let the queue do its
housekeeping (compaction plans new jobs, indexing cancels jobs of files gone), and hand out assignments. What
differs between queues is a `QueueSpec`: its table, its settings, what a success publishes, and how jobs are
chosen and described.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from opentelemetry import trace
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.domain.job_statuses import JobStatus
from strata_core.observability.context import log_context
from strata_frame.jobqueue.schemas import JobUpdate, PollFields, UpdateResult
from strata_metastore.conflicts import conflict_of, retrying_conflicts
from strata_metastore.lease_queue import JobFilter, LeaseQueue, PublishRefused, StaleToken
from strata_metastore.repositories import load_live_index

log = logging.getLogger("strata.scheduler")
tracer = trace.get_tracer("strata.scheduler")

U = TypeVar("U", bound=JobUpdate)
A = TypeVar("A")


class JobRepository(Protocol):
    """What the job routes use of a queue's repository: reads, and the operator's controls (its `queue`, the
    shared `LeaseQueue`, pauses and finds jobs; `cancel` and `retry` are the queue's own, since what a job holds
    differs)."""

    queue: LeaseQueue[Any]

    async def get(self, job_id: str) -> Any: ...

    async def cancel(self, job_id: str, now: datetime) -> Any: ...

    async def retry(self, job_id: str, now: datetime) -> Any: ...

    async def list_page(self, flt: Any, *, limit: int, after_job_id: str | None) -> Sequence[Any]: ...

    async def count_by_status(self) -> dict[Any, int]: ...


@dataclass(frozen=True, slots=True)
class QueueSpec(Generic[U, A]):
    name: str
    lease_secs: float
    max_failures: int
    queue_of: Callable[[AsyncSession], LeaseQueue[Any]]
    # A success: publish the job's result in the caller's transaction (the job is checked against its token
    # first); raise PublishRefused when the result is unusable. Returns what `after_publish` gets once committed.
    # Its last argument is what `prepare` made ready for the job, or None (then it does that work itself).
    publish: Callable[[AsyncSession, U, datetime, Any], Awaitable[object]]
    # Before assigning: the queue's own upkeep in the poll's transaction, given the worker's capacity.
    housekeeping: Callable[[AsyncSession, int, datetime], Awaitable[object]]
    # Locks and leases at most `capacity` jobs for the worker, in the queue's priority order.
    assign: Callable[[AsyncSession, str, int, datetime, timedelta], Awaitable[Sequence[Any]]]
    # What the worker receives for each leased job.
    describe: Callable[[AsyncSession, Sequence[Any]], Awaitable[list[A]]]
    after_publish: Callable[[object], None] | None = None
    # Optional: several successes published at once, one statement per kind for all of them, in the caller's
    # transaction and one savepoint; what it published by job id. It must write nothing of any job it leaves out
    # (a stale token, a result that fails a check, one the batch does not handle): those are applied one at a
    # time by `publish`, which refuses or publishes each as it would without a batch. Its last argument is what
    # `prepare` made ready, by job id (empty without `prepare`).
    publish_batch: Callable[[AsyncSession, Sequence[U], datetime, dict[str, object]],
                            Awaitable[dict[str, object]]] | None = None
    # Optional: the rows the poll's successes publish on (their splits), locked before any of them is published,
    # given the jobs their tokens still own: in one statement, sorted by split id, after the jobs and outside
    # every savepoint (a lock taken in a savepoint is let go when it rolls back). A publish that locked its splits
    # only when its turn came did so after the poll's earlier publishes had taken their index's rows (the plan
    # generation and totals the `splits` and `artifact_snapshots` triggers write), and a merge holding one of
    # those splits and waiting on that row for its outputs was a deadlock (docs/architecture.md, "Lock order").
    lock_splits: Callable[[AsyncSession, Sequence[Any]], Awaitable[object]] | None = None
    # Optional: what the poll's successes need before any is published and that takes none of the rows their
    # publishes lock (reading and checking what the workers wrote, writing a file), done for all of them at once
    # after `lock_splits`, given (job, update) of those whose token owns their job; by job id, what `publish` then
    # receives. Done in each publish's turn instead, the later ones' I/O ran while the earlier ones held their
    # index's rows (plan generation, totals), which an ingest's publish waits on.
    prepare: Callable[[AsyncSession, Sequence[tuple[Any, U]]], Awaitable[dict[str, object]]] | None = None

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.lease_secs)


async def apply_update(sessions: async_sessionmaker[AsyncSession], spec: QueueSpec[U, A], update: U,
                       now: datetime) -> UpdateResult:
    """One fenced worker write in its own transaction; a stale token changes nothing."""
    [result] = await apply_updates(sessions, spec, [update], now)
    return result


async def apply_updates(sessions: async_sessionmaker[AsyncSession], spec: QueueSpec[U, A], updates: Sequence[U],
                        now: datetime) -> list[UpdateResult]:
    """A poll's fenced worker writes in one transaction, one commit for all of them, each still all or nothing:
    a stale token changes nothing of its job (`LeaseQueue.fenced` refuses before any write), a publish runs in its
    own savepoint, so an unusable result is rolled back alone and recorded as a failed attempt while the others
    are applied. A transaction PostgreSQL aborts for a concurrent one is run again from the start."""
    if not updates:
        return []
    published: list[object] = []
    async with sessions() as session:
        async def attempt() -> list[UpdateResult]:
            published.clear()
            queue = spec.queue_of(session)
            # Every job of the poll locked at once, in job id order, before any savepoint; each update is still
            # fenced against its own job below.
            queue.forget_locks()
            try:
                jobs = await queue.lock_many([update.job_id for update in updates])
                owned = _owned_successes(jobs, updates)
                if owned and spec.lock_splits is not None:
                    await spec.lock_splits(session, [job for job, _ in owned])
                prepared = await _prepare(session, spec, owned, updates)
                batched = await _publish_batch(session, spec, updates, now, published, prepared)
                results: list[UpdateResult | None] = [batched.get(i) for i in range(len(updates))]
                # The rest one at a time, by index (a stable sort: a job's updates keep their order), so the
                # index-level rows their publishes' triggers lock are taken in index order too.
                for i in sorted(range(len(updates)), key=lambda i: _index_of(jobs, updates[i])):
                    if results[i] is None:
                        results[i] = await _apply_one(session, spec, queue, updates[i], now, published,
                                                      prepared.get(updates[i].job_id))
                await session.commit()
            finally:
                queue.forget_locks()
            return [result for result in results if result is not None]

        results = await retrying_conflicts(session, attempt)
    if spec.after_publish is not None:
        for merge in published:
            spec.after_publish(merge)
    return results


def _index_of(jobs: dict[str, Any], update: JobUpdate) -> str:
    job = jobs.get(update.job_id)
    return "" if job is None else job.index_uid


def _owned_successes(jobs: dict[str, Any], updates: Sequence[U]) -> list[tuple[Any, U]]:
    """The poll's successes whose token still owns their job (the others publish nothing), one per job, in job
    id order, as (job, update)."""
    owned = {update.job_id: (job, update) for update in updates
             if update.status == "success" and (job := jobs.get(update.job_id)) is not None
             and job.fencing_token == update.fencing_token and job.status is JobStatus.IN_PROGRESS}
    return [owned[job_id] for job_id in sorted(owned)]


async def _prepare(session: AsyncSession, spec: QueueSpec[U, A], owned: list[tuple[Any, U]],
                   updates: Sequence[U]) -> dict[str, object]:
    """`QueueSpec.prepare` for the owned successes, but a job reported twice in the poll: its updates apply one at
    a time, in their order, each doing its own work."""
    reported = Counter(update.job_id for update in updates)
    once = [(job, update) for job, update in owned if reported[update.job_id] == 1]
    if spec.prepare is None or not once:
        return {}
    return await spec.prepare(session, once)


async def _publish_batch(session: AsyncSession, spec: QueueSpec[U, A], updates: Sequence[U], now: datetime,
                         published: list[object], prepared: dict[str, object]) -> dict[int, UpdateResult]:
    """The poll's successes the queue publishes as one batch (`QueueSpec.publish_batch`), by their position
    among the updates. A job reported twice in the poll is left to the updates one at a time, in their order; so
    is the whole batch when a statement of it fails (its savepoint rolled back, nothing of it written), unless
    PostgreSQL aborted the transaction for a concurrent one, which runs the poll again."""
    if spec.publish_batch is None:
        return {}
    reported = Counter(update.job_id for update in updates)
    batch = [(i, u) for i, u in enumerate(updates) if u.status == "success" and reported[u.job_id] == 1]
    if not batch:
        return {}
    try:
        with tracer.start_as_current_span("publish_batch", attributes={"strata.queue": spec.name,
                                                                       "strata.batch": len(batch)}):
            async with session.begin_nested():
                done = await spec.publish_batch(session, [u for _, u in batch], now, prepared)
    except DBAPIError as exc:
        if conflict_of(exc) is not None:
            raise
        log.warning("%s batch publish of %d failed, publishing one at a time: %s", spec.name, len(batch), exc)
        return {}
    out = {}
    for i, update in batch:
        if update.job_id in done:
            published.append(done[update.job_id])
            out[i] = UpdateResult(job_id=update.job_id, accepted=True)
    return out


async def _apply_one(session: AsyncSession, spec: QueueSpec[U, A], queue: LeaseQueue[Any], update: U,
                     now: datetime, published: list[object], prepared: object = None) -> UpdateResult:
    try:
        if update.status == "in_progress":
            job = await queue.refresh(update.job_id, update.fencing_token, now, spec.lease, update.stage,
                                      update.progress, update.spark_operation_tag)
            return UpdateResult(job_id=update.job_id, accepted=True, lease_expires_at=job.lease_expires_at)
        if update.status == "released":
            await queue.release(update.job_id, update.fencing_token, now)
        elif update.status == "failure":
            await queue.fail(update.job_id, update.fencing_token, update.error or "worker reported a failure",
                             now, spec.max_failures)
        else:
            async with session.begin_nested():
                published.append(await _publish(spec, session, update, now, prepared))
        return UpdateResult(job_id=update.job_id, accepted=True)
    except StaleToken as stale:
        return UpdateResult(job_id=update.job_id, accepted=False, reason=str(stale))
    except PublishRefused as refused:
        reason = f"publish refused: {refused}"
        log.warning("%s job %s: %s", spec.name, update.job_id, reason)
    # The result is unusable (its savepoint rolled back): recorded as a failed attempt, still fenced.
    try:
        await queue.fail(update.job_id, update.fencing_token, reason, now, spec.max_failures)
    except StaleToken:
        pass
    return UpdateResult(job_id=update.job_id, accepted=False, reason=reason)


async def _publish(spec: QueueSpec[U, A], session: AsyncSession, update: U, now: datetime,
                   prepared: object) -> object:
    with log_context(queue=spec.name, job_id=update.job_id, fencing_token=update.fencing_token), \
            tracer.start_as_current_span("publish", attributes={"strata.queue": spec.name,
                                                                "strata.job_id": update.job_id,
                                                                "strata.fencing_token": update.fencing_token}):
        return await spec.publish(session, update, now, prepared)


async def poll(sessions: async_sessionmaker[AsyncSession], spec: QueueSpec[U, A], request: PollFields,
               updates: Sequence[U], clock: Callable[[], datetime]) -> tuple[list[A], list[UpdateResult]]:
    """The worker protocol's one round: (new assignments, the result of each update, in order)."""
    started = time.monotonic()
    now = clock()
    results = await apply_updates(sessions, spec, updates, now)
    reported = time.monotonic()
    async with sessions() as session:
        await spec.queue_of(session).expire_leases(clock(), spec.max_failures)
        await spec.housekeeping(session, request.capacity, clock())
        housekept = time.monotonic()
        # The lease starts when the job is handed out, not when the poll began: updates and housekeeping may
        # take seconds on a loaded machine, and a lease dated from before them would be partly spent already.
        jobs = await spec.assign(session, request.worker_id, request.capacity, clock(), spec.lease)
        assignments = await spec.describe(session, jobs)
        await session.commit()
    took = time.monotonic() - started
    if took > spec.lease_secs / 4:
        # A slow poll delays the next lease refresh of every job the worker runs: past a lease, they are lost.
        log.warning("%s poll of %s took %.2f s (updates %.2f s, expiry and housekeeping %.2f s, assignment "
                    "%.2f s) against a %.0f s lease", spec.name, request.worker_id, took, reported - started,
                    housekept - reported, time.monotonic() - housekept, spec.lease_secs)
    return assignments, results


async def list_jobs(jobs: JobRepository, flt: JobFilter, limit: int,
                    cursor: str | None) -> tuple[list[Any], str | None]:
    """One page of jobs in creation order, and the cursor of the next page (None on the last)."""
    rows = await jobs.list_page(flt, limit=limit + 1, after_job_id=cursor)
    page = list(rows[:limit])
    return page, page[-1].job_id if len(rows) > limit else None


# --- an operator's controls of one index's jobs: each its own unit of work, committed here --------------------


async def pause_index(session: AsyncSession, jobs: JobRepository, index_id: str, now: datetime, *,
                      cancel_running: bool) -> tuple[datetime, list[str]]:
    """Pause the index's queue (its first pause time kept) and, with `cancel_running`, cancel its running jobs;
    the time it is paused since and the jobs cancelled."""
    index = await load_live_index(session, index_id, for_update=True)
    paused_at = await jobs.queue.set_paused(index.index_uid, True, now)
    cancelled = []
    if cancel_running:
        # Jobs one at a time through the queue's own cancel (compaction releases the claims of each).
        for job in await jobs.queue.in_progress_of_index(index.index_uid):
            await jobs.cancel(job.job_id, now)
            cancelled.append(job.job_id)
    await session.commit()
    return paused_at, cancelled


async def resume_index(session: AsyncSession, jobs: JobRepository, index_id: str, now: datetime) -> None:
    index = await load_live_index(session, index_id, for_update=True)
    await jobs.queue.set_paused(index.index_uid, False, now)
    await session.commit()


async def retry_excluded(session: AsyncSession, jobs: JobRepository, index_id: str,
                         now: datetime) -> tuple[list[str], list[str]]:
    """Every excluded job of the index retried: (those back in the queue, those cancelled as their inputs
    changed)."""
    index = await load_live_index(session, index_id)
    retried, cancelled = [], []
    for job_id in await jobs.queue.excluded_of_index(index.index_uid):
        job = await jobs.retry(job_id, now)
        (retried if job.status is JobStatus.UNASSIGNED else cancelled).append(job_id)
    await session.commit()
    return retried, cancelled


async def act_on_job(session: AsyncSession, run: Callable[[AsyncSession, str, datetime], Awaitable[Any]],
                     job_id: str, now: datetime) -> Any:
    """An operator's action on one job (`JobAction.run`), committed when the job exists; None when it does not.
    A transition its status does not allow raises InvalidTransition, and nothing is committed."""
    job = await run(session, job_id, now)
    if job is not None:
        await session.commit()
    return job
