"""The sorted merge kernel of compaction: N sorted splits of one window -> fewer, larger, sorted, staged
splits.

Pure pyarrow + numpy (+ strata_core modules): it runs in a Spark Python worker
(strata_jobs.spark_merge) and can be called directly. It never imports pandas (see strata_core.arrow_numpy).
Steps:

1. Footers of every input (merge_inputs); the output schema is the union of their columns, in
   first-appearance order over the inputs as given. A column whose logical type
   (strata_core.domain.fields.field_type_of; dictionary<string> == string) differs between two inputs raises
   MergeTypeConflict before any data is read or anything written (MC-4).
2. Read the inputs one after another, string columns as dictionaries, in a pipeline: a reader thread reads
   and casts input i+1 to the union's types while a hasher thread hashes input i for the row checksum and
   this thread copies it into the merge's column form (merge_columns). Missing columns are nulls.
3. Global order (strata_core.domain.sort_key, the comparator ingestion sorts with too): per-column ranks
   packed into one uint64 key, then a stable argsort (timsort over the presorted runs of the inputs).
4. Outputs of at most target_split_num_rows rows and about target_split_size_bytes bytes (bytes per row
   estimated from the inputs' file sizes), each column gathered through the order (`take`) or, for column
   kinds whose crossover the order's mean run length reaches, cut as zero-copy slices of the runs; encoded
   with strata_core.splitfile.writer.encode_split on a writer thread, uploaded under a temporary name and
   moved.
5. Verification (merge_verify) before returning, else MergeVerificationError and every output deleted: MC-1
   row counts (the written footers) and MC-2 an order-independent checksum of every row (row_checksum) equal
   to the inputs'; MC-3 sort keys recomputed from each output table's own values non-decreasing, plus
   reference-comparator checks at block and output boundaries and on sampled adjacent rows; MC-4 the written
   schema equals the union. The in-memory checks run while the writer thread encodes. With verify_readback
   the checksum and the order are checked on the uploaded file read back instead.

Memory, with R rows in the job. The merge's form of the columns costs 4 bytes a row per string column (int32
codes into one dictionary) and the value width (+1 byte where nulls exist) per other column: row_width, 40
bytes for a typical metrics row (6 string tags, i64 timestamp, f64 value). On top of it: three inputs' Arrow
tables at most (read ahead, being copied, being hashed: fan-in only matters through the largest inputs), the
sort key with the sort columns' ranks while it is packed, and the order (8 + 8 bytes a row, plus timsort's
scratch), then one output at a time: its Arrow table (row_width a row; the last output frees the merge's
columns and the order as it is cut), its Parquet bytes (twice: encode_split copies them to `bytes`), and
verification blocks of 256k rows. Peak ~= R * (row_width + 24) + output table + 2 * output file + 3 * largest
input table, reported as stats["peak_bytes_estimate"] (490-510 MB for 4M rows). Measured by the merge
benchmark (bench/bench_merge.py; 4M rows, 16 or 64 inputs): peak RSS 650-700 MB, of which ~115 MB is the
interpreter and libraries, i.e. about 140 bytes a row: under 1 GB per 4M-row job.

Measured speed (the merge benchmark, 4M rows, on a shared 2-CPU machine whose copy floor, read + write with the
same writer settings, is 1.4-1.75 s, against 1.03 s in an earlier measurement of the same data): stable_sort
1.25x the floor when the machine was otherwise idle (1.77 s vs 1.42 s; the second core runs the verification
while the writer thread encodes), 1.55x under contention (CPU: 2.37 s vs 1.51 s). Verification (row checksums
of inputs and outputs, MC-3 keys) costs about 0.4 CPU-s of that; without it the merge costs 1.13x the floor's
CPU. A vectorized k-way merge of the inputs' key runs, measured as an alternative to the stable sort, was slower
everywhere (its order step took 0.48-0.71 s against 0.10-0.15 s) and was removed.
"""

from __future__ import annotations

import contextvars
import time
import zlib
from concurrent.futures import Executor

import numpy as np
import pyarrow as pa

from strata_core.domain.sort_key import build_sort_key, stable_order
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import SplitMetadata
from strata_core.query.predicate_json import predicate_from_json
from strata_core.splitfile.writer import row_group_spans
from strata_jobs import merge_output
from strata_jobs.merge_columns import SourceColumn
from strata_jobs.merge_inputs import Clock, RowDrop, check_timestamp, close_inputs, open_inputs, read_all, union_schema
from strata_jobs.merge_output import encode_and_upload, output_metadata, plan_outputs, read_back
from strata_jobs.merge_runs import count_runs, run_heads
from strata_jobs.merge_spec import (
    MergeInput,
    MergeResult,
    MergeSpec,
    MergeTypeConflict,
    MergeVerificationError,
    result_from_json,
    result_to_json,
    spec_from_json,
    spec_to_json,
)
from strata_jobs.merge_verify import Verifier, check_footer
from strata_jobs.rewrite import run_rewrite
from strata_jobs.worker_threads import INLINE_MAX_ROWS, worker_threads

__all__ = [
    "MergeInput", "MergeResult", "MergeSpec", "MergeTypeConflict", "MergeVerificationError", "run_merge",
    "spec_to_json", "spec_from_json", "result_to_json", "result_from_json",
    "RUNS_MIN_MEAN_LENGTH", "union_schema",
]

# Cut an output column from zero-copy run slices instead of gathering it when the order's mean run length
# (runs of consecutive rows of one input) reaches this, per column kind. Measured by
# `python -m bench.bench_merge --crossover` on 4M rows: a variable-width Arrow column
# (list<string>) costs 0.16 s by take vs 0.19 s by slices at L=32, 0.12 vs 0.10 at 64, 0.09 vs 0.005 at 1024;
# a fixed-width column 0.005 s either way at L=1024 but 1.9 s by slices at L=4; string codes are gathered
# either way (never sliced). With fine-grained interleaving (L ~ 1, usual when every input covers the key
# range) every column is gathered.
RUNS_MIN_MEAN_LENGTH = {"arrow": 64, "num": 1024}
# Threads cutting output columns and computing their statistics (numpy gathers release the GIL): 0.27 s ->
# 0.14 s for the 8 columns of 4M rows on 2 CPUs.
BUILD_THREADS = 2


def _output_table(columns: dict[str, SourceColumn | None], union: pa.Schema, order: np.ndarray, begin: int,
                  end: int, heads: np.ndarray | None, slice_kinds: frozenset[str], row_group_size: int,
                  consume: bool = False, pool: Executor | None = None) -> pa.Table:
    """Rows order[begin:end] of every column: gathered, or, for the column kinds in `slice_kinds`, sliced run
    by run (`heads`: where runs start in the order). Columns in parallel on `pool` when given (numpy's gathers
    release the GIL). With `consume`, each source column is dropped once cut."""
    index = order[begin:end]
    starts = lengths = None
    if heads is not None and slice_kinds:
        # Runs of consecutive source rows that fall inside [begin, end).
        inside = heads[(heads > begin) & (heads < end)]
        cut = np.concatenate([[begin], inside, [end]])
        starts = order[cut[:-1]]
        lengths = np.diff(cut)

    def cut_column(name: str) -> pa.ChunkedArray:
        column = columns[name]
        if starts is not None and column.kind in slice_kinds:
            array = column.slices(starts, lengths, row_group_size)
        else:
            array = column.take(index, row_group_size)
        if consume:
            columns[name] = None
        return array

    names = union.names
    arrays = list(pool.map(cut_column, names)) if pool is not None else [cut_column(n) for n in names]
    return pa.Table.from_arrays(arrays, names=names)


def _validate(spec: MergeSpec) -> SortSchema:
    if not spec.inputs:
        raise ValueError("a merge needs at least one input")
    if len({i.split_id for i in spec.inputs}) != len(spec.inputs):
        raise ValueError("a split appears twice among the merge inputs")
    if spec.target_split_num_rows < 1 or spec.target_split_size_bytes < 1:
        raise ValueError("target_split_num_rows and target_split_size_bytes must be positive")
    return SortSchema.parse(spec.sort_schema)


def run_merge(spec: MergeSpec) -> MergeResult:
    """Merge spec.inputs into staged outputs under spec.output_uri_prefix: verified, or nothing is left."""
    started_total = time.perf_counter()
    clock = Clock()
    schema = _validate(spec)
    drop = _row_drop(spec)
    if drop is not None:
        return run_rewrite(spec, schema, drop)
    stats: dict = {"job_id": spec.job_id, "fencing_token": spec.fencing_token, "fan_in": len(spec.inputs)}

    started = time.perf_counter()
    inputs = open_inputs(spec.inputs)
    try:
        union = union_schema([(i.spec.split_id, i.schema) for i in inputs])
        ts_type = check_timestamp(union, spec)
        total_rows = sum(i.rows for i in inputs)
        total_bytes = sum(i.size_bytes for i in inputs)
        clock.add("footers", time.perf_counter() - started)
        inline = total_rows <= INLINE_MAX_ROWS
        columns, input_checksum = read_all(inputs, union, clock, stats, inline=inline)
    finally:
        close_inputs(inputs)

    started = time.perf_counter()
    with worker_threads(BUILD_THREADS, "merge-key", inline=inline) as pool:
        key = build_sort_key(columns, schema, pool)
    clock.add("sort_key", time.perf_counter() - started)
    started = time.perf_counter()
    order = stable_order(key, total_rows)
    stats.update(key_words=len(key.words), key_bits=key.total_bits,
                 key_column_bits=key.column_bits)
    del key
    clock.add("order", time.perf_counter() - started)

    started = time.perf_counter()
    num_runs = count_runs(order)
    mean_run = total_rows / num_runs if num_runs else 0.0
    slice_kinds = frozenset(kind for kind, threshold in RUNS_MIN_MEAN_LENGTH.items() if mean_run >= threshold)
    heads = run_heads(order) if slice_kinds & {c.kind for c in columns.values()} else None
    kinds_present = [k for k in ("dict", "num", "arrow") if any(c.kind == k for c in columns.values())]
    stats.update(num_runs=num_runs, mean_run_length=round(mean_run, 2),
                 build_method={k: "runs" if k in slice_kinds else "take" for k in kinds_present})
    clock.add("runs", time.perf_counter() - started)
    column_bytes = sum(c.nbytes for c in columns.values())
    order_bytes = order.nbytes

    sort_names = frozenset(schema.column_names)
    verifier = Verifier(schema, union, seed=zlib.crc32(spec.job_id.encode()))
    outputs: list[SplitMetadata] = []
    uploaded: list[str] = []
    max_output_table = max_output_file = 0
    try:
        with worker_threads(1, "merge-write", inline=inline) as writer, \
                worker_threads(BUILD_THREADS, "merge-build", inline=inline) as builders:
            plan = plan_outputs(total_rows, total_bytes, spec)
            for number, (begin, end) in enumerate(plan):
                started = time.perf_counter()
                last = number == len(plan) - 1
                # The last output consumes the merge's columns and order: they are freed as soon as cut.
                table = _output_table(columns, union, order, begin, end, heads, slice_kinds,
                                      spec.parquet.row_group_size, consume=last, pool=builders)
                if last:
                    order = heads = None
                clock.add("build", time.perf_counter() - started)
                started = time.perf_counter()
                column_stats = merge_output.output_column_stats(table, sort_names, builders)
                metadata = output_metadata(spec, schema, table, column_stats, ts_type)
                split_id = metadata.split_id
                clock.add("column_stats", time.perf_counter() - started)
                # Encode and upload on the writer thread (the Parquet writer releases the GIL) while this
                # thread verifies the table it handed over.
                # In a copy of this context: the upload's requests count into the merge's meter.
                job = writer.submit(contextvars.copy_context().run, encode_and_upload, table, metadata, spec,
                                    uploaded)
                started = time.perf_counter()
                if not spec.verify_readback:
                    verifier.check_table(table, f"output {split_id}")
                clock.add("verify", time.perf_counter() - started)
                data_size, footer, timings = job.result()
                clock.add_all(timings)
                started = time.perf_counter()
                check_footer(footer, table.num_rows, union, split_id)
                if spec.verify_readback:
                    written = read_back(metadata.uri, union)
                    verifier.check_table(written, f"output {split_id} (read back)")
                clock.add("verify", time.perf_counter() - started)
                metadata.size_bytes = data_size
                metadata.row_groups = row_group_spans(footer)
                outputs.append(metadata)
                max_output_table = max(max_output_table, table.nbytes)
                max_output_file = max(max_output_file, data_size)
                del table
        written_rows = sum(o.num_rows for o in outputs)
        if written_rows != total_rows or verifier.rows != total_rows:
            raise MergeVerificationError(f"MC-1: {total_rows} input rows, {written_rows} output rows")
        if verifier.checksum != input_checksum:
            raise MergeVerificationError(f"MC-2: output row checksum {verifier.checksum:#018x} != input "
                                         f"{input_checksum:#018x}")
    except BaseException:
        for uri in uploaded:
            merge_output.delete(uri)
        raise

    input_tables_bytes = stats.pop("input_tables_bytes_max3")
    stats.update(
        input_bytes=total_bytes, output_bytes=sum(o.size_bytes for o in outputs), num_outputs=len(outputs),
        peak_bytes_estimate=int(column_bytes + order_bytes + 8 * total_rows + input_tables_bytes
                                + max_output_table + 2 * max_output_file),
        verify_readback=spec.verify_readback,
    )
    clock.add("total", time.perf_counter() - started_total)
    stats["timings"] = clock.timings
    return MergeResult(outputs, total_rows, sum(o.num_rows for o in outputs), input_checksum, stats)


def _row_drop(spec: MergeSpec) -> RowDrop | None:
    if spec.delete_predicate is None:
        return None
    if len(spec.inputs) != 1:
        raise ValueError("a rewrite has exactly one input")
    return RowDrop(predicate_from_json(spec.delete_predicate), {"partition_id": spec.partition_id})
