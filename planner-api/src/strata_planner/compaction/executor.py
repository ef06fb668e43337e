"""How a runner executes one assigned merge: the assignment as the kernel's spec (`merge_spec`), run by the job
queue's executor (`strata_frame.jobqueue.executor`) as a Spark job through Spark Connect, interruptible by its tag,
or, when its inputs are tiny, in a local process with the same kernel and checks
(`STRATA_COMPACTION_LOCAL_MAX_BYTES`)."""

from __future__ import annotations

from strata_core.config import Settings
from strata_frame.jobqueue.executor import JobExecutor, JobKind
from strata_frame.jobqueue.local_jobs import LocalJobPool
from strata_frame.spark.session import SparkSessionFactory
from strata_jobs.merge import MergeInput, MergeResult, MergeSpec
from strata_jobs.spark_merge import run_merge_locally, run_merges_locally, submit_merges
from strata_planner.compaction.lineage import lineage_of
from strata_planner.compaction.schemas import Assignment


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


MERGE: JobKind[Assignment, MergeSpec, MergeResult] = JobKind(
    span="merge", noun="merge", failed=MergeFailed, input_bytes=lambda a: sum(i.size_bytes for i in a.inputs),
    run_locally=run_merge_locally, submit=submit_merges, run_locally_batch=run_merges_locally)


class MergeExecutor(JobExecutor[Assignment, MergeSpec, MergeResult]):
    def __init__(self, spark: SparkSessionFactory, *, local: LocalJobPool | None = None,
                 local_max_bytes: int = 0) -> None:
        super().__init__(MERGE, merge_spec, spark, local=local, local_max_bytes=local_max_bytes)


def merge_executor(spark: SparkSessionFactory, settings: Settings) -> MergeExecutor:
    return MergeExecutor(spark, local=LocalJobPool.when_enabled(settings.compaction_local_max_bytes, settings),
                         local_max_bytes=settings.compaction_local_max_bytes)
