"""Running artifact builds as Spark jobs: one file per Spark task (`strata_jobs.index_build.run_index_build`)."""

from __future__ import annotations

from dataclasses import dataclass

from strata_jobs.index_build import (
    IndexBuildResult,
    IndexBuildSpec,
    result_from_json,
    result_to_json,
    run_index_build,
    spec_from_json,
    spec_to_json,
)
from strata_jobs.spark_tasks import run_one_task_each


@dataclass(frozen=True, slots=True)
class SparkIndexOutcome:
    job_id: str
    result: IndexBuildResult | None
    error: str | None


def _build_json(spec_json: str) -> str:
    return result_to_json(run_index_build(spec_from_json(spec_json)))


def submit_index_builds(spark, specs: list[IndexBuildSpec], operation_tag: str) -> list[SparkIndexOutcome]:
    outcomes = run_one_task_each(spark, [(s.job_id, spec_to_json(s)) for s in specs], _build_json, operation_tag)
    return [SparkIndexOutcome(o.job_id, result_from_json(o.result_json) if o.result_json else None, o.error)
            for o in outcomes]
