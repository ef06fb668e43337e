"""Benchmark 2: registering 10,000 small external splits through POST /v1/indexes/{id}/splits, 1,000 per
batch.

Each split is a real Parquet file under the storage root (100 rows, one window, sorted by the sort schema,
with the kv metadata `strata_core.splitfile.writer.encode_split` writes), and the server reads every footer
to check it. Files are written before the clock starts; one warm-up batch (not counted) goes first. Goal: >=
2,000 splits/s.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from ulid import ULID

from bench.common import fmt_int, fmt_ms, fmt_s, median, metrics_index_config
from bench.harness import Stack
from strata_core.domain.column_stats import compute_column_stats
from strata_core.domain.index_config import ParquetConfig
from strata_core.domain.sort_key import sort_indices
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import SplitMetadata
from strata_core.splitfile.writer import encode_split
from strata_core.storage import ObjectStore

SECTION = "register"
WINDOW = 900
GOAL_SPLITS_PER_SEC = 2000
SORT_SCHEMA = "metric_name,service,host,timestamp_secs@v1"


def write_splits(storage: ObjectStore, index: dict[str, Any], count: int, rows: int, seed: int) -> list[dict]:
    """`count` split files of `rows` rows, each in one window (spread over the last ~4 days); their request
    items."""
    rng = np.random.default_rng(seed)
    schema = SortSchema.parse(SORT_SCHEMA)
    metric_names = pa.array([f"app.metric_{i:03d}" for i in range(200)])
    services = pa.array([f"service-{i:02d}" for i in range(50)])
    hosts = pa.array([f"host-{i:04d}.example.internal" for i in range(2000)])
    now = int(time.time())
    newest_window = now - now % WINDOW - WINDOW
    parquet = ParquetConfig()
    items = []
    for _ in range(count):
        window_start = newest_window - WINDOW * int(rng.integers(0, 384))
        table = pa.table(
            {
                "metric_name": metric_names.take(pa.array(rng.integers(0, 200, rows))),
                "service": services.take(pa.array(rng.integers(0, 50, rows))),
                "host": hosts.take(pa.array(rng.integers(0, 2000, rows))),
                "timestamp_secs": pa.array(window_start + rng.integers(0, WINDOW, rows), type=pa.int64()),
                "value": pa.array(rng.standard_normal(rows), type=pa.float64()),
            }
        )
        table = table.take(sort_indices(table, schema))
        split_id = str(ULID())
        ts = pc.min_max(table.column("timestamp_secs"))
        metadata = SplitMetadata(
            split_id=split_id,
            index_uid=index["index_uid"],
            source_id="external",
            partition_id="default",
            doc_mapping_uid=index["doc_mapping_uid"],
            sort_schema=SORT_SCHEMA,
            window_start=window_start,
            window_duration_secs=WINDOW,
            time_range_start=ts["min"].as_py(),
            time_range_end=ts["max"].as_py(),
            num_rows=rows,
            column_stats=compute_column_stats(table, frozenset(schema.column_names)),
            root_split_ids=[split_id],
        )
        data, _footer = encode_split(table, metadata, parquet)
        uri = storage.uri_for(f"external/{window_start}/{split_id}.parquet")
        storage.write_bytes(uri, data)
        items.append({"split_id": split_id, "uri": uri, "num_rows": rows, "partition_id": "default"})
    return items


def run(stack: Stack, *, splits: int = 10_000, batch: int = 1_000, rows: int = 100) -> dict[str, Any]:
    storage_root = stack.path("register-objects")
    database_url = stack.create_database("strata_bench_register")
    server = stack.start_indexer(database_url, storage_root, max_register_batch=max(batch, 5_000))
    storage = ObjectStore(storage_root.resolve().as_uri())
    index_id = "bench-register"
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {stack.keys.writer}"}

    with httpx.Client(base_url=server.base_url, timeout=600) as client:
        created = client.post(
            "/v1/indexes", json=metrics_index_config(index_id), headers=stack.keys.header(stack.keys.admin)
        )
        if created.status_code != 201:
            raise RuntimeError(f"create index answered {created.status_code}: {created.text[:500]}")
        index = created.json()

        started = time.perf_counter()
        warmup = write_splits(storage, index, batch, rows, seed=1)
        items = write_splits(storage, index, splits, rows, seed=2)
        write_secs = time.perf_counter() - started

        def post(chunk: list[dict]) -> float:
            body = json.dumps({"splits": chunk}).encode()
            begin = time.perf_counter()
            response = client.post(f"/v1/indexes/{index_id}/splits", content=body, headers=headers)
            elapsed = time.perf_counter() - begin
            if response.status_code != 200:
                raise RuntimeError(f"register answered {response.status_code}: {response.text[:500]}")
            if len(response.json()["registered"]) != len(chunk):
                raise RuntimeError(f"register answered {response.text[:300]}")
            return elapsed

        post(warmup)
        batch_times = [post(items[i : i + batch]) for i in range(0, len(items), batch)]

        # The same batch again: idempotent, nothing new written (reads every footer and compares with the
        # rows).
        again = time.perf_counter()
        response = client.post(
            f"/v1/indexes/{index_id}/splits", content=json.dumps({"splits": items[:batch]}), headers=headers
        )
        again = time.perf_counter() - again
        if response.status_code != 200 or len(response.json()["unchanged"]) != batch:
            raise RuntimeError(f"re-register answered {response.status_code}: {response.text[:300]}")

    total = sum(batch_times)
    return {
        "splits": splits,
        "batch": batch,
        "rows": rows,
        "file_bytes": sum(p.stat().st_size for p in (storage_root / "external").rglob("*.parquet"))
        / (splits + batch),
        "write_secs": write_secs,
        "batch_times": batch_times,
        "total_secs": total,
        "splits_per_sec": splits / total,
        "median_batch": median(batch_times),
        "reregister_secs": again,
        "goal": GOAL_SPLITS_PER_SEC,
    }


def render(result: dict[str, Any]) -> str:
    ok = result["splits_per_sec"] >= result["goal"]
    times = result["batch_times"]
    lines = [
        f"## Registration: {fmt_int(result['splits'])} external splits in batches of "
        f"{fmt_int(result['batch'])}",
        "",
        f"{fmt_int(result['splits'])} split files of {result['rows']} rows (one window each, sorted, kv "
        "metadata from "
        f"`encode_split`, {result['file_bytes'] / 1024:.1f} KiB each) under the storage root, registered "
        "through "
        f"`POST /v1/indexes/{{id}}/splits` over HTTP, {fmt_int(result['batch'])} per request, sequentially; "
        "the "
        "server opens every file and checks its footer. Files were written before timing "
        f"({fmt_s(result['write_secs'])} for all of them); one warm-up batch of other files went first.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| throughput | **{fmt_int(result['splits_per_sec'])} splits/s** (goal >= "
        f"{fmt_int(result['goal'])}/s: "
        f"**{'met' if ok else 'missed'}**) |",
        f"| total for {fmt_int(result['splits'])} splits | {fmt_s(result['total_secs'])} |",
        f"| time per batch of {fmt_int(result['batch'])}: median / min / max | "
        f"{fmt_ms(result['median_batch'])} / "
        f"{fmt_ms(min(times))} / {fmt_ms(max(times))} |",
        f"| every batch | {', '.join(f'{t * 1e3:.0f}' for t in times)} ms |",
        "| the first batch again (idempotent no-op: footers read, rows compared) | "
        f"{fmt_ms(result['reregister_secs'])} |",
    ]
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument(
        "--no-write", action="store_true", help="print the section instead of updating the docs"
    )
    args = parser.parse_args()
    run_and_write(
        {SECTION: lambda stack: render(run(stack, splits=args.splits, batch=args.batch))},
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
