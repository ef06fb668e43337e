"""A delete's rewrite: one sorted split -> the same rows without those the delete's predicate matches, staged and
verified, or nothing is left. `run_merge` hands a spec with `delete_predicate` here.

A rewrite has one input, already in order (MC-3 was checked when it was written), so dropping rows keeps the
order: no sort key, no sort, no gather into the merge's column form. The kept rows are the input filtered, cut
into outputs as zero-copy slices, encoded and uploaded on a writer thread while this thread verifies what it
handed over. The checks pin the delete's invariants instead of re-deriving the merge's:

- DL-1 / MC-1: the rows in every written footer plus the rows removed equal the rows read.
- DL-2: the predicate, evaluated again on every output, matches no row; evaluated again on the rows removed, it
  matches every one of them.
- DL-3 / MC-2: the per-row hashes (`row_checksum.row_hashes`) of every output, computed from the output's own
  arrays, equal in sequence those of the input's unmatched rows: no row lost, altered, duplicated or moved. That
  and the input's order give MC-3; sampled adjacent pairs are checked with the reference comparator as well.
- MC-4: the written schema is the input's.

Measured by `python -m bench.bench_deletes` against plain pyarrow (read, is_in, filter, write): docs/benchmarks.md,
"Deletes".
"""

from __future__ import annotations

import contextvars
import time
import zlib

import numpy as np
import pyarrow as pa

from strata_jobs import merge_output
from strata_jobs.merge import (
    check_no_kept_row_matches,
    check_timestamp,
    encode_and_upload,
    output_metadata,
    plan_outputs,
    read_back,
)
from strata_jobs.merge_inputs import Clock, RowDrop, close_inputs, normalize, open_inputs, union_schema
from strata_jobs.merge_spec import MergeResult, MergeSpec, MergeVerificationError
from strata_jobs.merge_verify import spot_check_pairs, written_schema_problem
from strata_jobs.row_checksum import row_hashes
from strata_jobs.worker_threads import INLINE_MAX_ROWS, worker_threads
from strata_shared.arrow_numpy import to_arrow
from strata_shared.domain.sort_schema import SortSchema
from strata_shared.domain.split import SplitMetadata
from strata_shared.splitfile.writer import row_group_spans

SPOT_CHECK_PAIRS = 64


def run_rewrite(spec: MergeSpec, schema: SortSchema, drop: RowDrop) -> MergeResult:
    started_total = time.perf_counter()
    clock = Clock()
    stats: dict = {"job_id": spec.job_id, "fencing_token": spec.fencing_token, "fan_in": 1}
    started = time.perf_counter()
    [item] = open_inputs(spec.inputs)
    try:
        union = union_schema([(item.spec.split_id, item.schema)])
        ts_type = check_timestamp(union, spec)
        clock.add("footers", time.perf_counter() - started)
        started = time.perf_counter()
        read = item.parquet.read(use_threads=True)
        if read.num_rows != item.rows:
            raise MergeVerificationError(f"split {item.spec.split_id}: read {read.num_rows} rows, its footer "
                                         f"says {item.rows}")
        # In the union's types, string columns kept as dictionaries (as read, and as the floor writes them).
        columns = normalize(read, union, item.spec.split_id)
        table = pa.Table.from_arrays(list(columns.values()), names=list(columns))
        clock.add("read", time.perf_counter() - started)
    finally:
        close_inputs([item])
    rows_read, total_bytes = table.num_rows, item.size_bytes
    inline = rows_read <= INLINE_MAX_ROWS

    with worker_threads(1, "rewrite-hash", inline=inline) as hasher:
        # The input's row hashes on the second CPU while this thread finds and drops the matching rows.
        hashing = hasher.submit(_timed, row_hashes, table, union.names)
        started = time.perf_counter()
        matched = drop.matching(table)
        kept_table = drop.keep(table, matched)
        removed_rows = table.filter(to_arrow(matched)) if matched.any() else table.slice(0, 0)
        clock.add("delete_filter", time.perf_counter() - started)
        input_hashes, seconds = hashing.result()
        clock.add("checksum_inputs", seconds)
    del table
    removed = int(matched.sum())
    stats["rows_removed"] = removed
    expected = input_hashes[~matched]
    del input_hashes
    # Cut from what the drop gave, not from what it should have given: a slip there is checked, not hidden.
    total_rows = kept_table.num_rows
    total_bytes = int(total_bytes * total_rows / rows_read) if rows_read else 0

    started = time.perf_counter()
    if removed and not bool(drop.matching(removed_rows).all()):
        raise MergeVerificationError(f"DL-2: a row removed from {item.spec.split_id} does not match the delete")
    del removed_rows
    clock.add("verify", time.perf_counter() - started)

    sort_names = frozenset(schema.column_names)
    rng = np.random.default_rng(zlib.crc32(spec.job_id.encode()))
    outputs: list[SplitMetadata] = []
    uploaded: list[str] = []
    checked = 0
    try:
        with worker_threads(1, "rewrite-write", inline=inline) as writer:
            for begin, end in plan_outputs(total_rows, total_bytes, spec):
                started = time.perf_counter()
                output = kept_table.slice(begin, end - begin)
                column_stats = merge_output.output_column_stats(output, sort_names)
                metadata = output_metadata(spec, schema, output, column_stats, ts_type)
                clock.add("column_stats", time.perf_counter() - started)
                # In a copy of this context: the upload's requests count into the job's meter.
                job = writer.submit(contextvars.copy_context().run, encode_and_upload, output, metadata, spec,
                                    uploaded)
                started = time.perf_counter()
                if not spec.verify_readback:
                    check_no_kept_row_matches(drop, output, metadata.split_id)
                    checked = _check_output(output, expected, checked, metadata.split_id, union, schema, rng)
                clock.add("verify", time.perf_counter() - started)
                data_size, footer, timings = job.result()
                for stage, seconds in timings.items():
                    clock.add(stage, seconds)
                started = time.perf_counter()
                if footer.num_rows != output.num_rows:
                    raise MergeVerificationError(f"MC-1: output {metadata.split_id} holds {footer.num_rows} rows, "
                                                 f"{output.num_rows} were written")
                problem = written_schema_problem(footer, union)
                if problem:
                    raise MergeVerificationError(f"MC-4: output {metadata.split_id}: {problem}")
                if spec.verify_readback:
                    written = read_back(metadata.uri, union)
                    check_no_kept_row_matches(drop, written, metadata.split_id)
                    checked = _check_output(written, expected, checked, f"{metadata.split_id} (read back)", union,
                                            schema, rng)
                clock.add("verify", time.perf_counter() - started)
                metadata.size_bytes = data_size
                metadata.row_groups = row_group_spans(footer)
                outputs.append(metadata)
        written_rows = sum(o.num_rows for o in outputs)
        if written_rows + removed != rows_read or checked != len(expected):
            raise MergeVerificationError(f"DL-1: {rows_read} rows read, {written_rows} written ({checked} checked), "
                                         f"{removed} removed")
    except BaseException:
        for uri in uploaded:
            merge_output.delete(uri)
        raise

    stats.update(input_bytes=item.size_bytes, output_bytes=sum(o.size_bytes for o in outputs),
                 num_outputs=len(outputs), verify_readback=spec.verify_readback, method="rewrite")
    clock.add("total", time.perf_counter() - started_total)
    stats["timings"] = clock.timings
    checksum = int(expected.sum(dtype=np.uint64))
    return MergeResult(outputs, rows_read, written_rows, checksum, stats)


def _check_output(output: pa.Table, expected: np.ndarray, begin: int, label: str, union: pa.Schema,
                  schema: SortSchema, rng: np.random.Generator) -> int:
    """DL-3/MC-2: the output's rows are the next input rows kept, in order (MC-3 sampled); where the next
    output starts."""
    end = begin + output.num_rows
    got = row_hashes(output, union.names)
    if end > len(expected) or not np.array_equal(got, expected[begin:end]):
        wrong = end - begin if end > len(expected) else int(np.argmax(got != expected[begin:end]))
        raise MergeVerificationError(f"DL-3: output {label} row {wrong} is not the input's kept row {begin + wrong}")
    count = min(SPOT_CHECK_PAIRS, output.num_rows - 1)
    if count > 0:
        positions = np.unique(rng.integers(0, output.num_rows - 1, count))
        bad = spot_check_pairs(output, schema, positions)
        if bad is not None:
            raise MergeVerificationError(f"MC-3: output {label} rows {bad} and {bad + 1} are out of order")
    return end


def _timed(function, *args):
    started = time.perf_counter()
    return function(*args), time.perf_counter() - started
