"""Benchmark 1: ingestion of 1,000,000 metrics-like rows through POST /v1/indexes/{id}/ingest vs plain
pyarrow.

Data: metric_name ~200 values, service ~50, host ~2,000, timestamp_secs (i64) spread over 3 windows of 900 s
that all lie within the last hour (nothing is late), value f64; rows in random order. The API receives one
Arrow IPC stream over real HTTP (uvicorn in a child process) and must cut, sort, encode and register one split
per window.

Baseline, same run, same table, in this process: window per row, pyarrow.compute.sort_indices by (window,
metric_name, service, host, timestamp_secs), take, one zstd Parquet file per window (row groups of 131,072
rows, level 3, statistics on: the API's writer options, but with pyarrow's default dictionaries on every
column where the API leaves floats without) written to local disk. Runs alternate API/baseline; the medians
and their ratio are reported. Goal: API at most 1.3x the baseline.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from bench.common import fmt_bytes, fmt_int, fmt_s, median, metrics_index_config
from bench.harness import Stack, peak_rss_bytes, reset_peak_rss, rss_bytes
from strata_core.domain.index_config import ParquetConfig
from strata_core.splitfile.writer import split_writer_options

SECTION = "ingest"
WINDOW = 900
NUM_WINDOWS = 3
# The index defaults: the benchmark's index (metrics_index_config) sets no `parquet`, so the API writes with these.
PARQUET = ParquetConfig()
ROW_GROUP_SIZE = PARQUET.row_group_size
ZSTD_LEVEL = PARQUET.zstd_level
GOAL_RATIO = 1.3
SORT_COLUMNS = ("metric_name", "service", "host", "timestamp_secs")
ARROW_STREAM = "application/vnd.apache.arrow.stream"


def make_table(rows: int, seed: int = 42) -> pa.Table:
    """Random-order metrics rows; timestamp_secs holds offsets 0..2699 (rebased onto real time per run)."""
    rng = np.random.default_rng(seed)
    metric_names = pa.array(
        [
            f"app.{group}.metric_{i:03d}"
            for i, group in zip(range(200), ["http", "db", "cache", "queue", "cpu"] * 40, strict=True)
        ]
    )
    services = pa.array([f"service-{i:02d}" for i in range(50)])
    hosts = pa.array([f"host-{i:04d}.dc{i % 4}.example.internal" for i in range(2000)])
    return pa.table(
        {
            "metric_name": metric_names.take(pa.array(rng.integers(0, len(metric_names), rows))),
            "service": services.take(pa.array(rng.integers(0, len(services), rows))),
            "host": hosts.take(pa.array(rng.integers(0, len(hosts), rows))),
            "timestamp_secs": pa.array(rng.integers(0, NUM_WINDOWS * WINDOW, rows), type=pa.int64()),
            "value": pa.array(rng.standard_normal(rows) * 100.0, type=pa.float64()),
        }
    )


def rebase(offsets: pa.Table, wait_margin_secs: int = 30) -> tuple[pa.Table, int]:
    """The table with timestamps moved onto the 3 full windows before the current one: all within the last
    hour.

    The earliest row turns late when the next window starts; if that is less than `wait_margin_secs` away,
    wait for it, so no row can turn late during a run.
    """
    now = time.time()
    current = int(now) - int(now) % WINDOW
    if current + WINDOW - now < wait_margin_secs:
        time.sleep(current + WINDOW - now + 1)
        now = time.time()
        current = int(now) - int(now) % WINDOW
    base = current - NUM_WINDOWS * WINDOW
    ts = pc.add(offsets.column("timestamp_secs"), pa.scalar(base, pa.int64()))
    index = offsets.schema.get_field_index("timestamp_secs")
    return offsets.set_column(index, "timestamp_secs", ts), base


def arrow_stream(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def baseline_writer_options(schema: pa.Schema) -> dict[str, Any]:
    """The API's writer options (split_writer_options: zstd, level, statistics, no Arrow schema) with pyarrow's
    default dictionaries (every column, floats included), which the baseline has always written: plain pyarrow."""
    return {**split_writer_options(schema, PARQUET), "use_dictionary": True}


def baseline(table: pa.Table, out_dir: Path) -> tuple[int, int]:
    """Plain pyarrow, the same logical work as the API: returns (files, bytes written)."""
    ts = table.column("timestamp_secs").combine_chunks().to_numpy()
    windows = ts - np.mod(ts, WINDOW)
    keyed = table.append_column("__window", pa.array(windows, type=pa.int64()))
    order = pc.sort_indices(
        keyed, sort_keys=[("__window", "ascending")] + [(c, "ascending") for c in SORT_COLUMNS]
    )
    ordered = table.take(order)
    windows = windows[order.to_numpy()]
    bounds = [0, *(np.flatnonzero(np.diff(windows)) + 1).tolist(), len(windows)]
    written = 0
    for begin, end in zip(bounds[:-1], bounds[1:], strict=True):
        path = out_dir / f"window-{int(windows[begin])}.parquet"
        pq.write_table(
            ordered.slice(begin, end - begin),
            path,
            row_group_size=ROW_GROUP_SIZE,
            **baseline_writer_options(table.schema),
        )
        written += path.stat().st_size
    return len(bounds) - 1, written


def _ingest(client: httpx.Client, index_id: str, body: bytes, writer_key: str) -> dict[str, Any]:
    response = client.post(
        f"/v1/indexes/{index_id}/ingest",
        content=body,
        headers={"Content-Type": ARROW_STREAM, "Authorization": f"Bearer {writer_key}"},
    )
    if response.status_code != 200:
        raise RuntimeError(f"ingest answered {response.status_code}: {response.text[:500]}")
    return response.json()


def _echo(client: httpx.Client, body: bytes) -> None:
    response = client.post("/echo", content=body, headers={"Content-Type": ARROW_STREAM})
    if response.status_code != 200 or response.json()["received"] != len(body):
        raise RuntimeError(f"echo answered {response.status_code}: {response.text[:200]}")


def run(stack: Stack, *, rows: int = 1_000_000, runs: int = 5) -> dict[str, Any]:
    storage_root = stack.path("ingest-objects")
    baseline_root = stack.path("ingest-baseline")
    database_url = stack.create_database("strata_bench_ingest")
    server = stack.start_indexer(database_url, storage_root)
    echo = stack.start_echo()
    index_id = "bench-ingest"
    offsets = make_table(rows)

    with (
        httpx.Client(base_url=server.base_url, timeout=600) as client,
        httpx.Client(base_url=echo.base_url, timeout=600) as echo_client,
    ):
        created = client.post(
            "/v1/indexes", json=metrics_index_config(index_id), headers=stack.keys.header(stack.keys.admin)
        )
        if created.status_code != 201:
            raise RuntimeError(f"create index answered {created.status_code}: {created.text[:500]}")

        # Warm-up (not measured): a small batch through both paths.
        warm, _ = rebase(offsets.slice(0, 20_000))
        _ingest(client, index_id, arrow_stream(warm), stack.keys.writer)
        _echo(echo_client, arrow_stream(warm))
        warm_dir = baseline_root / "warmup"
        warm_dir.mkdir()
        baseline(warm, warm_dir)

        api_times: list[float] = []
        base_times: list[float] = []
        echo_times: list[float] = []
        api_peaks: list[int] = []
        base_peaks: list[int] = []
        api_bytes = base_bytes = 0
        body_size = 0
        splits_per_run = 0
        for number in range(runs):
            table, _ = rebase(offsets)
            body = arrow_stream(table)
            body_size = len(body)

            idle = rss_bytes(server.pid)
            reset_peak_rss(server.pid)
            started = time.perf_counter()
            answer = _ingest(client, index_id, body, stack.keys.writer)
            api_times.append(time.perf_counter() - started)
            api_peaks.append(peak_rss_bytes(server.pid) - idle)
            if answer["rows_written"] != rows or answer["rows_dropped_late"]:
                raise RuntimeError(
                    f"unexpected ingest outcome: { ({k: v for k, v in answer.items() if k != 'splits'}) }"
                )
            splits_per_run = len(answer["splits"])
            api_bytes = sum(s["size_bytes"] for s in answer["splits"])

            started = time.perf_counter()
            _echo(echo_client, body)
            echo_times.append(time.perf_counter() - started)
            del body

            out_dir = baseline_root / f"run-{number}"
            out_dir.mkdir()
            idle = rss_bytes()
            reset_peak_rss()
            started = time.perf_counter()
            files, base_bytes = baseline(table, out_dir)
            base_times.append(time.perf_counter() - started)
            base_peaks.append(peak_rss_bytes() - idle)
            if files != NUM_WINDOWS:
                raise RuntimeError(f"baseline wrote {files} files, expected {NUM_WINDOWS}")
            del table
        server_idle_rss = rss_bytes(server.pid)

    api = median(api_times)
    base = median(base_times)
    return {
        "rows": rows,
        "runs": runs,
        "body_bytes": body_size,
        "splits_per_run": splits_per_run,
        "api_times": api_times,
        "baseline_times": base_times,
        "api_median": api,
        "baseline_median": base,
        "ratio": api / base,
        "echo_times": echo_times,
        "echo_median": median(echo_times),
        "goal_ratio": GOAL_RATIO,
        "api_output_bytes": api_bytes,
        "baseline_output_bytes": base_bytes,
        "api_peak_extra_rss": max(api_peaks),
        "baseline_peak_extra_rss": max(base_peaks),
        "server_rss_after": server_idle_rss,
    }


def render(result: dict[str, Any]) -> str:
    ok = result["ratio"] <= result["goal_ratio"]
    rows = result["rows"]
    lines = [
        "## Ingestion: 1M rows, API vs plain pyarrow",
        "",
        f"{fmt_int(rows)} metrics-like rows (metric_name 200 values, service 50, host 2,000, i64 "
        "timestamp_secs over "
        f"{NUM_WINDOWS} windows of {WINDOW} s within the last hour, f64 value), random order, sent as one "
        "Arrow IPC "
        f"stream of {fmt_bytes(result['body_bytes'])} to `POST /v1/indexes/{{id}}/ingest` over HTTP "
        "(uvicorn, "
        f"127.0.0.1). The API writes {result['splits_per_run']} splits per run. The baseline does the same "
        "logical work "
        "on the same in-memory table with plain pyarrow (window per row, `pc.sort_indices` by (window, "
        "metric_name, "
        f"service, host, timestamp_secs), take, one zstd-{ZSTD_LEVEL} Parquet file per window, row groups of "
        f"{fmt_int(ROW_GROUP_SIZE)}, statistics on, pyarrow's default dictionaries, to local disk). Median of "
        f"{result['runs']} alternating "
        "runs after "
        "one warm-up.",
        "",
        "| path | median | runs | rows/s | output | peak RSS above idle |",
        "|---|---|---|---|---|---|",
        f"| API (HTTP request to response) | {fmt_s(result['api_median'])} | "
        f"{', '.join(f'{t:.2f}' for t in result['api_times'])} | {fmt_int(rows / result['api_median'])} | "
        f"{fmt_bytes(result['api_output_bytes'])} | {fmt_bytes(result['api_peak_extra_rss'])} (server "
        "process) |",
        f"| baseline (plain pyarrow) | {fmt_s(result['baseline_median'])} | "
        f"{', '.join(f'{t:.2f}' for t in result['baseline_times'])} | "
        f"{fmt_int(rows / result['baseline_median'])} | "
        f"{fmt_bytes(result['baseline_output_bytes'])} | {fmt_bytes(result['baseline_peak_extra_rss'])} |",
        f"| HTTP transport floor (same body to a bare ASGI app, same uvicorn and httpx) | "
        f"{fmt_s(result['echo_median'])} | {', '.join(f'{t:.2f}' for t in result['echo_times'])} | | | |",
        "",
        f"**Ratio API / baseline: {result['ratio']:.2f}x** (goal: at most {result['goal_ratio']}x): "
        f"**{'met' if ok else 'missed'}**. Without the HTTP transport floor, the API's own work is "
        f"{(result['api_median'] - result['echo_median']) / result['baseline_median']:.2f}x the baseline.",
        "",
        f"Server RSS after the runs: {fmt_bytes(result['server_rss_after'])}. Peak RSS above idle is VmHWM "
        "(reset "
        "through /proc/<pid>/clear_refs before each run) minus VmRSS before the run; the baseline figure is "
        "for "
        "the benchmark process, which already holds the input table.",
    ]
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--no-write", action="store_true", help="print the section instead of updating the docs"
    )
    args = parser.parse_args()
    run_and_write(
        {SECTION: lambda stack: render(run(stack, rows=args.rows, runs=args.runs))}, write=not args.no_write
    )


if __name__ == "__main__":
    main()
