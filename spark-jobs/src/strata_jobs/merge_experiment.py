"""Benchmark of the merge kernel against the copy floor, on PERF-NOTES-shaped data.

    python -m strata_jobs.merge_experiment [--rows 4000000] [--repeats 5] [--fan-in 16,64] [--data-dir DIR]
                                           [--writer encode_split|recommended] [--crossover] [--no-benchmark]

Generates (or reuses, under --data-dir) one 15-minute window of metrics rows: metric_name (200 values), host
(2,000) and, derived from the host as in real fleets, service (50), env (4), region (12) and version (30); an
i64 timestamp_secs in the window and a random f64 value; split into 16 splits of rows/16 and 64 of rows/64,
each sorted by metric_name,service,host,timestamp_secs, zstd 3, 128k-row row groups, written like Strata
writes splits. Then, alternating the methods on every repeat (the machine may be shared) and each in a fresh
subprocess so its peak RSS is its own, prints medians of:
- floor: pyarrow read of every split (ParquetFile.read, strings as dictionary) + concat + one Parquet write to
  a file with encode_split's settings (no sort, no stats, no verification);
- run_merge with order_method=stable_sort and =kway (read, order, build, stats, encode, upload, verification);
- the CPU seconds and peak RSS of each (ru_maxrss of the child) and its RSS after imports.
--writer recommended writes both the floor and the merge without a dictionary and with BYTE_STREAM_SPLIT for
the float column (what PERF-NOTES recommends; encode_split does not do it yet).
--crossover also times cutting output columns by `take` vs by run slices for orders of a given mean run
length, which is how RUNS_MIN_MEAN_LENGTH in strata_jobs.merge was chosen.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from strata_shared.domain.index_config import ParquetConfig

SORT_SCHEMA = "metric_name,service,host,timestamp_secs@v1"
WINDOW_START = 1_767_225_600
STRING_COLUMNS = ["metric_name", "service", "host", "env", "region", "version"]
PARQUET = ParquetConfig(row_group_size=128 * 1024, zstd_level=3, write_statistics=True)


def _vocabulary(prefix: str, size: int) -> pa.Array:
    return pa.array([f"{prefix}{i:05d}" for i in range(size)])


def generate_split(rows: int, rng: np.random.Generator) -> pa.Table:
    host = rng.integers(0, 2000, rows)
    metric = rng.integers(0, 200, rows)
    table = pa.table({
        "metric_name": _vocabulary("system.cpu.metric_", 200).take(pa.array(metric)),
        "service": _vocabulary("svc-", 50).take(pa.array(host % 50)),
        "host": _vocabulary("ip-10-0-", 2000).take(pa.array(host)),
        "env": _vocabulary("env-", 4).take(pa.array((host // 50) % 4)),
        "region": _vocabulary("region-", 12).take(pa.array(host % 12)),
        "version": _vocabulary("v1.", 30).take(pa.array((host * 7) % 30)),
        "timestamp_secs": pa.array(WINDOW_START + rng.integers(0, 900, rows), pa.int64()),
        "value": pa.array(rng.normal(100.0, 30.0, rows)),
    })
    return table.sort_by([(c, "ascending") for c in ("metric_name", "service", "host", "timestamp_secs")])


def generate(directory: Path, rows: int, splits: int, seed: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    existing = sorted(directory.glob("split_*.parquet"))
    if len(existing) == splits:
        return existing
    rng = np.random.default_rng(seed)
    paths = []
    for index in range(splits):
        path = directory / f"split_{index:03d}.parquet"
        pq.write_table(generate_split(rows // splits, rng), path, compression="zstd",
                       compression_level=PARQUET.zstd_level, row_group_size=PARQUET.row_group_size,
                       write_statistics=True, store_schema=False)
        paths.append(path)
    return paths


def _spec(paths: list[Path], out_dir: Path, method: str):
    from strata_jobs.merge import MergeInput, MergeSpec

    return MergeSpec(
        job_id="bench", fencing_token=1,
        inputs=[MergeInput(p.stem, f"file://{p}") for p in paths],
        sort_schema=SORT_SCHEMA, timestamp_field="timestamp_secs", timestamp_is_seconds=True,
        output_uri_prefix=f"file://{out_dir}", target_split_num_rows=10_000_000,
        target_split_size_bytes=1 << 40, parquet=PARQUET, index_uid="bench:1", source_id="bench",
        partition_id="tenant", doc_mapping_uid="bench", window_start=WINDOW_START, window_duration_secs=900,
        num_merge_ops=1, generation=1, root_split_ids=[p.stem for p in paths], order_method=method,
    )


def recommended_writer_options(schema: pa.Schema) -> dict:
    """What --writer recommended changes against encode_split: no dictionary for float columns (high entropy:
    the dictionary is abandoned after 1 MB per row group, having cost a hash per value) and BYTE_STREAM_SPLIT
    for them."""
    floats = [f.name for f in schema if pa.types.is_floating(f.type)]
    return {"use_dictionary": [f.name for f in schema if f.name not in floats],
            "column_encoding": {name: "BYTE_STREAM_SPLIT" for name in floats}}


def recommended_encode_split(table: pa.Table, metadata, settings: ParquetConfig):
    """strata_shared.splitfile.writer.encode_split with recommended_writer_options (same kv metadata)."""
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, table.schema, compression="zstd", compression_level=settings.zstd_level,
                              write_statistics=settings.write_statistics, store_schema=False,
                              **recommended_writer_options(table.schema))
    try:
        writer.write_table(table, row_group_size=settings.row_group_size)
        writer.add_key_value_metadata(metadata.kv_metadata())
    finally:
        writer.close()
    data = sink.getvalue().to_pybytes()
    return data, pq.read_metadata(pa.BufferReader(data))


def floor(paths: list[Path], out_dir: Path, writer: str) -> None:
    # ParquetFile.read, not pq.read_table: the latter imports pandas (about 1 s in a fresh process), which
    # would inflate the floor; the merge reads the same way.
    tables = [pq.ParquetFile(p, read_dictionary=STRING_COLUMNS).read(use_threads=True) for p in paths]
    table = pa.concat_tables(tables)
    del tables
    options = recommended_writer_options(table.schema) if writer == "recommended" else {}
    pq.write_table(table, out_dir / "floor.parquet", compression="zstd", compression_level=PARQUET.zstd_level,
                   row_group_size=PARQUET.row_group_size, write_statistics=PARQUET.write_statistics,
                   store_schema=False, **options)


def _child(task: str, data_dir: Path, writer: str) -> None:
    """One measurement in this (fresh) process; prints a JSON line."""
    from strata_jobs import merge_output
    from strata_jobs.merge import run_merge  # imported before the baseline RSS is taken

    if writer == "recommended":
        merge_output.encode_split = recommended_encode_split

    paths = sorted(data_dir.glob("split_*.parquet"))
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out_dir = Path(tempfile.mkdtemp(prefix="merge-out-"))
    try:
        started = time.perf_counter()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        report: dict = {}
        if task == "floor":
            floor(paths, out_dir, writer)
        else:
            result = run_merge(_spec(paths, out_dir, task))
            report = {"stats": result.stats, "rows": result.output_rows}
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
        peak = after.ru_maxrss * 1024
        output_bytes = sum(f.stat().st_size for f in out_dir.iterdir())
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(json.dumps({"task": task, "seconds": seconds, "cpu_seconds": cpu, "peak_rss": peak,
                      "baseline_rss": baseline,
                      "output_bytes": output_bytes, **report}))


def _run_child(task: str, data_dir: Path, writer: str) -> dict:
    output = subprocess.run([sys.executable, "-m", "strata_jobs.merge_experiment", "--child", task,
                             "--data-dir", str(data_dir), "--writer", writer],
                            check=True, capture_output=True, text=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def benchmark(data_root: Path, rows: int, repeats: int, fan_ins: list[int], writer: str) -> None:
    tasks = ["floor", "stable_sort", "kway"]
    for fan_in in fan_ins:
        data_dir = data_root / f"rows{rows}_fanin{fan_in}"
        paths = generate(data_dir, rows, fan_in, seed=fan_in)
        input_bytes = sum(p.stat().st_size for p in paths)
        samples: dict[str, list[dict]] = {t: [] for t in tasks}
        for _ in range(repeats):
            for task in tasks:
                samples[task].append(_run_child(task, data_dir, writer))
        floor_median = statistics.median(s["seconds"] for s in samples["floor"])
        print(f"\n{rows:,} rows in {fan_in} splits ({input_bytes / 1e6:.1f} MB), writer {writer}, {repeats} "
              "repeats, medians:")
        for task in tasks:
            runs = samples[task]
            median = statistics.median(s["seconds"] for s in runs)
            peak = max(s["peak_rss"] for s in runs) / 1e6
            base = statistics.median(s["baseline_rss"] for s in runs) / 1e6
            cpu = statistics.median(s["cpu_seconds"] for s in runs)
            line = (f"  {task:12s} {median:6.2f} s  x{median / floor_median:4.2f} of floor  cpu {cpu:5.2f} s  "
                    f"peak RSS {peak:6.0f} MB (after imports {base:4.0f} MB)   "
                    f"output {statistics.median(s['output_bytes'] for s in runs) / 1e6:5.1f} MB   "
                    f"all: {', '.join(format(s['seconds'], '.2f') for s in runs)}")
            print(line)
            if task != "floor":
                timings = {k: round(statistics.median(s["stats"]["timings"].get(k, 0.0) for s in runs), 3)
                           for k in runs[0]["stats"]["timings"]}
                last = runs[-1]["stats"]
                print(f"      stages (median s): {timings}")
                print(f"      method={last['order_method']} key_bits={last['key_bits']} "
                      f"runs={last['num_runs']} "
                      f"mean_run={last['mean_run_length']} build={last['build_method']} "
                      f"peak_estimate={last['peak_bytes_estimate'] / 1e6:.0f} MB")


def _median_seconds(action, repeats: int = 3) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def crossover(data_root: Path, rows: int) -> None:
    """Cutting an output column by gather (`take`) vs by zero-copy run slices, for orders of mean run length
    L.

    Per column kind: the merge's string codes and fixed-width values are gathered with numpy, which costs
    about the same whatever L is, while slicing costs a Python call per run; variable-width Arrow columns
    (lists,
    binaries) are copied by Arrow's take, which slicing beats once runs are long enough."""
    from strata_jobs.arrow_numpy import to_arrow
    from strata_jobs.merge import union_schema
    from strata_jobs.merge_columns import ColumnBuilder
    from strata_jobs.merge_order import run_heads

    data_dir = data_root / f"rows{rows}_fanin16"
    paths = generate(data_dir, rows, 16, seed=16)
    tables = [pq.ParquetFile(p, read_dictionary=STRING_COLUMNS).read() for p in paths]
    union = union_schema([(str(i), t.schema) for i, t in enumerate(tables)])
    total = sum(t.num_rows for t in tables)
    builders = {f.name: ColumnBuilder(f.name, f.type, total) for f in union}
    for table in tables:
        for name, builder in builders.items():
            builder.add(table.column(name), table.num_rows)
    columns = {name: b.finish() for name, b in builders.items()}
    del tables
    # A variable-width column of the "arrow" kind: list<string> of two host names per row.
    hosts = columns["host"].full_array().dictionary_decode()
    offsets = np.arange(0, 2 * total + 1, 2, dtype=np.int32)
    labels = pa.ListArray.from_arrays(to_arrow(offsets), pa.concat_arrays([hosts, hosts]))
    builder = ColumnBuilder("labels", labels.type, total)
    builder.add(pa.chunked_array([labels]), total)
    columns["labels"] = builder.finish()
    rg = PARQUET.row_group_size
    print(f"\ncrossover on {total:,} rows: seconds to cut one whole output column, take vs run slices "
          "(median of 3)")
    print("  mean run L | " + " | ".join(f"{n} ({c.kind}) take / runs" for n, c in columns.items()
                                         if n in ("host", "value", "labels")))
    for length in (1, 4, 16, 32, 64, 128, 256, 1024, 16384):
        blocks = np.arange(0, total, length)
        rng = np.random.default_rng(length)
        order = rng.permutation(total) if length == 1 else \
            (rng.permutation(blocks)[:, None] + np.arange(length)[None, :]).reshape(-1)
        order = order[order < total]
        heads = run_heads(order)
        starts, lengths = order[heads], np.diff(np.append(heads, len(order)))
        cells = []
        for name in ("host", "value", "labels"):
            column = columns[name]
            took = _median_seconds(functools.partial(column.take, order, rg))
            sliced = float("nan")
            if length >= 4:
                sliced = _median_seconds(functools.partial(column.slices, starts, lengths, rg))
            cells.append(f"{took:6.3f} / {sliced:6.3f}")
        print(f"  {total / len(heads):10.1f} | " + " | ".join(cells))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fan-in", default="16,64")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="reuse generated data here (else a temp dir)")
    parser.add_argument("--crossover", action="store_true")
    parser.add_argument("--no-benchmark", action="store_true")
    parser.add_argument("--writer", choices=["encode_split", "recommended"], default="encode_split",
                        help="encode_split as it is, or no dictionary and BYTE_STREAM_SPLIT for floats")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.data_dir, args.writer)
        return
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="merge-bench-"))
    try:
        print(f"data under {root}; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
        if not args.no_benchmark:
            benchmark(root, args.rows, args.repeats, [int(f) for f in args.fan_in.split(",")], args.writer)
        if args.crossover:
            crossover(root, args.rows)
    finally:
        if args.data_dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
