"""Benchmark 4: compaction. The sorted merge of one 15-minute window of 4M metrics rows, by Strata (the kernel
alone and as a Spark Connect job) and by the usual alternatives, against the copy floor.

Data (generate_split below): metric_name (200 values), host (2,000) and, derived from the host, service (50),
env (4), region (12), version (30); an i64 timestamp_secs within one window and a random f64 value. Two datasets
of the same size: 16 sorted splits of rows/16 and 64 of rows/64, each sorted by metric_name,service,host,
timestamp_secs, written with strata_core.splitfile.writer.split_writer_options and the index defaults'
ParquetConfig (zstd 3, 128k-row row groups, statistics; floats without dictionary), as Strata writes splits.
Measured, alternating the methods on every repeat (the machine is shared) and each local method in a fresh
subprocess (its peak RSS is its own):

  (a) floor: pyarrow read of every split (strings as dictionary) + concat + one Parquet write with the same
      writer options, no sort;
  kernel: strata_jobs.merge.run_merge outside Spark (its order is a stable sort of packed keys; a k-way merge
      of the inputs' runs, compared here until 2026-11, was slower at every fan-in and was removed);
  (b) Strata's merge as a Spark Connect job (strata_jobs.spark_merge.submit_merges, one MergeSpec) on a local
      server (LocalSparkConnectServer); the first submission is reported separately as the cold time;
  (c) DuckDB COPY (SELECT * FROM read_parquet([...]) ORDER BY ...) TO ... (zstd 3, 128k row groups), 2 threads;
  (d) Polars scan_parquet + sort + sink_parquet (zstd 3, 128k row groups);
  (e) delta-rs: the splits appended to a Delta table (untimed), then DeltaTable.optimize.z_order (timed);
  (f) Spark: read.parquet(...).repartition(1).sortWithinPartitions(...).write.parquet(...) on the same server.

Then four window merges at once (4 specs over 4 distinct windows of the 16-split shape, one submit_merges
call, so one Spark job of 4 tasks on local[2]) for throughput, with the peak RSS of every Spark Python worker
(VmHWM of the server's python processes, sampled from /proc, reset before each run). And the ADR's compression
experiment: the same rows written sorted vs in random order, and the separately sorted splits vs one merged
file.

`python -m bench.bench_merge --crossover` measures instead, on the 16-split dataset, what cutting an output
column costs by gather (`take`) vs by zero-copy run slices for orders of a given mean run length: how
strata_jobs.merge.RUNS_MIN_MEAN_LENGTH was chosen.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import fmt_bytes, fmt_int, fmt_s, median
from bench.harness import DATA_DIR, REPO_ROOT, Stack, peak_rss_bytes, reset_peak_rss
from strata_core.domain.index_config import ParquetConfig

SECTION = "merge"
SORT_COLUMNS = ["metric_name", "service", "host", "timestamp_secs"]
SORT_SCHEMA = "metric_name,service,host,timestamp_secs@v1"
STRING_COLUMNS = ["metric_name", "service", "host", "env", "region", "version"]
WINDOW_START = 1_767_225_600
# The index defaults (what an index writes unless it sets `parquet`): the splits, the floor and the merge output
# are written with them; the other engines get the same codec, level and row-group size.
PARQUET = ParquetConfig()
ROW_GROUP = PARQUET.row_group_size
ZSTD_LEVEL = PARQUET.zstd_level
LOCAL_TASKS = ("floor", "stable_sort", "duckdb", "polars", "delta")
SPARK_TASKS = ("spark_merge", "spark_naive", "spark_merge_range")
LABELS = {
    "floor": "(a) pyarrow read (strings as dictionary) + write, no sort (the floor)",
    "stable_sort": "kernel `run_merge`, stable_sort (outside Spark)",
    "spark_merge": "(b) Strata merge as a Spark Connect job (`submit_merges`, 1 spec), warm",
    "duckdb": "(c) DuckDB `COPY ... ORDER BY`, 2 threads",
    "polars": "(d) Polars scan_parquet + sort + sink_parquet",
    "delta": "(e) delta-rs `optimize.z_order` (optimize only)",
    "spark_naive": "(f) Spark `repartition(1).sortWithinPartitions`",
    "spark_merge_range": "prototype: the same merge submitted as `spark.range(n, numPartitions=n).mapInArrow`",
}
GOALS = {
    "kernel_vs_floor": 1.2,
    "spark_vs_floor": 1.6,
    "rows_per_sec_4_jobs": 5_000_000,
    "peak_rss_per_job": 1 << 30,
    "output_vs_input": 0.8,
}


def writer_options(schema, writer: str = "strata") -> dict[str, Any]:
    """Keyword arguments of pq.write_table (besides the row-group size, ROW_GROUP). "strata": Strata's own,
    strata_core.splitfile.writer.split_writer_options with PARQUET (what encode_split writes: zstd, statistics,
    no Arrow schema, floats without dictionary), so the inputs, the floor and the merge output are written alike;
    "pyarrow": the same but with pyarrow's default dictionaries (on every column)."""
    from strata_core.splitfile.writer import split_writer_options

    options = split_writer_options(schema, PARQUET)
    if writer == "pyarrow":
        options["use_dictionary"] = True
    return options


def write_parquet(table, path: Path, writer: str = "strata") -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=ROW_GROUP, **writer_options(table.schema, writer))


def _vocabulary(prefix: str, size: int):
    import pyarrow as pa

    return pa.array([f"{prefix}{i:05d}" for i in range(size)])


def generate_split(rows: int, rng):
    """`rows` metrics rows of one 15-minute window (from `rng`, a numpy Generator), sorted by the sort schema:
    metric_name (200 values), host (2,000) and, derived from the host as in real fleets, service (50), env (4),
    region (12) and version (30); an i64 timestamp_secs in the window and a random f64 value."""
    import pyarrow as pa

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
    return table.sort_by([(c, "ascending") for c in SORT_COLUMNS])


def generate_dataset(directory: Path, rows: int, splits: int, seed: int) -> list[Path]:
    """`splits` sorted splits of rows/splits rows each (generate_split, one random sequence from `seed`),
    written the way Strata writes splits (writer_options "strata"); reused if `directory` already holds them."""
    import numpy as np

    directory.mkdir(parents=True, exist_ok=True)
    existing = splits_of(directory)
    if len(existing) == splits:
        return existing
    rng = np.random.default_rng(seed)
    paths = []
    for index in range(splits):
        path = directory / f"split_{index:03d}.parquet"
        write_parquet(generate_split(rows // splits, rng), path)
        paths.append(path)
    return paths


def splits_of(directory: Path) -> list[Path]:
    return sorted(directory.glob("split_*.parquet"))


def parquet_bytes(path: Path) -> int:
    """Bytes of the Parquet data files under `path` (Spark/Delta side files such as _SUCCESS, .crc and the
    Delta log are not counted)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*.parquet") if f.is_file() and "_delta_log" not in f.parts)


def merge_spec(paths: list[Path], out_dir: Path, job_id: str):
    """A MergeSpec over `paths` with the index defaults' targets (10M rows, 256 MiB: one output here)."""
    from strata_core.domain.index_config import MergePolicyConfig
    from strata_jobs.merge import MergeInput, MergeSpec

    policy = MergePolicyConfig()
    return MergeSpec(
        job_id=job_id, fencing_token=1,
        inputs=[MergeInput(f"{p.parent.name}-{p.stem}", p.resolve().as_uri()) for p in paths],
        sort_schema=SORT_SCHEMA, timestamp_field="timestamp_secs", timestamp_is_seconds=True,
        output_uri_prefix=out_dir.resolve().as_uri(), target_split_num_rows=policy.target_split_num_rows,
        target_split_size_bytes=policy.target_split_size_bytes, parquet=PARQUET,
        index_uid="bench-merge:01", source_id="bench", partition_id="tenant", doc_mapping_uid="bench",
        window_start=WINDOW_START, window_duration_secs=900, num_merge_ops=1, generation=1,
        root_split_ids=[f"{p.parent.name}-{p.stem}" for p in paths],
    )


# ------------------------------------------------------------------------------------------------------------
# Local methods, one per fresh subprocess (`python -m bench.bench_merge --child TASK ...`).


def _child(task: str, data_dir: Path, out_dir: Path) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = splits_of(data_dir)
    strings = STRING_COLUMNS
    out_dir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {}
    action = None
    if task == "floor":

        def action() -> None:
            tables = [pq.ParquetFile(p, read_dictionary=strings).read(use_threads=True) for p in paths]
            table = pa.concat_tables(tables)
            del tables
            write_parquet(table, out_dir / "floor.parquet")

    elif task == "stable_sort":
        from strata_jobs.merge import run_merge

        def action() -> None:
            result = run_merge(merge_spec(paths, out_dir, f"bench-{task}"))
            report.update(stats=result.stats, rows=result.output_rows)

    elif task == "duckdb":
        import duckdb

        connection = duckdb.connect()
        connection.execute("SET threads = 2")
        files = ", ".join(f"'{p}'" for p in paths)

        def action() -> None:
            connection.execute(
                f"COPY (SELECT * FROM read_parquet([{files}]) ORDER BY {', '.join(SORT_COLUMNS)}) "
                f"TO '{out_dir / 'duckdb.parquet'}' (FORMAT parquet, COMPRESSION zstd, "
                f"COMPRESSION_LEVEL {ZSTD_LEVEL}, ROW_GROUP_SIZE {ROW_GROUP})"
            )

    elif task == "polars":
        import polars as pl

        report["threads"] = pl.thread_pool_size()

        def action() -> None:
            pl.scan_parquet([str(p) for p in paths]).sort(SORT_COLUMNS).sink_parquet(
                out_dir / "polars.parquet", compression="zstd", compression_level=ZSTD_LEVEL,
                row_group_size=ROW_GROUP)

    elif task == "delta":
        from deltalake import DeltaTable, WriterProperties, write_deltalake

        properties = WriterProperties(compression="ZSTD", compression_level=ZSTD_LEVEL, max_row_group_size=ROW_GROUP)
        table_dir = out_dir / "delta"
        for p in paths:  # one Delta file per split, as the splits would land; untimed
            write_deltalake(str(table_dir), pq.ParquetFile(p).read(), mode="append", writer_properties=properties)
        report["input_files"] = len(DeltaTable(str(table_dir)).file_uris())

        def action() -> None:
            metrics = DeltaTable(str(table_dir)).optimize.z_order(SORT_COLUMNS, writer_properties=properties)
            report["metrics"] = {k: metrics.get(k) for k in ("numFilesAdded", "numFilesRemoved")}

    else:
        raise ValueError(f"unknown task {task!r}")

    reset_peak_rss()
    before = peak_rss_bytes()
    started = time.perf_counter()
    action()
    seconds = time.perf_counter() - started
    peak = peak_rss_bytes()
    if task == "delta":
        from deltalake import DeltaTable

        output_bytes = sum(Path(u.removeprefix("file://")).stat().st_size
                           for u in DeltaTable(str(out_dir / "delta")).file_uris())
    else:
        output_bytes = parquet_bytes(out_dir)
    return {"task": task, "seconds": seconds, "peak_rss": peak, "rss_before": before,
            "output_bytes": output_bytes, **report}


def run_child(task: str, data_dir: Path, out_dir: Path) -> dict[str, Any]:
    env = dict(os.environ)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.bench_merge", "--child", task, "--data-dir", str(data_dir),
             "--out-dir", str(out_dir)],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{task} failed ({done.returncode}):\n{done.stderr[-4000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------------
# Spark Python worker memory: VmHWM of every python process of the server's session.


def _python_members(session_pid: int) -> list[int]:
    from strata_services.local.processes import session_members

    pids = []
    for pid in session_members(session_pid):
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith("python"):
            pids.append(pid)
    return pids


class WorkerMemory:
    """Samples the peak RSS (VmHWM) of the Spark server's Python processes (pyspark.daemon and the workers it
    forks) every `interval` s between start() and stop(); peaks are reset at start() so a reused worker
    reports this run only."""

    def __init__(self, server_pid: int, interval: float = 0.05) -> None:
        self.server_pid = server_pid
        self.interval = interval
        self.peaks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        for pid in _python_members(self.server_pid):
            try:
                self.peaks[pid] = max(self.peaks.get(pid, 0), peak_rss_bytes(pid))
            except OSError:
                pass

    def start(self) -> None:
        self.peaks = {}
        for pid in _python_members(self.server_pid):
            reset_peak_rss(pid)
        self._stop.clear()

        def loop() -> None:
            while not self._stop.is_set():
                self._sample()
                self._stop.wait(self.interval)

        self._thread = threading.Thread(target=loop, name="worker-memory", daemon=True)
        self._thread.start()

    def stop(self) -> dict[int, int]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        return dict(self.peaks)


def _ppid(pid: int) -> int:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return int(raw[raw.rfind(")") + 2:].split()[1])


def _daemon_pids(server_pid: int) -> set[int]:
    """The pyspark.daemon process(es): python members whose parent is not python (the JVM started them). The
    workers are forked from the daemon (same command line) and are the daemon's children."""
    members = set(_python_members(server_pid))
    out = set()
    for pid in members:
        try:
            if _ppid(pid) not in members:
                out.add(pid)
        except OSError:
            continue
    return out


class SparkBench:
    def __init__(self, server, spark, workdir: Path) -> None:
        self.server = server
        self.spark = spark
        self.workdir = workdir
        self.counter = 0

    def _out(self, name: str) -> Path:
        self.counter += 1
        return self.workdir / f"{name}-{self.counter}"

    def merge(self, datasets: list[list[Path]], label: str, submit=None) -> dict[str, Any]:
        """One submit_merges call with one spec per dataset; wall time, kernel time, worker peaks."""
        from strata_jobs.spark_merge import submit_merges

        submit = submit or submit_merges
        outs = [self._out(f"spark-merge-{label}-{i}") for i in range(len(datasets))]
        specs = [merge_spec(paths, out, f"{label}-{self.counter}-{i}") for i, (paths, out) in
                 enumerate(zip(datasets, outs, strict=True))]
        memory = WorkerMemory(self.server.pid)
        memory.start()
        try:
            started = time.perf_counter()
            outcomes = submit(self.spark, specs, f"bench-merge-{label}-{self.counter}")
            seconds = time.perf_counter() - started
        finally:
            peaks = memory.stop()
        try:
            failed = [o for o in outcomes if o.result is None]
            if failed:
                raise RuntimeError(f"spark merge failed: {failed[0].error}")
            daemons = _daemon_pids(self.server.pid)
            worker_peaks = sorted((v for pid, v in peaks.items() if pid not in daemons), reverse=True)
            return {
                "seconds": seconds,
                "rows": sum(o.result.output_rows for o in outcomes),
                "kernel_seconds": [o.result.stats["timings"]["total"] for o in outcomes],
                "output_bytes": sum(parquet_bytes(out) for out in outs),
                "worker_peaks": worker_peaks,
                "daemon_peak": max((v for pid, v in peaks.items() if pid in daemons), default=0),
                "stats": outcomes[0].result.stats,
            }
        finally:
            for out in outs:
                shutil.rmtree(out, ignore_errors=True)

    def naive(self, paths: list[Path]) -> dict[str, Any]:
        """(f), with Spark's default (vectorized) Parquet reader."""
        out = self._out("spark-naive")
        try:
            started = time.perf_counter()
            (self.spark.read.parquet(*[str(p) for p in paths]).repartition(1)
             .sortWithinPartitions(*SORT_COLUMNS).write.mode("overwrite")
             .option("compression", "zstd")
             .option("parquet.compression.codec.zstd.level", str(ZSTD_LEVEL))
             .option("parquet.block.row.count.limit", str(ROW_GROUP))
             .parquet(str(out)))
            seconds = time.perf_counter() - started
            return {"seconds": seconds, "output_bytes": parquet_bytes(out)}
        finally:
            shutil.rmtree(out, ignore_errors=True)


def submit_merges_range(spark, specs: list, operation_tag: str) -> list:
    """Prototype (bench-only) of strata_jobs.spark_merge.submit_merges without createDataFrame and without
    repartitionByRange (which runs a sampling job to find its range bounds before the real one): the specs
    travel inside the pickled function and `spark.range(n, numPartitions=n)` gives one id, so one merge, per
    task."""
    from strata_jobs.merge import result_from_json, spec_to_json
    from strata_jobs.spark_merge import MergeOutcome
    from strata_jobs.spark_tasks import RESULT_SCHEMA

    payload = [spec_to_json(s) for s in specs]

    def merge_by_id(batches):  # nested: pickled by value, imports resolved in the worker
        import pyarrow as pa

        from strata_jobs.merge import result_to_json, run_merge, spec_from_json

        for batch in batches:
            for i in batch.column("id").to_pylist():
                spec = spec_from_json(payload[i])
                try:
                    result_json, error = result_to_json(run_merge(spec)), None
                except Exception as exc:  # noqa: BLE001 - returned as data, as submit_merges does
                    result_json, error = None, f"{type(exc).__name__}: {exc}"
                yield pa.RecordBatch.from_pydict({"job_id": [spec.job_id], "ok": [error is None],
                                                  "result": [result_json], "error": [error]})

    frame = spark.range(0, len(specs), 1, len(specs)).mapInArrow(merge_by_id, RESULT_SCHEMA)
    spark.addTag(operation_tag)
    try:
        collected = frame.collect()
    finally:
        spark.removeTag(operation_tag)
    return [MergeOutcome(r["job_id"], result_from_json(r["result"]) if r["ok"] else None, r["error"])
            for r in collected]


# ------------------------------------------------------------------------------------------------------------
# The ADR's compression experiment.


def _column_bytes(path: Path) -> dict[str, int]:
    import pyarrow.parquet as pq

    metadata = pq.read_metadata(path)
    out: dict[str, int] = {}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            out[column.path_in_schema] = out.get(column.path_in_schema, 0) + column.total_compressed_size
    return out


def compression_experiment(datasets: dict[int, list[Path]], first: int, workdir: Path, seed: int = 3
                           ) -> dict[str, Any]:
    """The rows of the first dataset written as one file sorted by the sort schema vs in random order; and every
    dataset's separately sorted splits re-encoded with the same writer. Both writers of writer_options: Strata's
    (encode_split's options) and the same with pyarrow's default dictionaries (on every column)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.concat_tables([pq.ParquetFile(p).read() for p in datasets[first]])
    out: dict[str, Any] = {"rows": table.num_rows, "first": first}
    orders = {
        "sorted": lambda: table.sort_by([(c, "ascending") for c in SORT_COLUMNS]),
        "random": lambda: table.take(pa.array(np.random.default_rng(seed).permutation(table.num_rows))),
    }
    for writer in ("strata", "pyarrow"):
        found: dict[str, Any] = {}
        for name, make in orders.items():
            path = workdir / f"compression-{writer}-{name}.parquet"
            write_parquet(make(), path, writer)
            found[name] = {"bytes": path.stat().st_size, "columns": _column_bytes(path)}
            path.unlink()
        for fan_in, paths in datasets.items():
            total = 0
            columns: dict[str, int] = {}
            for p in paths:
                path = workdir / f"compression-{writer}-split.parquet"
                write_parquet(pq.ParquetFile(p).read(), path, writer)
                total += path.stat().st_size
                for column, size in _column_bytes(path).items():
                    columns[column] = columns.get(column, 0) + size
                path.unlink()
            found[f"splits{fan_in}"] = {"bytes": total, "columns": columns}
        out[writer] = found
    return out


# ------------------------------------------------------------------------------------------------------------
# Gather vs run slices (--crossover): how strata_jobs.merge.RUNS_MIN_MEAN_LENGTH was chosen. Printed only.


def _median_seconds(action, repeats: int = 3) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def crossover(data_dir: Path, rows: int) -> None:
    """Cutting an output column by gather (`take`) vs by zero-copy run slices, for orders of mean run length L,
    on the 16-split dataset of `rows` rows (generated under `data_dir` unless already there).

    Per column kind: the merge's string codes and fixed-width values are gathered with numpy, which costs about
    the same whatever L is, while slicing costs a Python call per run; variable-width Arrow columns (lists,
    binaries) are copied by Arrow's take, which slicing beats once runs are long enough."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from strata_core.arrow_numpy import to_arrow
    from strata_jobs.merge import union_schema
    from strata_jobs.merge_columns import ColumnBuilder
    from strata_jobs.merge_runs import run_heads

    paths = generate_dataset(data_dir / f"rows{rows}-fanin16", rows, 16, seed=16)
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
    print(f"crossover on {total:,} rows: seconds to cut one whole output column, take vs run slices "
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
            took = _median_seconds(functools.partial(column.take, order, ROW_GROUP))
            sliced = float("nan")
            if length >= 4:
                sliced = _median_seconds(functools.partial(column.slices, starts, lengths, ROW_GROUP))
            cells.append(f"{took:6.3f} / {sliced:6.3f}")
        print(f"  {total / len(heads):10.1f} | " + " | ".join(cells))


# ------------------------------------------------------------------------------------------------------------


def code_version() -> dict[str, str]:
    """The commit and whether the merge code differs from it (others may be editing it while this runs), with a
    short hash of the measured files' contents."""
    import hashlib

    files = sorted((REPO_ROOT / "spark-jobs" / "src" / "strata_jobs").glob("*.py")) + [
        REPO_ROOT / "shared" / "core" / "src" / "strata_core" / "splitfile" / "writer.py"]
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:12]

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    dirty = git("status", "--short", "--", "spark-jobs", "shared/core/src/strata_core/splitfile")
    return {"commit": git("rev-parse", "--short", "HEAD"), "dirty": dirty.replace("\n", "; "), "digest": digest}


def _start_spark(workdir: Path):
    from strata_core.config import Settings
    from strata_services.local.processes import free_port
    from strata_services.local.spark_server import LocalSparkConnectServer

    settings = Settings()
    server = LocalSparkConnectServer(free_port(), master=settings.spark_master,
                                     driver_memory=settings.spark_driver_memory, work_dir=workdir)
    return server


def run(stack: Stack, *, rows: int = 4_000_000, runs: int = 5, fan_ins: tuple[int, ...] = (16, 64),
        parallel: int = 4, parallel_runs: int | None = None) -> dict[str, Any]:
    from pyspark.sql.connect.session import SparkSession

    version_before = code_version()
    root = stack.path("merge")
    out_root = stack.path("merge-out")
    started = time.perf_counter()
    datasets = {f: generate_dataset(root / f"w0-fanin{f}", rows, f, seed=f) for f in fan_ins}
    # The four-at-once run: four distinct windows of the first fan-in's shape.
    windows = [datasets[fan_ins[0]]] + [generate_dataset(root / f"w{k}-fanin{fan_ins[0]}", rows, fan_ins[0],
                                                         seed=1000 * k + fan_ins[0]) for k in range(1, parallel)]
    generate_secs = time.perf_counter() - started
    input_bytes = {f: sum(p.stat().st_size for p in ps) for f, ps in datasets.items()}
    print(f"[merge] data generated in {generate_secs:.1f} s: "
          + ", ".join(f"{f} splits {fmt_bytes(b)}" for f, b in input_bytes.items()), flush=True)

    compression = compression_experiment(datasets, fan_ins[0], out_root)
    print(f"[merge] compression (strata writer): sorted {compression['strata']['sorted']['bytes']:,} random "
          f"{compression['strata']['random']['bytes']:,}", flush=True)

    samples: dict[int, dict[str, list[dict[str, Any]]]] = {f: {t: [] for t in (*LOCAL_TASKS, *SPARK_TASKS)}
                                                         for f in fan_ins}
    cold: dict[str, Any] = {}
    parallel_samples: list[dict[str, Any]] = []
    server = _start_spark(stack.path("spark-connect"))
    spark = None
    try:
        server.start()
        t0 = time.perf_counter()
        version = server.wait_ready(timeout=180)
        server_ready_secs = time.perf_counter() - t0
        spark = SparkSession.builder.remote(server.remote).create()
        master = spark.conf.get("spark.master")
        bench = SparkBench(server, spark, out_root)
        first = fan_ins[0]
        cold["spark_merge"] = bench.merge([datasets[first]], "cold")
        cold["spark_naive"] = bench.naive(datasets[first])
        print(f"[merge] spark {version} master {master}: ready in {server_ready_secs:.1f} s, cold merge "
              f"{cold['spark_merge']['seconds']:.2f} s, cold naive {cold['spark_naive']['seconds']:.2f} s",
              flush=True)
        for repeat in range(runs):
            for fan_in in fan_ins:
                paths = datasets[fan_in]
                data_dir = paths[0].parent
                for task in LOCAL_TASKS:
                    sample = run_child(task, data_dir, out_root / f"{task}-{fan_in}-{repeat}")
                    samples[fan_in][task].append(sample)
                samples[fan_in]["spark_merge"].append(bench.merge([paths], f"one-{fan_in}"))
                samples[fan_in]["spark_naive"].append(bench.naive(paths))
                samples[fan_in]["spark_merge_range"].append(
                    bench.merge([paths], f"range-{fan_in}", submit=submit_merges_range))
                print(f"[merge] repeat {repeat + 1}/{runs}, {fan_in} splits: "
                      + ", ".join(f"{t} {samples[fan_in][t][-1]['seconds']:.2f}" for t in samples[fan_in]),
                      flush=True)
        cold["parallel"] = bench.merge(windows, f"par{parallel}-cold")
        for repeat in range(parallel_runs or runs):
            parallel_samples.append(bench.merge(windows, f"par{parallel}"))
            last = parallel_samples[-1]
            print(f"[merge] {parallel} jobs at once, run {repeat + 1}: {last['seconds']:.2f} s, "
                  f"{last['rows'] / last['seconds']:,.0f} rows/s, worker peaks "
                  f"{[fmt_bytes(p) for p in last['worker_peaks']]}", flush=True)
    finally:
        if spark is not None:
            try:
                spark.stop()
            except Exception:  # noqa: BLE001 - the server goes down next anyway
                pass
        server.stop()
        shutil.rmtree(out_root, ignore_errors=True)

    import deltalake
    import duckdb
    import polars
    import pyspark

    result = {
        "code": {"before": version_before, "after": code_version()},
        "rows": rows,
        "runs": runs,
        "fan_ins": list(fan_ins),
        "parallel": parallel,
        "input_bytes": input_bytes,
        "generate_secs": generate_secs,
        "compression": compression,
        "samples": samples,
        "cold": cold,
        "parallel_samples": parallel_samples,
        "spark": {"version": version, "master": master, "ready_secs": server_ready_secs},
        "versions": {"duckdb": duckdb.__version__, "polars": polars.__version__,
                     "deltalake": deltalake.__version__, "pyspark": pyspark.__version__},
    }
    save_result(result)
    return result


def save_result(result: dict[str, Any]) -> Path:
    """The raw numbers, kept under bench/.data/ (gitignored) so the section can be rendered again."""
    path = DATA_DIR / f"last-{SECTION}.json"
    path.write_text(json.dumps(result, default=str))
    return path


def load_result(path: Path) -> dict[str, Any]:
    result = json.loads(path.read_text())
    for key in ("samples", "input_bytes"):
        result[key] = {int(k): v for k, v in result[key].items()}
    return result


# ------------------------------------------------------------------------------------------------------------


def _med(values: list[float]) -> float:
    return median(values) if values else float("nan")


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _runs_text(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Medians per dataset and method, and the goal checks."""
    out: dict[str, Any] = {}
    for fan_in in result["fan_ins"]:
        per = result["samples"][fan_in]
        floor = _med([s["seconds"] for s in per["floor"]])
        rows = {}
        for task, samples in per.items():
            seconds = [s["seconds"] for s in samples]
            rows[task] = {
                "median": _med(seconds),
                "runs": seconds,
                "vs_floor": _med(seconds) / floor,
                "output_bytes": _med([s["output_bytes"] for s in samples]),
                "peak_rss": max((s.get("peak_rss", 0) for s in samples), default=0),
                "worker_peak": max((max(s.get("worker_peaks") or [0]) for s in samples), default=0),
            }
        out[fan_in] = rows
    return out


def _code_text(code: dict[str, Any] | None) -> str:
    if not code:
        return ""
    before, after = code["before"], code["after"]
    text = (f"Code measured: commit {before['commit']}"
            + (f" with local changes ({before['dirty']})" if before["dirty"] else "")
            + f"; strata_jobs/*.py + splitfile/writer.py content hash {before['digest']}")
    if after["digest"] != before["digest"]:
        text += (f", **changed during the run** (hash {after['digest']} at the end, commit {after['commit']}): "
                 "the runs may mix two versions")
    return text + "."


def render(result: dict[str, Any]) -> str:
    rows_total = result["rows"]
    fan_ins = result["fan_ins"]
    summary = summarize(result)
    cold = result["cold"]
    spark = result["spark"]
    parallel = result["parallel_samples"]
    n_par = result["parallel"]
    lines = [
        f"## Compaction: sorted merge of one window of {fmt_int(rows_total)} rows",
        "",
        f"{fmt_int(rows_total)} metrics-like rows of one 15-minute window (metric_name 200 values, host 2,000 and, "
        "derived from the host, service 50, env 4, region 12, version 30; i64 timestamp_secs; random f64 value), "
        "generated by `bench.bench_merge.generate_split` and written with `encode_split`'s options "
        "(`split_writer_options`: floats without dictionary; the floor writes with them too), as "
        + " and as ".join(f"{f} sorted splits of {fmt_int(rows_total // f)} rows "
                          f"({fmt_bytes(result['input_bytes'][f])})" for f in fan_ins)
        + ", sorted by metric_name,service,host,timestamp_secs, zstd 3, 128k-row row groups. Median of "
        f"{result['runs']} runs per method, the methods alternating on every run; local methods each in a fresh "
        "subprocess (peak RSS = its VmHWM during the timed part). Spark: a local Spark Connect server "
        f"(`LocalSparkConnectServer`, Spark {spark['version']}, master **{spark['master']}**, driver 2g), "
        f"ready {spark['ready_secs']:.1f} s after start; the merge is `strata_jobs.spark_merge.submit_merges` "
        "with one MergeSpec (index default targets: one output file). Spark worker memory is the VmHWM of the "
        "server's Python worker processes, sampled from /proc every 50 ms and reset before each run. "
        f"Library versions: DuckDB {result['versions']['duckdb']}, Polars {result['versions']['polars']}, "
        f"delta-rs {result['versions']['deltalake']}, pyspark {result['versions']['pyspark']}.",
        "",
        _code_text(result.get("code")),
        "",
    ]
    for fan_in in fan_ins:
        rows = summary[fan_in]
        inputs = result["input_bytes"][fan_in]
        lines += [
            f"### {fan_in} splits of {fmt_int(rows_total // fan_in)} rows ({fmt_bytes(inputs)})",
            "",
            "| method | median | x floor | runs (s) | peak RSS | output | output / input |",
            "|---|---|---|---|---|---|---|",
        ]
        for task in ("floor", "stable_sort", "spark_merge", "duckdb", "polars", "delta", "spark_naive",
                     "spark_merge_range"):
            r = rows[task]
            if task in ("spark_merge", "spark_merge_range"):
                peak = f"{fmt_bytes(r['worker_peak'])} (Python worker)"
            elif task == "spark_naive":
                peak = "(JVM)"
            else:
                peak = fmt_bytes(r["peak_rss"])
            lines.append(
                f"| {LABELS[task]} | {fmt_s(r['median'])} | {r['vs_floor']:.2f} | {_runs_text(r['runs'])} | {peak} | "
                f"{fmt_bytes(r['output_bytes'])} | {r['output_bytes'] / inputs:.2f} |"
            )
        per = result["samples"][fan_in]
        kernel_in_spark = _med([s["kernel_seconds"][0] for s in per["spark_merge"]])
        overhead = _med([s["seconds"] - s["kernel_seconds"][0] for s in per["spark_merge"]])
        overhead_range = _med([s["seconds"] - s["kernel_seconds"][0] for s in per["spark_merge_range"]])
        lines += [
            "",
            f"Inside the Spark job the kernel itself took {fmt_s(kernel_in_spark)} (median of its own `total`); "
            f"the rest of the {fmt_s(rows['spark_merge']['median'])} is Spark Connect submission, task "
            f"scheduling and the Python worker round trip: median {fmt_s(overhead)} per submission with "
            f"`submit_merges`, {fmt_s(overhead_range)} with the `spark.range` prototype.",
            "",
        ]
        for task in ("stable_sort",):
            stages = [s["stats"]["timings"] for s in per[task]]
            keys = list(stages[0])
            text = ", ".join(f"{k} {statistics.median(t.get(k, 0.0) for t in stages):.3f}" for k in keys)
            last = per[task][-1]["stats"]
            lines.append(
                f"- kernel {task} stages (median s): {text}; key {last['key_bits']} bits, "
                f"{fmt_int(last['num_runs'])} runs (mean length {last['mean_run_length']}), build "
                f"{last['build_method']}, peak estimate {fmt_bytes(last['peak_bytes_estimate'])}."
            )
        lines.append("")
    first = fan_ins[0]
    lines += [
        "### Cold start and parallel merges",
        "",
        f"- Cold: the first `submit_merges` after the server was ready ({first} splits) took "
        f"**{fmt_s(cold['spark_merge']['seconds'])}** (kernel {fmt_s(cold['spark_merge']['kernel_seconds'][0])}; "
        "the Python worker is forked and imports on first use); the first naive Spark write took "
        f"{fmt_s(cold['spark_naive']['seconds'])}; the first {n_par}-at-once run took "
        f"{fmt_s(cold['parallel']['seconds'])}. Warm figures exclude these.",
    ]
    par_secs = [s["seconds"] for s in parallel]
    par_rows = parallel[0]["rows"] if parallel else 0
    par_rate = par_rows / _med(par_secs) if parallel else 0.0
    par_peak = max((max(s["worker_peaks"] or [0]) for s in parallel), default=0)
    par_workers = max((len(s["worker_peaks"]) for s in parallel), default=0)
    if parallel:
        kernels = [k for s in parallel for k in s["kernel_seconds"]]
        lines.append(
            f"- {n_par} window merges at once ({n_par} distinct windows of {first} splits, {fmt_int(par_rows)} rows, "
            f"one `submit_merges` call with {n_par} specs = one Spark job of {n_par} tasks on {spark['master']}): "
            f"median **{fmt_s(_med(par_secs))}** (runs {_runs_text(par_secs)}), **{par_rate / 1e6:.2f}M rows/s**; "
            f"each task's kernel {fmt_s(min(kernels))}–{fmt_s(max(kernels))}; {par_workers} Python worker "
            f"processes, the largest peak RSS {fmt_bytes(par_peak)}."
        )
    lines.append("")

    # Goals.
    one_peak = max(summary[f]["spark_merge"]["worker_peak"] for f in fan_ins)
    goals = ["### Goals", "", "| goal | measured | verdict |", "|---|---|---|"]
    for fan_in in fan_ins:
        r = summary[fan_in]
        for task in ("stable_sort",):
            goals.append(f"| kernel {task} within {GOALS['kernel_vs_floor']}x the floor ({fan_in} splits) | "
                         f"{r[task]['vs_floor']:.2f}x | {_verdict(r[task]['vs_floor'] <= GOALS['kernel_vs_floor'])} |")
        goals.append(f"| (b) one warm Spark job within {GOALS['spark_vs_floor']}x the floor ({fan_in} splits) | "
                     f"{r['spark_merge']['vs_floor']:.2f}x ({fmt_s(r['spark_merge']['median'])} vs "
                     f"{fmt_s(r['floor']['median'])}) | "
                     f"{_verdict(r['spark_merge']['vs_floor'] <= GOALS['spark_vs_floor'])} |")
        others = {t: r[t]["median"] for t in ("duckdb", "polars", "delta", "spark_naive")}
        slower = [t for t, v in others.items() if v <= r["spark_merge"]["median"]]
        goals.append(f"| (b) faster than each of (c) DuckDB, (d) Polars, (e) delta-rs, (f) naive Spark ({fan_in} "
                     f"splits) | (b) {fmt_s(r['spark_merge']['median'])} vs "
                     + ", ".join(f"{t} {fmt_s(v)}" for t, v in others.items())
                     + f" | {_verdict(not slower)}" + (f" (not faster than {', '.join(slower)})" if slower else "")
                     + " |")
        out_ratio = r["stable_sort"]["output_bytes"] / result["input_bytes"][fan_in]
        goals.append(f"| merged output at most {GOALS['output_vs_input']}x the inputs' bytes ({fan_in} splits) | "
                     f"{out_ratio:.2f}x ({fmt_bytes(r['stable_sort']['output_bytes'])} / "
                     f"{fmt_bytes(result['input_bytes'][fan_in])}) | "
                     f"{_verdict(out_ratio <= GOALS['output_vs_input'])} |")
    goals.append(f"| {n_par} window merges at once: at least {GOALS['rows_per_sec_4_jobs'] / 1e6:.0f}M rows/s | "
                 f"{par_rate / 1e6:.2f}M rows/s | {_verdict(par_rate >= GOALS['rows_per_sec_4_jobs'])} |")
    worst_peak = max(one_peak, par_peak)
    goals.append(f"| peak memory at most 1 GiB per {fmt_int(rows_total)}-row job (Spark Python worker VmHWM) | "
                 f"{fmt_bytes(one_peak)} one job at a time, {fmt_bytes(par_peak)} with {n_par} at once | "
                 f"{_verdict(worst_peak <= GOALS['peak_rss_per_job'])} |")
    lines += goals
    lines.append("")

    comp = result["compression"]
    lines += [
        "### Compression (the ADR's experiment)",
        "",
        f"The {fmt_int(comp['rows'])} rows of the {comp['first']}-split dataset written as one file sorted by the sort "
        "schema and in random order, and each dataset's separately sorted splits re-encoded, all with the same "
        "writer (zstd 3, 128k-row row groups, statistics): Strata's (`encode_split`: floats without dictionary) and "
        "the same with pyarrow's default dictionaries (on every column).",
        "",
        "| writer | random order | one sorted file | random / sorted | "
        + " | ".join(f"{f} sorted splits | splits / one file" for f in fan_ins) + " |",
        "|---|---|---|---|" + "---|---|" * len(fan_ins),
    ]
    for writer, label in (("strata", "Strata (`encode_split` options)"), ("pyarrow", "dictionary on every column")):
        found = comp[writer]
        sorted_b, random_b = found["sorted"]["bytes"], found["random"]["bytes"]
        cells = [f"{fmt_bytes(found[f'splits{f}']['bytes'])} | {found[f'splits{f}']['bytes'] / sorted_b:.2f}x"
                 for f in fan_ins]
        lines.append(f"| {label} | {fmt_bytes(random_b)} | {fmt_bytes(sorted_b)} | {random_b / sorted_b:.2f}x | "
                     + " | ".join(cells) + " |")
    merged = {f: summary[f]["stable_sort"]["output_bytes"] for f in fan_ins}
    lines += [
        "",
        "Strata's merge output (the kernel's file, with its kv metadata): "
        + ", ".join(f"{fmt_bytes(merged[f])} from the {f} splits ({merged[f] / result['input_bytes'][f]:.2f}x their "
                    f"{fmt_bytes(result['input_bytes'][f])})" for f in fan_ins)
        + ".",
        "",
        "Per column, Strata's writer (compressed bytes over all row groups):",
        "",
        "| column | random order | sorted | random / sorted | "
        + " | ".join(f"{f} splits | splits / sorted" for f in fan_ins) + " |",
        "|---|---|---|---|" + "---|---|" * len(fan_ins),
    ]
    found = comp["strata"]
    for column, rnd in found["random"]["columns"].items():
        srt = max(found["sorted"]["columns"].get(column, 0), 1)
        cells = [f"{fmt_bytes(found[f'splits{f}']['columns'].get(column, 0))} | "
                 f"{found[f'splits{f}']['columns'].get(column, 0) / srt:.2f}x" for f in fan_ins]
        lines.append(f"| {column} | {fmt_bytes(rnd)} | {fmt_bytes(srt)} | {rnd / srt:.2f}x | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fan-in", default="16,64")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    parser.add_argument("--render-from", type=Path, default=None,
                        help="print the section from a saved bench/.data/last-merge.json, run nothing")
    parser.add_argument("--crossover", action="store_true",
                        help="only time gather vs run slices on the 16-split dataset of --rows rows (printed)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="--crossover: generate (or reuse) the dataset here instead of a temporary directory")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.data_dir, args.out_dir)))
        return
    if args.render_from:
        print(render(load_result(args.render_from)))
        return
    if args.crossover:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        root = args.data_dir or Path(tempfile.mkdtemp(prefix="merge-crossover-", dir=DATA_DIR))
        try:
            crossover(root, args.rows)
        finally:
            if args.data_dir is None:
                shutil.rmtree(root, ignore_errors=True)
        return
    from bench.report import run_and_write

    fan_ins = tuple(int(f) for f in args.fan_in.split(","))
    run_and_write(
        {SECTION: lambda stack: render(run(stack, rows=args.rows, runs=args.runs, fan_ins=fan_ins,
                                           parallel=args.parallel))},
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
