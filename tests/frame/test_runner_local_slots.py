"""The shared worker loop's local slots, against a scripted scheduler (no API, no database): tiny jobs run several
per call to the executor's batch (a local process), the capacity asked for counts the local slots, a job that fails
in a batch fails alone, and jobs on Spark stay at most `slots` at once whatever the capacity."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

import httpx

from strata_core.object_requests import ObjectRequests
from strata_frame.jobqueue.runner import PollingRunner, PollProtocol


@dataclass(frozen=True)
class Job:
    job_id: str
    fencing_token: int
    local: bool
    spark_operation_tag: str = "tag"
    index_uid: str = "idx:01"


@dataclass
class Answer:
    assignments: list[Job]
    updates: list[Any]
    lease_secs: float = 15.0


class Scheduler:
    """Hands out the jobs it is given, once each, within the capacity asked for; records every poll."""

    def __init__(self, jobs: list[Job]) -> None:
        self.waiting = list(jobs)
        self.polls: list[dict] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        self.polls.append(body)
        handed, self.waiting = self.waiting[:body["capacity"]], self.waiting[body["capacity"]:]
        return httpx.Response(200, json={"assignments": [j.__dict__ for j in handed], "updates": []})


class Executor:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.on_spark = 0
        self.most_on_spark = 0
        self.lock = threading.Lock()
        self.release = threading.Event()

    def runs_in_batches(self) -> bool:
        return True

    def runs_locally(self, assignment: Job) -> bool:
        return assignment.local

    def run_batch(self, assignments: list[Job]) -> list[tuple[Any, ObjectRequests]]:
        self.batches.append([a.job_id for a in assignments])
        return [(ValueError("bad input") if a.job_id == "bad" else f"merged {a.job_id}", ObjectRequests(gets=1))
                for a in assignments]

    def run(self, assignment: Job) -> str:
        with self.lock:
            self.on_spark += 1
            self.most_on_spark = max(self.most_on_spark, self.on_spark)
        self.release.wait(10)
        with self.lock:
            self.on_spark -= 1
        return f"merged {assignment.job_id}"

    def interrupt(self, assignment: Job) -> None:
        pass


PROTOCOL = PollProtocol(
    poll_path="/poll",
    parse_response=lambda body: Answer([Job(**j) for j in body["assignments"]], body["updates"]),
    success_fields=lambda result: {"result": result}, running_stage="running", stage_progress={})


async def _drain(runner: PollingRunner, scheduler: Scheduler) -> list[dict]:
    """Steps until every job was handed out and reported; every update sent."""
    updates = []
    for _ in range(100):
        await runner.step()
        updates += [u for u in scheduler.polls[-1]["updates"] if u["status"] != "in_progress"]
        if not scheduler.waiting and not runner.running:
            return updates
        await asyncio.wait([j.task for j in runner.running.values()], timeout=5,
                           return_when=asyncio.FIRST_COMPLETED)
    raise AssertionError("not drained")


async def test_local_jobs_run_in_batches_and_a_failing_one_fails_alone():
    scheduler = Scheduler([Job(f"j{n}", n, local=True) for n in range(5)] + [Job("bad", 9, local=True)])
    executor = Executor()
    client = httpx.AsyncClient(transport=httpx.MockTransport(scheduler.handle), base_url="http://scheduler")
    runner = PollingRunner(client, PROTOCOL, worker_id="w", slots=1, executor=executor, api_key="k",
                           local_slots=4, local_batch=2)
    updates = await _drain(runner, scheduler)
    assert scheduler.polls[0]["capacity"] == 5  # one slot on Spark and four local ones
    assert all(len(batch) <= 2 for batch in executor.batches) and max(map(len, executor.batches)) == 2
    assert sorted(j for batch in executor.batches for j in batch) == sorted(["bad", *(f"j{n}" for n in range(5))])
    by_job = {u["job_id"]: u for u in updates}
    assert by_job["bad"]["status"] == "failure" and "bad input" in by_job["bad"]["error"]
    assert all(by_job[f"j{n}"]["status"] == "success" and by_job[f"j{n}"]["result"] == f"merged j{n}"
               for n in range(5))
    assert all(u["object_requests"]["gets"] == 1 for u in updates)  # each job's own requests
    await client.aclose()


async def test_jobs_on_spark_stay_within_the_slots_whatever_the_capacity():
    scheduler = Scheduler([Job(f"big{n}", n, local=False) for n in range(3)])
    executor = Executor()
    client = httpx.AsyncClient(transport=httpx.MockTransport(scheduler.handle), base_url="http://scheduler")
    runner = PollingRunner(client, PROTOCOL, worker_id="w", slots=1, executor=executor, api_key="k",
                           local_slots=4, local_batch=2)
    await runner.step()
    assert len(runner.running) == 3  # leased (and their leases refreshed) but waiting for the one Spark slot
    await asyncio.sleep(0.3)
    executor.release.set()
    updates = await _drain(runner, scheduler)
    assert executor.most_on_spark == 1 and not executor.batches
    assert {u["job_id"] for u in updates} | {u["job_id"] for p in scheduler.polls for u in p["updates"]} >= {
        "big0", "big1", "big2"}
    await client.aclose()
