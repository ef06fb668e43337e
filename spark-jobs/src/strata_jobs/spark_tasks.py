"""Running a batch of independent jobs as one Spark job through Spark Connect: one job per Spark task, in a Python
worker, via mapInArrow. Specs go in and results come out as JSON strings, so the driver needs no Arrow schema for
them; a failure comes back as data (its message), never as a failed Spark job that would hide the others. Each
job's object-store requests are counted where it runs and come back with its outcome, failed or not.

PySpark is only driven from here (and its callers' `submit_*`): the kernels stay testable without Spark.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from strata_core.object_requests import ObjectRequests, metered

RESULT_SCHEMA = "job_id string, ok boolean, result string, error string, requests string"


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    job_id: str
    result_json: str | None
    error: str | None
    # What the job cost the object store, measured where it ran.
    requests: ObjectRequests = field(default_factory=ObjectRequests)


def run_task(run_json: Callable[[str], str], job_id: str, spec_json: str) -> TaskOutcome:
    """One job, wherever it runs (a Spark task, or a local process for a tiny job): its failure comes back as
    data, the same message on both paths."""
    with metered() as meter:
        try:
            result_json, error = run_json(spec_json), None
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller as data
            result_json, error = None, f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, ValueError | OSError):
                error += "\n" + traceback.format_exc(limit=5)
    return TaskOutcome(job_id, result_json, error, meter.snapshot())


def run_tasks(run_json: Callable[[str], str], jobs: list[tuple[str, str]]) -> list[TaskOutcome]:
    """Several jobs, one after another, in one call to a local process (a worker's batch of tiny jobs): one
    round trip to the process for all of them, each job's failure its own."""
    return [run_task(run_json, job_id, spec_json) for job_id, spec_json in jobs]


def _worker(run_json: Callable[[str], str]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for job_id, spec_json in zip(batch.column("job_id").to_pylist(), batch.column("spec").to_pylist(),
                                         strict=True):
                outcome = run_task(run_json, job_id, spec_json)
                yield pa.RecordBatch.from_pydict({"job_id": [job_id], "ok": [outcome.error is None],
                                                  "result": [outcome.result_json], "error": [outcome.error],
                                                  "requests": [json.dumps(outcome.requests.as_dict())]})
    return run_batches


def run_one_task_each(spark, specs: list[tuple[str, str]], run_json: Callable[[str], str],
                      operation_tag: str) -> list[TaskOutcome]:
    """Run `run_json(spec_json)` for each (job_id, spec_json) as one Spark job tagged `operation_tag`, so
    `interruptTag` cancels it."""
    frame = spark.createDataFrame(specs, "job_id string, spec string")
    # One job per task: repartition(n) can put two jobs on one task; a range partitioning by job id cannot.
    frame = frame.repartitionByRange(len(specs), "job_id").mapInArrow(_worker(run_json), RESULT_SCHEMA)
    spark.addTag(operation_tag)
    try:
        collected = frame.collect()
    finally:
        spark.removeTag(operation_tag)
    return [TaskOutcome(r["job_id"], r["result"] if r["ok"] else None, r["error"],
                        ObjectRequests.from_dict(json.loads(r["requests"] or "{}"))) for r in collected]
