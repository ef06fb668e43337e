"""How a runner executes one assigned merge: as a Spark job through Spark Connect, interruptible by its tag, or,
when its inputs are tiny, in a local process with the same kernel and checks (`STRATA_COMPACTION_LOCAL_MAX_BYTES`)."""

from __future__ import annotations

from opentelemetry import trace

from strata_jobs.merge import MergeInput, MergeResult, MergeSpec
from strata_jobs.spark_merge import run_merge_locally, submit_merges
from strata_planner.compaction.lineage import lineage_of
from strata_planner.compaction.schemas import Assignment
from strata_shared.config import Settings
from strata_shared.jobqueue.local_jobs import LocalJobPool
from strata_shared.observability.tracing import traced
from strata_shared.spark.session import SparkSessionFactory
from strata_shared.web.object_store_metrics import count_job_requests


class MergeFailed(Exception):
    pass


def merge_spec(assignment: Assignment) -> MergeSpec:
    lineage = lineage_of(assignment.inputs, rewrite=assignment.delete_predicate is not None)
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
        num_merge_ops=lineage.num_merge_ops,
        generation=lineage.generation,
        root_split_ids=lineage.root_split_ids,
        delete_predicate=assignment.delete_predicate,
    )


class MergeExecutor:
    def __init__(self, spark: SparkSessionFactory, *, local: LocalJobPool | None = None,
                 local_max_bytes: int = 0) -> None:
        self.spark = spark
        self.local = local
        self.local_max_bytes = local_max_bytes

    def runs_locally(self, assignment: Assignment) -> bool:
        """Whether a merge's inputs are small enough that a Spark job's fixed cost would be most of its time."""
        return self.local is not None and sum(i.size_bytes for i in assignment.inputs) <= self.local_max_bytes

    @traced("merge")
    def run(self, assignment: Assignment) -> MergeResult:
        """Blocking: runs the merge and waits for it (call from a worker thread)."""
        spec = merge_spec(assignment)
        local = self.runs_locally(assignment)
        trace.get_current_span().set_attribute("strata.engine", "local" if local else "spark")
        if local:
            outcome = run_merge_locally(self.local, spec)
        else:
            [outcome] = submit_merges(self.spark.session(), [spec], assignment.spark_operation_tag)
        count_job_requests(outcome.requests)
        if outcome.result is None:
            raise MergeFailed(outcome.error or "merge failed without a reason")
        return outcome.result

    def close(self) -> None:
        if self.local is not None:
            self.local.close()

    def interrupt(self, assignment: Assignment) -> None:
        # A local merge is not interrupted: it is small (seconds at most), and its outputs, under the attempt's own
        # prefix, are never published once its token is stale (the garbage collector removes them).
        if not self.runs_locally(assignment):
            self.spark.session().interruptTag(assignment.spark_operation_tag)


def merge_executor(spark: SparkSessionFactory, settings: Settings) -> MergeExecutor:
    return MergeExecutor(spark, local=LocalJobPool.when_enabled(settings.compaction_local_max_bytes, settings),
                         local_max_bytes=settings.compaction_local_max_bytes)
