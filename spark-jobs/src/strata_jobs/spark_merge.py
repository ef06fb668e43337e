"""Running merges as Spark jobs through Spark Connect: one merge per Spark task, in a Python worker, via
mapInArrow. The merge itself is `strata_jobs.merge.run_merge` (pure pyarrow); this module only ships specs in and
results out. Results are JSON strings so the driver side needs no Arrow schema for split metadata.

PySpark is imported here and nowhere else in strata_jobs: the kernel stays testable without Spark.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from strata_jobs.merge import (
    MergeResult,
    MergeSpec,
    result_from_json,
    result_to_json,
    run_merge,
    spec_from_json,
    spec_to_json,
)

RESULT_SCHEMA = "job_id string, ok boolean, result string, error string"


@dataclass(frozen=True, slots=True)
class SparkMergeOutcome:
    job_id: str
    result: MergeResult | None
    error: str | None


def merge_in_worker(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Runs in the Spark Python worker: each input row is one merge spec; each output row its result."""
    for batch in batches:
        for job_id, spec_json in zip(batch.column("job_id").to_pylist(), batch.column("spec").to_pylist(),
                                     strict=True):
            try:
                result_json, error = result_to_json(run_merge(spec_from_json(spec_json))), None
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the driver as data
                result_json = None
                error = f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, ValueError):
                    error += "\n" + traceback.format_exc(limit=5)
            yield pa.RecordBatch.from_pydict({"job_id": [job_id], "ok": [error is None], "result": [result_json],
                                              "error": [error]})


def submit_merges(spark, specs: list[MergeSpec], operation_tag: str) -> list[SparkMergeOutcome]:
    """Run the merges as one Spark job (one task each) tagged `operation_tag`, so `interruptTag` cancels it."""
    rows = [(spec.job_id, spec_to_json(spec)) for spec in specs]
    frame = spark.createDataFrame(rows, "job_id string, spec string")
    # One merge per task: repartition(n) can put two merges on one task; a range partitioning by job id cannot.
    frame = frame.repartitionByRange(len(rows), "job_id").mapInArrow(merge_in_worker, RESULT_SCHEMA)
    spark.addTag(operation_tag)
    try:
        collected = frame.collect()
    finally:
        spark.removeTag(operation_tag)
    return [SparkMergeOutcome(r["job_id"], result_from_json(r["result"]) if r["ok"] else None, r["error"])
            for r in collected]
