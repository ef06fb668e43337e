"""Running artifact builds: as Spark jobs, one file per Spark task, or a tiny one in a local process; the same
kernel (`strata_jobs.index_build.run_index_build`) either way."""

from __future__ import annotations

from dataclasses import dataclass, field

from strata_core.object_requests import ObjectRequests
from strata_jobs.index_build import (
    IndexBuildResult,
    IndexBuildSpec,
    result_from_json,
    result_to_json,
    run_index_build,
    spec_from_json,
    spec_to_json,
)
from strata_jobs.spark_tasks import TaskOutcome, run_one_task_each, run_task, run_tasks


@dataclass(frozen=True, slots=True)
class IndexBuildOutcome:
    job_id: str
    result: IndexBuildResult | None
    error: str | None
    # What the job cost the object store, measured in the worker that ran it.
    requests: ObjectRequests = field(default_factory=ObjectRequests)


def _build_json(spec_json: str) -> str:
    return result_to_json(run_index_build(spec_from_json(spec_json)))


def submit_index_builds(spark, specs: list[IndexBuildSpec], operation_tag: str) -> list[IndexBuildOutcome]:
    outcomes = run_one_task_each(spark, [(s.job_id, spec_to_json(s)) for s in specs], _build_json, operation_tag)
    return [_outcome(o) for o in outcomes]


def _outcome(outcome: TaskOutcome) -> IndexBuildOutcome:
    return IndexBuildOutcome(outcome.job_id, result_from_json(outcome.result_json) if outcome.result_json else None,
                             outcome.error, outcome.requests)


def run_build_locally(pool, spec) -> IndexBuildOutcome:
    """The same build (kernel and checks) in a local process of `pool` (`strata_frame.jobqueue.local_jobs`)
    instead of a Spark task: for tiny inputs, where a Spark job's fixed cost is most of the time."""
    return _outcome(pool.run(run_task, _build_json, spec.job_id, spec_to_json(spec)))


def run_builds_locally(pool, specs) -> list[IndexBuildOutcome]:
    """Several tiny builds in one call to a local process of `pool`, one after another (a worker's batch): one
    round trip to the process for all of them; each its own outcome, in order."""
    return [_outcome(o) for o in pool.run(run_tasks, _build_json, [(s.job_id, spec_to_json(s)) for s in specs])]
