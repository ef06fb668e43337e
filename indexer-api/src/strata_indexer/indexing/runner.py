"""The indexing runner: the shared polling worker loop speaking `/v1/indexing/poll`, executing each assigned
file's build with the job queue's executor (`strata_frame.jobqueue.executor`) as a Spark job through Spark
Connect, or, for a tiny file, in a local process with the same kernel (`STRATA_INDEXING_LOCAL_MAX_BYTES`). It runs
inside indexer-api (slots configurable, 0 = off)."""

from __future__ import annotations

import functools

import httpx

from strata_core.config import Settings
from strata_core.observability.tracing import record_phases
from strata_frame.jobqueue.executor import JobExecutor, JobKind
from strata_frame.jobqueue.local_jobs import LocalJobPool
from strata_frame.jobqueue.runner import PollingRunner, PollProtocol
from strata_frame.spark.session import SparkSessionFactory
from strata_indexer.indexing.schemas import IndexingAssignment, IndexingPollResponse
from strata_jobs.index_build import IndexBuildResult, IndexBuildSpec
from strata_jobs.spark_index import run_build_locally, run_builds_locally, submit_index_builds


class IndexBuildFailed(Exception):
    pass


def index_build_spec(assignment: IndexingAssignment, *, upload_attempts: int, upload_backoff_secs: float,
                     fault_upload_failures: int = 0) -> IndexBuildSpec:
    return IndexBuildSpec(
        job_id=assignment.job_id, fencing_token=assignment.fencing_token, split_id=assignment.split_id,
        uri=assignment.uri, artifact_prefix=assignment.artifact_prefix,
        config=assignment.artifacts.model_dump(mode="json"), field_types=assignment.field_types,
        zstd_level=assignment.zstd_level, upload_attempts=upload_attempts,
        upload_backoff_secs=upload_backoff_secs, fault_upload_failures=fault_upload_failures)


def _record_phases(result: IndexBuildResult) -> None:
    record_phases([("build_artifacts", result.build_secs), ("upload_artifacts", result.upload_secs)],
                  {"strata.artifacts": len(result.artifacts), "strata.upload_retries": result.upload_retries})


INDEX_BUILD: JobKind[IndexingAssignment, IndexBuildSpec, IndexBuildResult] = JobKind(
    span="artifact_build", noun="artifact build", failed=IndexBuildFailed, input_bytes=lambda a: a.size_bytes,
    run_locally=run_build_locally, submit=submit_index_builds, record=_record_phases,
    run_locally_batch=run_builds_locally)


class IndexBuildExecutor(JobExecutor[IndexingAssignment, IndexBuildSpec, IndexBuildResult]):
    def __init__(self, spark: SparkSessionFactory, *, upload_attempts: int, upload_backoff_secs: float,
                 fault_upload_failures: int = 0, local: LocalJobPool | None = None,
                 local_max_bytes: int = 0) -> None:
        spec = functools.partial(index_build_spec, upload_attempts=upload_attempts,
                                 upload_backoff_secs=upload_backoff_secs, fault_upload_failures=fault_upload_failures)
        super().__init__(INDEX_BUILD, spec, spark, local=local, local_max_bytes=local_max_bytes)


def index_build_executor(spark: SparkSessionFactory, settings: Settings) -> IndexBuildExecutor:
    return IndexBuildExecutor(spark, upload_attempts=settings.artifact_upload_attempts,
                              upload_backoff_secs=settings.artifact_upload_backoff_secs,
                              fault_upload_failures=settings.fault_artifact_upload_failures,
                              local=LocalJobPool.when_enabled(settings.indexing_local_max_bytes, settings),
                              local_max_bytes=settings.indexing_local_max_bytes)


INDEXING_PROTOCOL = PollProtocol(
    poll_path="/v1/indexing/poll",
    parse_response=IndexingPollResponse.model_validate,
    success_fields=lambda result: {"artifacts": [a.to_json() for a in result.artifacts],
                                   "skipped": result.skipped},
    running_stage="building",
    stage_progress={"building": 0.1, "publishing": 0.9},
)


def indexing_runner(client: httpx.AsyncClient, executor: IndexBuildExecutor, *, worker_id: str, slots: int,
                    api_key: str, poll_interval_secs: float, shutdown_timeout_secs: float = 10.0,
                    local_slots: int = 0, local_batch: int = 1) -> PollingRunner:
    return PollingRunner(client, INDEXING_PROTOCOL, worker_id=worker_id, slots=slots, executor=executor,
                         api_key=api_key, poll_interval_secs=poll_interval_secs,
                         shutdown_timeout_secs=shutdown_timeout_secs, local_slots=local_slots,
                         local_batch=local_batch)
