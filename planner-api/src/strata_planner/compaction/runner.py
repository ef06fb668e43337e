"""The compaction runner: a worker loop that speaks the poll protocol. It runs inside planner-api by default
(slots configurable, 0 = off) and standalone as `strata worker`.

Every loop iteration reports each running job (a lease refresh with its stage), every finished job (success with
its outputs, or failure with the reason) and the free capacity; it polls at least every half lease. When the
scheduler refuses a job's update (stale token, cancelled), the runner interrupts that job's Spark operation and
drops its result: the outputs it wrote stay unreferenced and the garbage collector removes them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from strata_jobs.merge import MergeResult
from strata_planner.compaction.schemas import Assignment, OutputSplit, PollResponse

log = logging.getLogger("strata.runner")
# Progress by stage: Spark reports nothing finer from inside a Python worker, so the fraction marks the stage.
STAGE_PROGRESS = {"merging": 0.1, "publishing": 0.9}


class Executor(Protocol):
    def run(self, assignment: Assignment) -> MergeResult: ...
    def interrupt(self, assignment: Assignment) -> None: ...


@dataclass
class RunningJob:
    assignment: Assignment
    task: asyncio.Task
    stage: str = "merging"
    started: float = field(default_factory=time.monotonic)


def output_splits(result: MergeResult) -> list[OutputSplit]:
    return [
        OutputSplit(split_id=s.split_id, uri=s.uri, num_rows=s.num_rows, size_bytes=s.size_bytes,
                    window_start=s.window_start, time_range_start=s.time_range_start,
                    time_range_end=s.time_range_end, row_groups=[rg.to_json() for rg in s.row_groups],
                    column_stats={name: st.to_json() for name, st in s.column_stats.items()})
        for s in result.outputs
    ]


class CompactionRunner:
    def __init__(self, client: httpx.AsyncClient, *, worker_id: str, slots: int, executor: Executor,
                 api_key: str, poll_interval_secs: float = 2.0, merge_delay_secs: float = 0.0) -> None:
        self.client = client
        self.worker_id = worker_id
        self.slots = slots
        self.executor = executor
        self.headers = {"Authorization": f"Bearer {api_key}"}
        self.poll_interval_secs = poll_interval_secs
        # Fault injection for tests: hold each job this long in the "merging" stage before Spark starts.
        self.merge_delay_secs = merge_delay_secs
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
        """Stop every running merge: cancel its task and interrupt its Spark operation. Its lease then expires
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

    async def step(self) -> PollResponse:
        """One poll: report, then start whatever was assigned."""
        updates, finished = self._updates()
        body = {"worker_id": self.worker_id, "capacity": max(0, self.slots - len(self.running) + len(finished)),
                "updates": updates}
        response = await self.client.post("/v1/compaction/poll", json=body, headers=self.headers, timeout=60)
        response.raise_for_status()
        poll = PollResponse.model_validate(response.json())
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
            task = asyncio.create_task(self._execute(assignment), name=f"merge-{assignment.job_id}")
            self.running[assignment.job_id] = RunningJob(assignment, task)
        return poll

    def _updates(self) -> tuple[list[dict], list[str]]:
        updates, finished = [], []
        for job_id, job in self.running.items():
            base = {"job_id": job_id, "fencing_token": job.assignment.fencing_token}
            if not job.task.done():
                updates.append({**base, "status": "in_progress", "stage": job.stage,
                                "progress": STAGE_PROGRESS.get(job.stage, 0.0),
                                "spark_operation_tag": job.assignment.spark_operation_tag})
                continue
            finished.append(job_id)
            if job.task.cancelled():
                continue
            error = job.task.exception()
            if error is not None:
                updates.append({**base, "status": "failure", "error": f"{type(error).__name__}: {error}"[:4000]})
            else:
                outputs = [o.model_dump(mode="json") for o in output_splits(job.task.result())]
                updates.append({**base, "status": "success", "stage": "publishing", "outputs": outputs})
        return updates, finished

    async def _execute(self, assignment: Assignment) -> MergeResult:
        if self.merge_delay_secs:
            await asyncio.sleep(self.merge_delay_secs)
        return await asyncio.to_thread(self.executor.run, assignment)

    def _interrupt(self, assignment: Assignment) -> None:
        try:
            self.executor.interrupt(assignment)
        except Exception:  # noqa: BLE001 - interrupting is best effort; the lease protects correctness
            log.exception("interrupting %s failed", assignment.spark_operation_tag)

    async def _wait(self, stop: asyncio.Event) -> None:
        """Sleep until the next poll is due: at most half a lease, sooner when a running job finishes."""
        timeout = min(self.poll_interval_secs, self.lease_secs / 2)
        tasks = [j.task for j in self.running.values() if not j.task.done()]
        waiters = [asyncio.create_task(stop.wait()), *tasks]
        done_already = any(j.task.done() for j in self.running.values())
        if done_already:
            return
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waiters[0].cancel()
