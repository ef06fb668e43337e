"""NDJSON / JSON-document encoding of a query result: the per-row encoder (to_pylist, a dict and `_plain` per
row, json.dumps per row; query-api before the column-wise encoder) against the column-wise one
(strata_query.execution.json_encoding: Arrow compute kernels per column, rows joined element-wise).

The result is TSBS high-cpu-all's shape, built in memory: 41,630 rows x 13 columns (`time` timestamp(us, UTC),
`hostname` and three more string tags, `usage_user` .. `usage_guest_nice` float64 in [0, 100), one a null in
fifty). Both encoders turn the same ResultStream into the bytes the API sends; every run checks they are the same
bytes. Timed: median of alternating runs (old, new, old, new, ...) after one warm-up of each.

    uv run python -m bench.bench_json_encoding [--runs N] [--no-write]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from bench.common import fmt_int, machine_facts, median
from bench.per_row_json import reference_json, reference_ndjson
from bench.report import invocation, update_sections
from strata_query.execution.formats import json_stream, ndjson_stream
from strata_query.execution.local_query import RESULT_BATCH_ROWS
from strata_query.execution.result_stream import ResultStream

ROWS = 41_630
USAGE = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq",
         "usage_steal", "usage_guest", "usage_guest_nice"]


def tsbs_table(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(42)
    hosts = rows // 10
    start = int(datetime(2016, 1, 1, tzinfo=UTC).timestamp()) * 1_000_000
    columns: dict[str, pa.Array] = {
        "time": pa.array(start + (np.arange(rows) // hosts) * 10_000_000 + rng.integers(0, 1000, rows) * 1000,
                         pa.timestamp("us", "UTC")),
        "hostname": pa.array([f"host_{i % hosts}" for i in range(rows)]),
        "region": pa.array([["us-east-1", "eu-west-1", "ap-south-1"][i % 3] for i in range(rows)]),
    }
    for name in USAGE:
        values = rng.random(rows) * 100
        columns[name] = pa.array(values, mask=rng.random(rows) < 0.02)
    return pa.table(columns)


def _time(encode: Callable[[ResultStream], Iterator[bytes]], table: pa.Table) -> tuple[float, list[bytes]]:
    # Batches as the local engine hands them over (its Arrow reader's RESULT_BATCH_ROWS, 65,536 rows: one here).
    batches = table.to_batches(max_chunksize=RESULT_BATCH_ROWS)
    result = ResultStream(table.schema, iter(batches), lambda: None, None)
    started = time.perf_counter()
    chunks = list(encode(result))
    return time.perf_counter() - started, chunks


def run(runs: int) -> dict[str, tuple[float, float, int]]:
    table = tsbs_table()
    summary = lambda: {"rows": ROWS, "truncated": False}  # noqa: E731
    pairs = {
        "NDJSON": (reference_ndjson, ndjson_stream),
        "JSON document": (lambda r: reference_json(r, "q", summary), lambda r: json_stream(r, "q", summary)),
    }
    out = {}
    for label, (old, new) in pairs.items():
        old_times, new_times = [], []
        _time(old, table), _time(new, table)  # warm-up
        size = 0
        for _ in range(runs):
            t_old, old_chunks = _time(old, table)
            t_new, new_chunks = _time(new, table)
            assert old_chunks == new_chunks, f"{label}: the encoders disagree"
            size = sum(map(len, new_chunks))
            old_times.append(t_old)
            new_times.append(t_new)
        out[label] = (median(old_times), median(new_times), size)
    return out


def section(results: dict[str, tuple[float, float, int]], runs: int) -> str:
    facts = machine_facts()
    lines = [
        "## Result encoding: NDJSON / JSON rows, per-row vs column-wise",
        "",
        f"A TSBS high-cpu-all-shaped result built in memory: {fmt_int(ROWS)} rows x 13 columns (`time` "
        "timestamp(us, UTC), `hostname` and `region` strings, ten float64 `usage_*` with 2% nulls), in one "
        "Arrow batch (the local engine's batches are up to 65,536 rows), encoded by query-api's NDJSON and "
        "JSON-document serializers. *Old*: the per-row encoder (`to_pylist` per column, a dict and `_plain` "
        "per row, `json.dumps` per row). *New*: the "
        "column-wise encoder (`strata_query/execution/json_encoding.py`: each column to JSON texts with Arrow "
        "compute kernels, rows joined element-wise). Every run checks both give the same bytes, chunk for "
        f"chunk. Median of {runs} alternating runs after a warm-up of each.",
        "",
        "| output | bytes | old (per row) | new (column-wise) | old / new |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, (old, new, size) in results.items():
        lines.append(f"| {label} | {fmt_int(size)} | {old * 1e3:.1f} ms | {new * 1e3:.1f} ms | "
                     f"{old / new:.1f}x |")
    lines += [
        "",
        f"_Measured {facts['date']} with `{invocation()}` (from the repository root; uv is `.tools/bin/uv` "
        f"here) on {facts['nproc']} CPUs ({facts['cpu']}), Python {facts['python']}, pyarrow {facts['pyarrow']}; "
        f"load average at start {facts['load_average_at_start']}._",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-write", action="store_true", help="print the section, leave docs/benchmarks.md")
    args = parser.parse_args()
    results = run(args.runs)
    text = section(results, args.runs)
    print(text)
    if not args.no_write:
        update_sections({"json_encoding": text})


if __name__ == "__main__":
    main()
