"""A worker loop that speaks the scheduler's poll protocol, for any leased job queue (compaction, indexing).

Every iteration reports each running job (a lease refresh with its stage), every finished job (success with the
executor's outcome, or failure with the reason) and the free capacity; it polls at least every half lease. When
the scheduler refuses a job's update (stale token, cancelled), the runner interrupts that job's Spark operation and
drops its result: what it wrote stays unreferenced and the owner's garbage collection removes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from strata_shared.domain.index_uid import split_index_uid
from strata_shared.observability.context import log_context
from strata_shared.spark.errors import failure_reason

log = logging.getLogger("strata.runner")


class Executor(Protocol):
    def run(self, assignment: Any) -> Any: ...
    def interrupt(self, assignment: Any) -> None: ...


@dataclass
class RunningJob:
    assignment: Any
    task: asyncio.Task
    stage: str
    started: float = field(default_factory=time.monotonic)


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
                 start_delay_secs: float = 0.0) -> None:
        self.client = client
        self.protocol = protocol
        self.worker_id = worker_id
        self.slots = slots
        self.executor = executor
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.poll_interval_secs = poll_interval_secs
        # Fault injection for tests: hold each job this long in its running stage before Spark starts.
        self.start_delay_secs = start_delay_secs
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

    async def shutdown(self) -> None:
        """Stop every running job: cancel its task and interrupt its Spark operation. Its lease then expires
        and another runner takes the job."""
        jobs, self.running = list(self.running.values()), {}
        for job in jobs:
            job.task.cancel()
            await asyncio.to_thread(self._interrupt, job.assignment)
        for job in jobs:
            try:
                await job.task
            except BaseException:  # noqa: BLE001, S110 - cancelled or interrupted: the outcome is dropped
                pass

    async def step(self) -> Any:
        """One poll: report, then start whatever was assigned."""
        updates, finished = self._updates()
        body = {"worker_id": self.worker_id, "capacity": max(0, self.slots - len(self.running) + len(finished)),
                "updates": updates}
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
        for assignment in poll.assignments:
            task = asyncio.create_task(self._execute(assignment), name=f"job-{assignment.job_id}")
            self.running[assignment.job_id] = RunningJob(assignment, task, self.protocol.running_stage)
        return poll

    def _updates(self) -> tuple[list[dict], list[str]]:
        updates, finished = [], []
        for job_id, job in self.running.items():
            base = {"job_id": job_id, "fencing_token": job.assignment.fencing_token}
            if not job.task.done():
                updates.append({**base, "status": "in_progress", "stage": job.stage,
                                "progress": self.protocol.stage_progress.get(job.stage, 0.0),
                                "spark_operation_tag": job.assignment.spark_operation_tag})
                continue
            finished.append(job_id)
            if job.task.cancelled():
                continue
            error = job.task.exception()
            if error is not None:
                updates.append({**base, "status": "failure", "error": failure_reason(error)})
            else:
                updates.append({**base, "status": "success", "stage": "publishing",
                                **self.protocol.success_fields(job.task.result())})
        return updates, finished

    async def _execute(self, assignment: Any) -> Any:
        # The job's lines and spans, down to the Spark submission in its worker thread, say which job and attempt.
        with log_context(index=split_index_uid(assignment.index_uid)[0], job_id=assignment.job_id,
                         fencing_token=assignment.fencing_token):
            if self.start_delay_secs:
                await asyncio.sleep(self.start_delay_secs)
            return await asyncio.to_thread(self.executor.run, assignment)

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
