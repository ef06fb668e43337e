"""Benchmark: a steady stream of small ingest requests, group commit on vs off.

Writers each send 200-row NDJSON requests to `POST /v1/indexes/{id}/ingest` at up to 50 requests/s (a writer whose
previous request has not been answered waits for it: each writer has one request in flight at most). Two
indexer-api processes run side by side, one with group commit on (the default), one with it off
(`STRATA_INGEST_GROUP_COMMIT=false`), each on its own index of the same database; phases alternate between them
(on, off, then off, on) for 1 writer (idle: every request finds its scope idle) and for several concurrent writers.
Per phase: request latency (send to answer) p50 / p99, requests answered per second, and the splits created per
request (distinct split ids in the answers / requests), which is what compaction and indexing have to work off.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from typing import Any

import httpx
import numpy as np

from bench.common import fmt_int, metrics_index_config
from bench.harness import Stack

SECTION = "ingest_group"
ROWS_PER_REQUEST = 200
RATE_PER_WRITER = 50.0
WINDOW = 900  # the index's window (metrics_index_config)
NDJSON = "application/x-ndjson"
MODES = ("on", "off")


def _bodies(writer: int, count: int, seed: int) -> list[bytes]:
    """NDJSON bodies of this writer's hosts, timestamps in the last minute of the current window only: a request
    spanning two windows would count two splits whatever the mode."""
    rng = random.Random(seed * 1000 + writer)
    now = int(time.time())
    span = min(60, now % WINDOW + 1)
    bodies = []
    for _ in range(count):
        rows = [{"metric_name": f"app.metric_{rng.randrange(50):02d}", "service": f"service-{rng.randrange(10)}",
                 "host": f"host-{writer}-{rng.randrange(100):03d}", "timestamp_secs": now - rng.randrange(span),
                 "value": rng.random() * 100.0} for _ in range(ROWS_PER_REQUEST)]
        bodies.append(b"".join(json.dumps(r).encode() + b"\n" for r in rows))
    return bodies


async def _writer(base_url: str, index_id: str, key: str, bodies: list[bytes], seconds: float,
                  latencies: list[float], split_ids: set[str]) -> None:
    interval = 1.0 / RATE_PER_WRITER
    headers = {"Content-Type": NDJSON, "Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:
        start = time.perf_counter()
        sent = 0
        while (now := time.perf_counter()) - start < seconds:
            due = start + sent * interval
            if due > now:
                await asyncio.sleep(due - now)
            began = time.perf_counter()
            response = await client.post(f"/v1/indexes/{index_id}/ingest", content=bodies[sent % len(bodies)],
                                         headers=headers)
            latencies.append(time.perf_counter() - began)
            if response.status_code != 200:
                raise RuntimeError(f"ingest answered {response.status_code}: {response.text[:300]}")
            answer = response.json()
            if answer["rows_written"] != ROWS_PER_REQUEST:
                raise RuntimeError(f"unexpected outcome {answer}")
            split_ids.update(answer["split_ids"])
            sent += 1


async def _phase(base_url: str, index_id: str, key: str, writers: int, seconds: float, seed: int) -> dict[str, Any]:
    latencies: list[float] = []
    split_ids: set[str] = set()
    bodies = [_bodies(w, 25, seed) for w in range(writers)]
    started = time.perf_counter()
    await asyncio.gather(*(_writer(base_url, index_id, key, bodies[w], seconds, latencies, split_ids)
                           for w in range(writers)))
    elapsed = time.perf_counter() - started
    return {"latencies": latencies, "splits": len(split_ids), "requests": len(latencies), "elapsed": elapsed,
            "load": os.getloadavg()[0]}


def run(stack: Stack, *, writer_counts: tuple[int, ...] = (1, 4, 8), seconds: float = 10.0,
        rounds: int = 2) -> dict[str, Any]:
    database_url = stack.create_database("strata_bench_ingest_group")
    servers = {
        "on": stack.start_indexer(database_url, stack.path("group-on")),
        "off": stack.start_indexer(database_url, stack.path("group-off"), ingest_group_commit=False),
    }
    indexes = {mode: f"bench-group-{mode}" for mode in MODES}
    with httpx.Client(timeout=60) as client:
        for mode, server in servers.items():
            created = client.post(f"{server.base_url}/v1/indexes", json=metrics_index_config(indexes[mode]),
                                  headers=stack.keys.header(stack.keys.admin))
            if created.status_code != 201:
                raise RuntimeError(f"create index answered {created.status_code}: {created.text[:300]}")

    # Warm-up (not measured): both servers, a second of 2 writers.
    for mode in MODES:
        asyncio.run(_phase(servers[mode].base_url, indexes[mode], stack.keys.writer, 2, 1.0, seed=0))

    phases: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for number in range(rounds):
        order = MODES if number % 2 == 0 else MODES[::-1]
        for writers in writer_counts:
            for mode in order:
                result = asyncio.run(_phase(servers[mode].base_url, indexes[mode], stack.keys.writer, writers,
                                            seconds, seed=number + 1))
                phases.setdefault((mode, writers), []).append(result)
                print(f"[ingest_group] round {number} {mode:>3} writers={writers}: {result['requests']} requests, "
                      f"{result['splits']} splits, p50 {np.percentile(result['latencies'], 50) * 1e3:.1f} ms",
                      flush=True)

    rows = []
    for writers in writer_counts:
        for mode in MODES:
            runs = phases[(mode, writers)]
            latencies = np.array([t for r in runs for t in r["latencies"]])
            requests = sum(r["requests"] for r in runs)
            rows.append({
                "mode": mode, "writers": writers, "requests": requests,
                "splits": sum(r["splits"] for r in runs),
                "p50": float(np.percentile(latencies, 50)), "p99": float(np.percentile(latencies, 99)),
                "requests_per_sec": requests / sum(r["elapsed"] for r in runs),
                "load": [round(r["load"], 2) for r in runs],
            })
    return {"rows": rows, "seconds": seconds, "rounds": rounds, "rate": RATE_PER_WRITER,
            "rows_per_request": ROWS_PER_REQUEST}


def render(result: dict[str, Any]) -> str:
    lines = [
        "## Ingestion under many small writes: group commit on vs off",
        "",
        f"Writers each send {result['rows_per_request']}-row NDJSON requests (metrics-like rows of the last minute, "
        f"one window) at up to {result['rate']:.0f} requests/s, one request in flight per writer, to two "
        "indexer-api processes side by side (uvicorn, 127.0.0.1, same PostgreSQL): group commit on (the default) "
        "and off (`STRATA_INGEST_GROUP_COMMIT=false`). Phases of "
        f"{result['seconds']:.0f} s alternate between the two ({result['rounds']} rounds, the order swapped each "
        "round); figures pool the rounds. Latency is send to answer, as a writer sees it; splits per request are "
        "the distinct split ids in the answers over the requests answered.",
        "",
        "| writers | group commit | requests | requests/s | latency p50 | latency p99 | splits created | "
        "splits per request | 1-min load at each phase's end |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['writers']} | {row['mode']} | {fmt_int(row['requests'])} | {row['requests_per_sec']:.0f} | "
            f"{row['p50'] * 1e3:.1f} ms | {row['p99'] * 1e3:.1f} ms | {fmt_int(row['splits'])} | "
            f"{row['splits'] / row['requests']:.3f} | {', '.join(f'{x:.2f}' for x in row['load'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", default="1,4,8", help="comma-separated writer counts")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    args = parser.parse_args()
    counts = tuple(int(n) for n in args.writers.split(","))
    run_and_write({SECTION: lambda stack: render(run(stack, writer_counts=counts, seconds=args.seconds,
                                                     rounds=args.rounds))}, write=not args.no_write)


if __name__ == "__main__":
    main()
