"""Tiny merges and artifact builds run in a local process instead of a Spark job: the pool's failure modes (an
exception comes back, a dead child is a clear error and is replaced), the routing by input size (at the limit
local, one byte over Spark, 0 = always Spark), and the same kernel and checks as on Spark: MC-1..MC-4 hold on a
local merge's outputs and a type conflict (MC-4) fails with the message a Spark task reports. No Spark needed: a
merge that would go to Spark here fails the test."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from strata_core.domain.index_config import ParquetConfig
from strata_core.domain.sort_schema import SortSchema
from strata_frame.jobqueue.local_jobs import LocalJobFailed, LocalJobPool
from strata_jobs.merge import MergeInput
from strata_jobs.spark_merge import _merge_json, run_merge_locally
from strata_jobs.spark_tasks import run_task
from strata_planner.compaction.executor import MergeExecutor, MergeFailed
from strata_planner.compaction.schemas import AssignedInput, Assignment
from tests.jobs.test_merge import (
    METRICS,
    WINDOW,
    assert_sorted,
    make_spec,
    metrics_rows,
    output_tables,
    rows_of,
    sorted_table,
    write_split,
)

SORT = "metric,host,ts@v1"


def _double(x: int) -> int:
    return 2 * x


def _refuse(message: str) -> None:
    raise ValueError(message)


def _die() -> None:
    os._exit(3)


def _niceness() -> int:
    return os.nice(0)


def _signalled_then_answers(signals: list[int]) -> int:
    for number in signals:
        os.kill(os.getpid(), number)
    return os.getpid()


@pytest.fixture
def pool():
    local = LocalJobPool(1, niceness=5)
    yield local
    local.close()


def test_pool_runs_a_function_and_raises_its_exception_here(pool):
    assert pool.run(_double, 21) == 42
    with pytest.raises(ValueError, match="no such column"):
        pool.run(_refuse, "no such column")


def test_children_run_below_the_api_priority(pool):
    assert pool.run(_niceness) == os.nice(0) + 5


def test_a_child_that_dies_is_a_clear_error_and_the_next_job_gets_a_new_one(pool):
    with pytest.raises(LocalJobFailed, match="local job process died"):
        pool.run(_die)
    assert pool.run(_double, 2) == 4


def test_a_child_outlives_a_sigterm_or_ctrl_c_sent_to_the_api_process_group(pool):
    # The API drains on them and lets the running job finish; the child must still be there to finish it.
    child = pool.run(_signalled_then_answers, [signal.SIGTERM, signal.SIGINT])
    assert pool.run(_signalled_then_answers, []) == child


def test_a_closed_pool_refuses_work():
    local = LocalJobPool(1)
    assert local.run(_double, 1) == 2
    local.close()
    with pytest.raises(LocalJobFailed, match="closed"):
        local.run(_double, 1)


def _inputs(tmp_path: Path, count: int, *, conflict: bool = False) -> list[MergeInput]:
    rng = np.random.default_rng(5)
    schema = SortSchema.parse(SORT)
    inputs = []
    for i in range(count):
        table = sorted_table(metrics_rows(rng, 50), METRICS, schema)
        if conflict and i == count - 1:
            table = table.set_column(table.schema.get_field_index("value"), "value",
                                     pa.array([str(v) for v in table.column("value").to_pylist()]))
        inputs.append(write_split(tmp_path / "in", f"s{i:02d}", table))
    return inputs


def test_mc1_to_mc4_hold_on_a_local_merge(tmp_path, pool):
    inputs = _inputs(tmp_path, 6)
    outcome = run_merge_locally(pool, make_spec(inputs, tmp_path / "out", SORT))
    assert outcome.error is None
    names = METRICS.names
    expected = sorted(rows_of([pa.parquet.read_table(i.uri.removeprefix("file://")) for i in inputs], names))
    got = rows_of(output_tables(outcome.result), names)
    assert sorted(got) == expected  # MC-1, MC-2
    assert_sorted(got, SortSchema.parse(SORT), names)  # MC-3
    assert outcome.result.input_rows == outcome.result.output_rows == 300


def test_mc4_type_conflict_fails_locally_with_the_message_a_spark_task_reports(tmp_path, pool):
    spec = make_spec(_inputs(tmp_path, 3, conflict=True), tmp_path / "out", SORT)
    local = run_merge_locally(pool, spec)
    from strata_jobs.merge import spec_to_json

    in_process = run_task(_merge_json, spec.job_id, spec_to_json(spec))  # what a Spark task runs
    assert local.result is None
    assert local.error == in_process.error
    assert local.error.startswith("MergeTypeConflict: column 'value'")
    assert not list((tmp_path / "out").rglob("*.parquet"))


class NoSpark:
    def session(self):
        raise AssertionError("this merge should have run locally")


def _assignment(inputs: list[MergeInput], tmp_path: Path, sizes: list[int]) -> Assignment:
    return Assignment(
        job_id="01JOB", fencing_token=9, lease_expires_at=datetime.now(UTC), lease_secs=15, index_uid="idx:01",
        source_id="src", partition_id="tenant-a", doc_mapping_uid="dm1", sort_schema=SORT, window_start=WINDOW,
        window_duration_secs=900, timestamp_field="ts", timestamp_is_seconds=True, target_split_num_rows=1_000_000,
        target_split_size_bytes=1 << 30, parquet=ParquetConfig(), output_uri_prefix=f"file://{tmp_path}/out",
        spark_operation_tag="strata-merge-01JOB-9",
        inputs=[AssignedInput(split_id=i.split_id, uri=i.uri, num_rows=50, size_bytes=size, num_merge_ops=0,
                              generation=0, root_split_ids=[]) for i, size in zip(inputs, sizes, strict=True)])


def test_routing_by_input_bytes(tmp_path, pool):
    inputs = _inputs(tmp_path, 2)
    executor = MergeExecutor(NoSpark(), local=pool, local_max_bytes=1000)
    at_limit = _assignment(inputs, tmp_path, [400, 600])
    assert executor.runs_locally(at_limit)
    assert executor.run(at_limit).output_rows == 100
    assert not executor.runs_locally(_assignment(inputs, tmp_path, [400, 601]))
    assert not MergeExecutor(NoSpark()).runs_locally(at_limit)  # no pool (limit 0): always Spark


def test_a_failed_local_merge_is_a_failed_job(tmp_path, pool):
    inputs = _inputs(tmp_path, 2, conflict=True)
    executor = MergeExecutor(NoSpark(), local=pool, local_max_bytes=1 << 20)
    with pytest.raises(MergeFailed, match="MergeTypeConflict"):
        executor.run(_assignment(inputs, tmp_path, [100, 100]))


def test_a_tiny_artifact_build_runs_locally_and_builds_what_a_spark_task_builds(tmp_path, pool):
    """The same artifacts (types, columns, content hashes but full text's) from the local process as from the
    kernel a Spark task runs."""
    from strata_core.domain.index_config import ArtifactConfig
    from strata_indexer.indexing.runner import IndexBuildExecutor
    from strata_indexer.indexing.schemas import IndexingAssignment
    from strata_jobs.index_build import run_index_build
    from strata_services.sample_data import metrics_rows
    from tests.indexer.indexing_helpers import ARTIFACTS, EXPECTED, FIELDS

    table = metrics_rows(300, start=WINDOW, span_secs=900, seed=3, messages=True)
    path = tmp_path / "split.parquet"
    pa.parquet.write_table(table, path)
    size = path.stat().st_size

    def assignment(prefix: str) -> IndexingAssignment:
        return IndexingAssignment(
            job_id="01BUILD", fencing_token=4, lease_expires_at=datetime.now(UTC), lease_secs=15, split_id="01SPLIT",
            index_uid="idx:01", partition_id="default", uri=path.as_uri(), size_bytes=size,
            artifact_prefix=(tmp_path / prefix).as_uri(), artifacts=ArtifactConfig.model_validate(ARTIFACTS),
            field_types={f["name"]: f["type"] for f in FIELDS}, zstd_level=3, spark_operation_tag="t")

    executor = IndexBuildExecutor(NoSpark(), upload_attempts=2, upload_backoff_secs=0.01, local=pool,
                                  local_max_bytes=size)
    assert executor.runs_locally(assignment("local"))
    local = executor.run(assignment("local"))
    reference = run_index_build(executor.spec(assignment("reference")))
    assert {(a.artifact_type, a.column) for a in local.artifacts} == EXPECTED
    # Tantivy's segment files carry ids and times of their own: the full-text index differs byte for byte.
    def hashes(result) -> list[tuple]:
        return sorted((a.artifact_type, a.column, a.content_hash) for a in result.artifacts
                      if a.artifact_type != "full_text")
    assert hashes(local) == hashes(reference)
    assert not IndexBuildExecutor(NoSpark(), upload_attempts=2, upload_backoff_secs=0.01, local=pool,
                                  local_max_bytes=size - 1).runs_locally(assignment("x"))


def test_a_merge_counts_its_requests_in_its_worker_into_the_runners_meter(tmp_path, pool):
    from strata_core.object_requests import metered

    inputs = _inputs(tmp_path, 2)
    executor = MergeExecutor(NoSpark(), local=pool, local_max_bytes=1 << 20)
    # The runner's meter around the executor (`PollingRunner._run`): what the worker process counted lands there.
    with metered() as meter:
        result = executor.run(_assignment(inputs, tmp_path, [100, 100]))
    counted = meter.snapshot()
    # Each input: opened (a HEAD after the size's HEAD), its footer and its column chunks read.
    assert counted.heads >= 2 * len(inputs) and counted.gets >= 2 * len(inputs)
    # Each output: a multipart upload (3 PUTs) and a move (copy PUT, DELETE, parent marker PUT).
    assert counted.puts == 5 * len(result.outputs) and counted.deletes == len(result.outputs)
    assert counted.bytes_written == sum(output.size_bytes for output in result.outputs)
    assert counted.bytes_read > 0


def test_an_artifact_build_counts_its_uploads(tmp_path, pool):
    from strata_core.domain.index_config import ArtifactConfig
    from strata_core.object_requests import metered
    from strata_indexer.indexing.runner import IndexBuildExecutor
    from strata_indexer.indexing.schemas import IndexingAssignment
    from strata_services.sample_data import metrics_rows
    from tests.indexer.indexing_helpers import ARTIFACTS, FIELDS

    path = tmp_path / "split.parquet"
    pa.parquet.write_table(metrics_rows(300, start=WINDOW, span_secs=900, seed=3, messages=True), path)
    executor = IndexBuildExecutor(NoSpark(), upload_attempts=2, upload_backoff_secs=0.01, local=pool,
                                  local_max_bytes=1 << 30)
    with metered() as meter:
        result = executor.run(IndexingAssignment(
            job_id="01BUILD", fencing_token=4, lease_expires_at=datetime.now(UTC), lease_secs=15,
            split_id="01SPLIT", index_uid="idx:01", partition_id="default", uri=path.as_uri(),
            size_bytes=path.stat().st_size, artifact_prefix=(tmp_path / "artifacts").as_uri(),
            artifacts=ArtifactConfig.model_validate(ARTIFACTS), field_types={f["name"]: f["type"] for f in FIELDS},
            zstd_level=3, spark_operation_tag="t"))
    counted = meter.snapshot()
    assert counted.puts == 5 * len(result.artifacts)
    assert counted.bytes_written == sum(artifact.size_bytes for artifact in result.artifacts)
    assert counted.heads >= 1 and counted.bytes_read > 0


def test_a_batch_of_local_merges_runs_in_one_call_each_job_its_own_outcome(tmp_path, pool):
    """A worker's batch (`JobExecutor.run_batch`): one call to the local process for all of them; a job that fails
    (MC-4, a type conflict) fails alone, the others keep their exact rows (MC-1) and their own requests."""
    good = [_inputs(tmp_path / f"g{n}", 3) for n in range(2)]
    bad = _inputs(tmp_path / "bad", 2, conflict=True)
    executor = MergeExecutor(NoSpark(), local=pool, local_max_bytes=1 << 20)
    assert executor.runs_in_batches()
    assignments = [_assignment(inputs, tmp_path / f"out{n}", [100] * len(inputs)).model_copy(
        update={"job_id": f"01JOB{n}"}) for n, inputs in enumerate([good[0], bad, good[1]])]
    outcomes = executor.run_batch(assignments)
    assert [type(result) for result, _ in outcomes] == [type(outcomes[0][0]), MergeFailed, type(outcomes[0][0])]
    assert "MergeTypeConflict" in str(outcomes[1][0])
    for (result, requests), inputs in ((outcomes[0], good[0]), (outcomes[2], good[1])):
        assert result.input_rows == result.output_rows == 50 * len(inputs)
        names = METRICS.names
        expected = sorted(rows_of([pa.parquet.read_table(i.uri.removeprefix("file://")) for i in inputs], names))
        assert sorted(rows_of(output_tables(result), names)) == expected
        assert requests.puts == 5 * len(result.outputs)
    assert not MergeExecutor(NoSpark()).runs_in_batches()  # no pool: nothing runs locally


def test_a_batch_of_local_artifact_builds_builds_each_file_as_one_build_does(tmp_path, pool):
    from strata_core.domain.index_config import ArtifactConfig
    from strata_indexer.indexing.runner import IndexBuildExecutor
    from strata_indexer.indexing.schemas import IndexingAssignment
    from strata_services.sample_data import metrics_rows
    from tests.indexer.indexing_helpers import ARTIFACTS, EXPECTED, FIELDS

    def assignment(n: int) -> IndexingAssignment:
        path = tmp_path / f"split{n}.parquet"
        pa.parquet.write_table(metrics_rows(100, start=WINDOW, span_secs=900, seed=n, messages=True), path)
        return IndexingAssignment(
            job_id=f"01BUILD{n}", fencing_token=n, lease_expires_at=datetime.now(UTC), lease_secs=15,
            split_id=f"01SPLIT{n}", index_uid="idx:01", partition_id="default", uri=path.as_uri(),
            size_bytes=path.stat().st_size, artifact_prefix=(tmp_path / f"artifacts{n}").as_uri(),
            artifacts=ArtifactConfig.model_validate(ARTIFACTS), field_types={f["name"]: f["type"] for f in FIELDS},
            zstd_level=3, spark_operation_tag="t")

    executor = IndexBuildExecutor(NoSpark(), upload_attempts=2, upload_backoff_secs=0.01, local=pool,
                                  local_max_bytes=1 << 30)
    assert executor.runs_in_batches()
    outcomes = executor.run_batch([assignment(n) for n in range(3)])
    for result, requests in outcomes:
        assert {(a.artifact_type, a.column) for a in result.artifacts} == EXPECTED
        assert requests.puts == 5 * len(result.artifacts)
