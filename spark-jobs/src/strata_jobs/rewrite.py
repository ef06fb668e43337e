"""A delete's rewrite: one sorted split -> the same rows without those the delete's predicate matches, staged and
verified, or nothing is left. `run_merge` hands a spec with `delete_predicate` here. When the predicate matches no
row the split is left as it is: nothing is written and the result says `unchanged` (the publish then only closes
the delete's coverage of the split).

A rewrite has one input, already in order (MC-3 was checked when it was written), so dropping rows keeps the
order: no sort key, no sort, no gather into the merge's column form. The kept rows are the input filtered, cut
into outputs as zero-copy slices, encoded and uploaded on a writer thread while this thread verifies what it
handed over. The checks pin the delete's invariants instead of re-deriving the merge's:

- DL-1 / MC-1: the rows in every written footer plus the rows removed equal the rows read.
- DL-2: the predicate, evaluated again on every output, matches no row; evaluated again on the rows removed, it
  matches every one of them.
- DL-3 / MC-2: the per-row hashes (`row_checksum.row_hashes`) of every output, computed from the output's own
  arrays, equal in sequence those of the input's unmatched rows: no row lost, altered, duplicated or moved. With
  the input's order (MC-3, checked when it was written) that is the outputs' order.
- MC-4: the written schema is the input's.

Measured by `python -m bench.bench_deletes` against plain pyarrow (read, is_in, filter, write): docs/benchmarks.md,
"Deletes".
"""

from __future__ import annotations

import contextvars
import time

import numpy as np
import pyarrow as pa

from strata_core.arrow_numpy import to_arrow
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import SplitMetadata
from strata_core.splitfile.writer import row_group_spans
from strata_jobs import merge_output
from strata_jobs.merge_inputs import Clock, RowDrop, check_timestamp, close_inputs, normalize, open_inputs, union_schema
from strata_jobs.merge_output import encode_and_upload, output_metadata, plan_outputs, read_back
from strata_jobs.merge_spec import MergeResult, MergeSpec, MergeVerificationError
from strata_jobs.merge_verify import check_footer
from strata_jobs.row_checksum import row_hashes
from strata_jobs.worker_threads import INLINE_MAX_ROWS, worker_threads


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
    rows_read = table.num_rows
    inline = rows_read <= INLINE_MAX_ROWS
    started = time.perf_counter()
    matched = drop.matching(table)
    clock.add("delete_filter", time.perf_counter() - started)
    if not matched.any():
        # Split statistics are coarse: many covered splits hold no matching row. Rewriting one would only copy
        # it (a new file, its artifacts rebuilt, the old one collected); it stays as it is instead.
        stats.update(rows_removed=0, input_bytes=item.size_bytes, output_bytes=0, num_outputs=0,
                     verify_readback=spec.verify_readback, method="rewrite", unchanged=True)
        clock.add("total", time.perf_counter() - started_total)
        stats["timings"] = clock.timings
        return MergeResult([], rows_read, 0, 0, stats, unchanged=True)

    uploaded: list[str] = []
    try:
        # Two helper threads: the input's row hashes and each output's column statistics are computed while this
        # thread drops rows and checks outputs, and the writer encodes (it needs the statistics only for the footer).
        with worker_threads(2, "rewrite-help", inline=inline) as helpers, \
                worker_threads(1, "rewrite-write", inline=inline) as writer:
            hashing = helpers.submit(_timed, row_hashes, table, union.names)
            started = time.perf_counter()
            kept_table = drop.keep(table, matched)
            removed = int(matched.sum())
            removed_rows = table.filter(to_arrow(matched))
            del table
            stats["rows_removed"] = removed
            # Cut from what the drop gave, not from what it should have given: a slip there is checked, not hidden.
            total_rows = kept_table.num_rows
            total_bytes = int(item.size_bytes * total_rows / rows_read) if rows_read else 0
            clock.add("delete_filter", time.perf_counter() - started)
            started = time.perf_counter()
            if not bool(drop.matching(removed_rows).all()):
                raise MergeVerificationError(f"DL-2: a row removed from {item.spec.split_id} does not match the "
                                             "delete")
            del removed_rows
            clock.add("verify", time.perf_counter() - started)

            sort_names = frozenset(schema.column_names)
            outputs: list[SplitMetadata] = []
            expected: np.ndarray | None = None
            checked = 0
            for begin, end in plan_outputs(total_rows, total_bytes, spec):
                output = kept_table.slice(begin, end - begin)
                metadata = output_metadata(spec, schema, output, {}, ts_type)
                column_stats = helpers.submit(_timed, merge_output.output_column_stats, output, sort_names)

                def complete(metadata: SplitMetadata, column_stats=column_stats) -> None:
                    found = column_stats.result()[0]
                    metadata.column_stats = found
                    metadata.time_range_start, metadata.time_range_end = merge_output.time_range(
                        found, spec.timestamp_field, ts_type)

                # In a copy of this context: the upload's requests count into the job's meter.
                job = writer.submit(contextvars.copy_context().run, encode_and_upload, output, metadata, spec,
                                    uploaded, complete)
                if expected is None:
                    started = time.perf_counter()
                    input_hashes, seconds = hashing.result()
                    clock.add("checksum_inputs", seconds)
                    clock.add("hash_wait", time.perf_counter() - started)
                    expected = input_hashes[~matched]
                    del input_hashes
                started = time.perf_counter()
                if not spec.verify_readback:
                    check_no_kept_row_matches(drop, output, metadata.split_id)
                    checked = _check_output(output, expected, checked, metadata.split_id, union)
                clock.add("verify", time.perf_counter() - started)
                data_size, footer, timings = job.result()
                clock.add_all({**timings, "column_stats": column_stats.result()[1]})
                started = time.perf_counter()
                check_footer(footer, output.num_rows, union, metadata.split_id)
                if spec.verify_readback:
                    written = read_back(metadata.uri, union)
                    check_no_kept_row_matches(drop, written, metadata.split_id)
                    checked = _check_output(written, expected, checked, f"{metadata.split_id} (read back)", union)
                clock.add("verify", time.perf_counter() - started)
                metadata.size_bytes = data_size
                metadata.row_groups = row_group_spans(footer)
                outputs.append(metadata)
            if expected is None:  # no output: every row was removed
                expected = hashing.result()[0][~matched]
            written_rows = sum(o.num_rows for o in outputs)
            if written_rows + removed != rows_read or checked != len(expected):
                raise MergeVerificationError(f"DL-1: {rows_read} rows read, {written_rows} written ({checked} "
                                             f"checked), {removed} removed")
    except BaseException:
        # After the threads are done: a writer still uploading would leave its file behind.
        for uri in uploaded:
            merge_output.delete(uri)
        raise

    stats.update(input_bytes=item.size_bytes, output_bytes=sum(o.size_bytes for o in outputs),
                 num_outputs=len(outputs), verify_readback=spec.verify_readback, method="rewrite")
    clock.add("total", time.perf_counter() - started_total)
    stats["timings"] = clock.timings
    checksum = int(expected.sum(dtype=np.uint64))
    return MergeResult(outputs, rows_read, written_rows, checksum, stats)


def check_no_kept_row_matches(drop: RowDrop, table: pa.Table, split_id: str) -> None:
    """DL-2, output side: the delete's predicate, evaluated again on what was written, matches no row."""
    matched = int(drop.matching(table).sum())
    if matched:
        raise MergeVerificationError(f"DL-2: output {split_id} still holds {matched} rows the delete matches")


def _check_output(output: pa.Table, expected: np.ndarray, begin: int, label: str, union: pa.Schema) -> int:
    """DL-3/MC-2: the output's rows are the next input rows kept, in order; where the next output starts."""
    end = begin + output.num_rows
    got = row_hashes(output, union.names)
    if end > len(expected) or not np.array_equal(got, expected[begin:end]):
        wrong = end - begin if end > len(expected) else int(np.argmax(got != expected[begin:end]))
        raise MergeVerificationError(f"DL-3: output {label} row {wrong} is not the input's kept row {begin + wrong}")
    return end


def _timed(function, *args):
    started = time.perf_counter()
    return function(*args), time.perf_counter() - started
