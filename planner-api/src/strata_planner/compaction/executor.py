"""How a runner executes one assigned merge: as a Spark job through Spark Connect, interruptible by its tag."""

from __future__ import annotations

from strata_jobs.merge import MergeInput, MergeResult, MergeSpec
from strata_jobs.spark_merge import submit_merges
from strata_planner.compaction.schemas import Assignment
from strata_shared.observability.tracing import traced
from strata_shared.spark.session import SparkSessionFactory


class MergeFailed(Exception):
    pass


def merge_spec(assignment: Assignment) -> MergeSpec:
    roots = sorted({r for i in assignment.inputs for r in (i.root_split_ids or [i.split_id])})
    return MergeSpec(
        job_id=assignment.job_id,
        fencing_token=assignment.fencing_token,
        inputs=[MergeInput(split_id=i.split_id, uri=i.uri) for i in assignment.inputs],
        sort_schema=assignment.sort_schema,
        timestamp_field=assignment.timestamp_field,
        timestamp_is_seconds=assignment.timestamp_is_seconds,
        output_uri_prefix=assignment.output_uri_prefix,
        target_split_num_rows=assignment.target_split_num_rows,
        target_split_size_bytes=assignment.target_split_size_bytes,
        parquet=assignment.parquet,
        index_uid=assignment.index_uid,
        source_id=assignment.source_id,
        partition_id=assignment.partition_id,
        doc_mapping_uid=assignment.doc_mapping_uid,
        window_start=assignment.window_start,
        window_duration_secs=assignment.window_duration_secs,
        num_merge_ops=max((i.num_merge_ops for i in assignment.inputs), default=0) + 1,
        generation=max((i.generation for i in assignment.inputs), default=0) + 1,
        root_split_ids=roots,
    )


class SparkMergeExecutor:
    def __init__(self, spark: SparkSessionFactory) -> None:
        self.spark = spark

    @traced("merge")
    def run(self, assignment: Assignment) -> MergeResult:
        """Blocking: submits the merge and waits for it (call from a worker thread)."""
        [outcome] = submit_merges(self.spark.session(), [merge_spec(assignment)], assignment.spark_operation_tag)
        if outcome.result is None:
            raise MergeFailed(outcome.error or "merge failed without a reason")
        return outcome.result

    def interrupt(self, assignment: Assignment) -> None:
        self.spark.session().interruptTag(assignment.spark_operation_tag)
