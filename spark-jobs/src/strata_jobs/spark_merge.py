"""Running merges as Spark jobs: one merge per Spark task (`strata_jobs.merge.run_merge`, pure pyarrow)."""

from __future__ import annotations

from dataclasses import dataclass

from strata_jobs.merge import (
    MergeResult,
    MergeSpec,
    result_from_json,
    result_to_json,
    run_merge,
    spec_from_json,
    spec_to_json,
)
from strata_jobs.spark_tasks import run_one_task_each


@dataclass(frozen=True, slots=True)
class SparkMergeOutcome:
    job_id: str
    result: MergeResult | None
    error: str | None


def _merge_json(spec_json: str) -> str:
    return result_to_json(run_merge(spec_from_json(spec_json)))


def submit_merges(spark, specs: list[MergeSpec], operation_tag: str) -> list[SparkMergeOutcome]:
    outcomes = run_one_task_each(spark, [(s.job_id, spec_to_json(s)) for s in specs], _merge_json, operation_tag)
    return [SparkMergeOutcome(o.job_id, result_from_json(o.result_json) if o.result_json else None, o.error)
            for o in outcomes]
