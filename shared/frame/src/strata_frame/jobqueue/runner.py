"""A worker loop that speaks the scheduler's poll protocol, for any leased job queue (compaction, indexing).

Every iteration reports each running job (a lease refresh with its stage), every finished job (success with the
executor's outcome, or failure with the reason) and the free capacity; it polls at least every half lease. When
the scheduler refuses a job's update (stale token, cancelled), the runner interrupts that job's Spark operation and
drops its result: what it wrote stays unreferenced and the owner's garbage collection removes it.

A finished job's update (success or failure) carries what it cost the object store, counted where it ran: the API
that owns the job adds it to its /metrics, so a standalone worker's jobs are counted as the embedded runner's are.

When it stops (SIGTERM, an API's shutdown), the runner gives its jobs back rather than letting their leases
expire, which would count a failure against each and keep it from every other worker for a lease: a job it holds
but has not started goes back to the queue at once (`released`), a job it is running gets `shutdown_timeout_secs`
to finish (its lease still refreshed, its result still reported), then is interrupted and released. A released
job is handed out again by the next poll with a new fencing token, so a late result of this attempt is refused.

Tiny jobs (those the executor runs in a local process) can have slots of their own, `local_slots` besides the
`slots` of the jobs that run on Spark, and run `local_batch` at a time in one call to a local process: a backlog of
small splits is then drained by a few rounds of several jobs each, every poll publishing a round's results and
leasing the next round while the other local processes still merge, rather than one poll per job with nothing
else running meanwhile. Jobs on Spark stay `slots` at once whatever the capacity asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from strata_core.domain.index_uid import split_index_uid
from strata_core.object_requests import ObjectRequests, metered
from strata_core.observability.context import log_context
from strata_frame.spark.errors import failure_reason

log = logging.getLogger("strata.runner")


class Executor(Protocol):
    def run(self, assignment: Any) -> Any: ...
    def interrupt(self, assignment: Any) -> None: ...


class BatchExecutor(Executor, Protocol):
    """An executor that also runs local jobs several at a time (`jobqueue.executor.JobExecutor`)."""

    def runs_locally(self, assignment: Any) -> bool: ...
    def runs_in_batches(self) -> bool: ...
    def run_batch(self, assignments: list[Any]) -> list[tuple[Any, ObjectRequests]]: ...


class GivenBack(Exception):
    """The job was released before its executor started (the runner is stopping)."""


@dataclass
class RunningJob:
    assignment: Any
    stage: str
    task: asyncio.Task = field(init=False)
    # Set under `lock`: by the worker thread when the executor starts, by the runner when it gives the job back;
    # whichever comes first decides, so a job given back never starts and a started one is never given back early.
    executing: bool = False
    given_back: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    # What the job cost the object store, set when its executor returns or raises.
    requests: ObjectRequests = field(default_factory=ObjectRequests)

    def start(self) -> None:
        with self.lock:
            if self.given_back:
                raise GivenBack(self.assignment.job_id)
            self.executing = True

    def give_back(self, *, even_if_executing: bool) -> bool:
        """Whether the job is now to be released: always when `even_if_executing`, else only if it never
        started."""
        with self.lock:
            if self.executing and not even_if_executing:
                return False
            self.given_back = True
            return True


@dataclass(frozen=True)
class PollProtocol:
    """What differs between queues: where to poll, how to read the answer, and how a result is reported."""

    poll_path: str
    parse_response: Callable[[Any], Any]
    success_fields: Callable[[Any], dict[str, Any]]
    running_stage: str
    # Progress by stage: Spark reports nothing finer from inside a Python worker, so the fraction marks the stage.
    stage_progress: dict[str, float]


class PollingRunner:
    def __init__(self, client: httpx.AsyncClient, protocol: PollProtocol, *, worker_id: str, slots: int,
                 executor: Executor, api_key: str, poll_interval_secs: float = 2.0,
                 start_delay_secs: float = 0.0, report_delay_secs: float = 0.0,
                 shutdown_timeout_secs: float = 10.0, local_slots: int = 0, local_batch: int = 1) -> None:
        self.client = client
        self.protocol = protocol
        self.worker_id = worker_id
        self.slots = slots
        self.executor = executor
        batches = getattr(executor, "runs_in_batches", None)
        # Slots for local jobs besides `slots`, and how many of them one call to a local process runs.
        self.local_slots = local_slots if batches is not None and batches() else 0
        self.local_batch = max(1, local_batch)
        # Jobs that do not run locally hold one of `slots` while they run (capacity counts the local slots too).
        self._spark_slots = asyncio.Semaphore(max(1, slots))
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.poll_interval_secs = poll_interval_secs
        # Fault injection for tests: hold each job this long in its running stage before Spark starts.
        self.start_delay_secs = start_delay_secs
        # Fault injection for tests: hold each result this long, its lease refreshed, before reporting it.
        self.report_delay_secs = report_delay_secs
        # How long running jobs get to finish once the runner stops, before they are released.
        self.shutdown_timeout_secs = shutdown_timeout_secs
        self.stopping = False
        self.running: dict[str, RunningJob] = {}
        self.lease_secs = 15.0
        self.completed = 0

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.step()
            except httpx.HTTPError as exc:
                log.warning("poll failed: %s", exc)
            except Exception:  # noqa: BLE001 - the loop must survive anything one iteration hits
                log.exception("runner iteration failed")
            await self._wait(stop)
        await self.shutdown()

    async def shutdown(self, timeout_secs: float | None = None) -> None:
        """Stop taking jobs and give back those held: unstarted ones at once, running ones once they finish or
        `timeout_secs` (default `shutdown_timeout_secs`) pass, then interrupted. A poll that fails here leaves
        the leases to expire, as a crash would."""
        self.stopping = True
        deadline = time.monotonic() + (self.shutdown_timeout_secs if timeout_secs is None else timeout_secs)
        for job in self.running.values():
            if job.give_back(even_if_executing=False):
                job.task.cancel()
        while any(not j.given_back for j in self.running.values()) and time.monotonic() < deadline:
            if not await self._step_while_stopping():
                break
            await self._wait_for_running(deadline)
        # A job that finished meanwhile is reported by the last poll below; only those still running are released.
        late = [j for j in self.running.values() if not j.task.done() and j.give_back(even_if_executing=True)]
        for job in late:
            log.info("job %s did not finish within the shutdown timeout: released", job.assignment.job_id)
            job.task.cancel()
            await asyncio.to_thread(self._interrupt, job.assignment)
        if self.running:
            await self._step_while_stopping()
        jobs, self.running = list(self.running.values()), {}
        for job in jobs:
            try:
                await job.task
            except BaseException:  # noqa: BLE001, S110 - cancelled, interrupted or given back: already reported
                pass

    async def _step_while_stopping(self) -> bool:
        try:
            await self.step()
            return True
        except Exception as exc:  # noqa: BLE001 - unreachable API: the leases expire instead
            log.warning("reporting at shutdown failed, leases left to expire: %s", exc)
            return False

    async def _wait_for_running(self, deadline: float) -> None:
        tasks = [j.task for j in self.running.values() if not j.task.done()]
        if tasks and not any(j.task.done() for j in self.running.values()):
            timeout = max(0.0, min(self.poll_interval_secs, self.lease_secs / 2, deadline - time.monotonic()))
            await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)

    async def step(self) -> Any:
        """One poll: report, then start whatever was assigned."""
        updates, finished = self._updates()
        capacity = 0 if self.stopping else max(0, self.slots + self.local_slots - len(self.running) + len(finished))
        body = {"worker_id": self.worker_id, "capacity": capacity, "updates": updates}
        response = await self.client.post(self.protocol.poll_path, json=body, headers=self.headers, timeout=60)
        response.raise_for_status()
        poll = self.protocol.parse_response(response.json())
        self.lease_secs = poll.lease_secs
        for job_id in finished:
            self.running.pop(job_id, None)
            self.completed += 1
        for result in poll.updates:
            if not result.accepted:
                log.warning("job %s update refused: %s", result.job_id, result.reason)
                job = self.running.pop(result.job_id, None)
                if job is not None:
                    job.task.cancel()
                    await asyncio.to_thread(self._interrupt, job.assignment)
        batched = [a for a in poll.assignments if self._batched(a)]
        in_batches = {a.job_id for a in batched}
        for assignment in poll.assignments:
            if assignment.job_id not in in_batches:
                job = RunningJob(assignment, self.protocol.running_stage)
                job.task = asyncio.create_task(self._execute(job), name=f"job-{assignment.job_id}")
                self.running[assignment.job_id] = job
        for first in range(0, len(batched), self.local_batch):
            jobs = [RunningJob(a, self.protocol.running_stage) for a in batched[first:first + self.local_batch]]
            batch = asyncio.create_task(self._execute_batch(jobs), name=f"batch-{jobs[0].assignment.job_id}")
            for job in jobs:
                job.task = asyncio.create_task(self._result_of(batch, job), name=f"job-{job.assignment.job_id}")
                self.running[job.assignment.job_id] = job
        return poll

    def _batched(self, assignment: Any) -> bool:
        return self.local_slots > 0 and self.local_batch > 1 and self.executor.runs_locally(assignment)

    def _updates(self) -> tuple[list[dict], list[str]]:
        updates, finished = [], []
        for job_id, job in self.running.items():
            base = {"job_id": job_id, "fencing_token": job.assignment.fencing_token}
            if job.given_back:
                finished.append(job_id)
                updates.append({**base, "status": "released"})
                continue
            if not job.task.done():
                updates.append({**base, "status": "in_progress", "stage": job.stage,
                                "progress": self.protocol.stage_progress.get(job.stage, 0.0),
                                "spark_operation_tag": job.assignment.spark_operation_tag})
                continue
            finished.append(job_id)
            if job.task.cancelled():
                continue
            error = job.task.exception()
            base["object_requests"] = job.requests.as_dict()
            if error is not None:
                updates.append({**base, "status": "failure", "error": failure_reason(error)})
            else:
                updates.append({**base, "status": "success", "stage": "publishing",
                                **self.protocol.success_fields(job.task.result())})
        return updates, finished

    async def _execute(self, job: RunningJob) -> Any:
        assignment = job.assignment
        # The job's lines and spans, down to the Spark submission in its worker thread, say which job and attempt.
        with log_context(index=split_index_uid(assignment.index_uid)[0], job_id=assignment.job_id,
                         fencing_token=assignment.fencing_token):
            if self.start_delay_secs:
                await asyncio.sleep(self.start_delay_secs)
            # With local slots the capacity asked for exceeds `slots`: a job on Spark waits for one of them.
            on_spark = self.local_slots and not self.executor.runs_locally(assignment)
            async with self._spark_slots if on_spark else contextlib.nullcontext():
                result = await asyncio.to_thread(self._run, job)
            if self.report_delay_secs:
                await asyncio.sleep(self.report_delay_secs)
            return result

    async def _execute_batch(self, jobs: list[RunningJob]) -> dict[str, tuple[Any, ObjectRequests]]:
        """Local jobs in one call to a local process: each job's (result or failure, requests) by its id, for
        those not given back before the batch started."""
        if self.start_delay_secs:
            await asyncio.sleep(self.start_delay_secs)
        outcomes = await asyncio.to_thread(self._run_batch, jobs)
        if self.report_delay_secs:
            await asyncio.sleep(self.report_delay_secs)
        return outcomes

    def _run_batch(self, jobs: list[RunningJob]) -> dict[str, tuple[Any, ObjectRequests]]:
        started = []
        for job in jobs:
            try:
                job.start()
                started.append(job)
            except GivenBack:
                continue
        if not started:
            return {}
        outcomes = self.executor.run_batch([job.assignment for job in started])
        for job, (_, requests) in zip(started, outcomes, strict=True):
            job.requests = requests
        return {job.assignment.job_id: outcome for job, outcome in zip(started, outcomes, strict=True)}

    async def _result_of(self, batch: asyncio.Task, job: RunningJob) -> Any:
        """One job's end within its batch: cancelling the job (given back, refused) leaves the others running."""
        outcomes = await asyncio.shield(batch)
        if job.assignment.job_id not in outcomes:
            raise GivenBack(job.assignment.job_id)
        result, _ = outcomes[job.assignment.job_id]
        if isinstance(result, BaseException):
            raise result
        return result

    def _run(self, job: RunningJob) -> Any:
        job.start()
        with metered() as meter:
            try:
                return self.executor.run(job.assignment)
            finally:
                job.requests = meter.snapshot()

    def _interrupt(self, assignment: Any) -> None:
        try:
            self.executor.interrupt(assignment)
        except Exception:  # noqa: BLE001 - interrupting is best effort; the lease protects correctness
            log.exception("interrupting %s failed", assignment.spark_operation_tag)

    async def _wait(self, stop: asyncio.Event) -> None:
        """Sleep until the next poll is due: at most half a lease, sooner when a running job finishes."""
        if any(j.task.done() for j in self.running.values()):
            return
        timeout = min(self.poll_interval_secs, self.lease_secs / 2)
        tasks = [j.task for j in self.running.values()]
        waiters = [asyncio.create_task(stop.wait()), *tasks]
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waiters[0].cancel()
