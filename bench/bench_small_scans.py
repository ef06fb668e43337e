"""Micro-benchmark: the in-process engine's two ways to run a query over a scan assembled as an Arrow table, by the
scan's size (`strata_query.execution.local_query.SMALL_SCAN_ROWS` chooses between them):

- `pool`: the threaded database (`query_local_threads`, 2 here), the SQL built as a relation and read as a stream;
- `one thread`: a single-threaded database, the SQL executed as a statement.

Both register the table on a fresh cursor, as every query does. The table is metrics-like (strings as
dictionaries, as the RAM tier holds them); two queries: a grouped aggregate with a filter (the demo's "two
services" query) and a count with min and max (its "everything" query). Median of `--runs` runs, the two ways
alternating.

    .tools/bin/uv run python -m bench.bench_small_scans [--runs 100]

Printed only: docs/benchmarks.md's section "Small scans on one DuckDB thread" quotes it by hand.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import duckdb
import numpy as np
import pyarrow as pa

SIZES = (16_384, 100_000, 150_000, 300_000, 1_000_000)
QUERIES = {
    "grouped": "SELECT service, count(*) AS n, max(value) AS peak FROM scan "
               "WHERE service IN ('service_03', 'service_17') GROUP BY service ORDER BY service",
    "count": "SELECT count(*) AS n, min(timestamp_secs) AS first_ts, max(timestamp_secs) AS last_ts FROM scan",
}


def scan_table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)

    def strings(prefix: str, count: int) -> pa.Array:
        names = np.array([f"{prefix}{i:04d}" for i in range(count)])
        return pa.array(names[rng.integers(0, count, rows)]).dictionary_encode()

    return pa.table({"service": strings("service_", 20), "host": strings("host-", 200),
                     "timestamp_secs": pa.array(rng.integers(0, 86_400, rows)),
                     "value": pa.array(rng.gamma(2.0, 20.0, rows))})


def run(database: duckdb.DuckDBPyConnection, table: pa.Table, sql: str, statement: bool) -> float:
    started = time.perf_counter()
    cursor = database.cursor()
    cursor.register("scan", table)
    reader = cursor.execute(sql).to_arrow_reader(65_536) if statement else cursor.sql(sql).to_arrow_reader(65_536)
    reader.read_all()
    cursor.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="Arrow output on a DB-API result", category=UserWarning)
    pool = duckdb.connect(config={"threads": 2})
    single = duckdb.connect(config={"threads": 1})
    print(f"[small-scans] load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| scan rows | query | pool, relation p50 | one thread, statement p50 | one thread / pool |")
    print("|---:|---|---:|---:|---:|")
    for rows in SIZES:
        table = scan_table(rows)
        for name, sql in QUERIES.items():
            times: dict[str, list[float]] = {"pool": [], "single": []}
            run(pool, table, sql, False)
            run(single, table, sql, True)
            for _ in range(args.runs if rows <= 300_000 else max(10, args.runs // 5)):
                times["pool"].append(run(pool, table, sql, False))
                times["single"].append(run(single, table, sql, True))
            p50 = {k: statistics.median(v) * 1000 for k, v in times.items()}
            print(f"| {rows:,} | {name} | {p50['pool']:.2f} ms | {p50['single']:.2f} ms | "
                  f"{p50['single'] / p50['pool']:.2f}x |", flush=True)
    print(f"[small-scans] load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
