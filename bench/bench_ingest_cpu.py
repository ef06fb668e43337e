"""Benchmark: CPU milliseconds of the indexer-api process per 200-row NDJSON ingest request (issue 34).

    .tools/bin/uv run python -m bench.bench_ingest_cpu                        # writes docs/benchmarks.md
    .tools/bin/uv run python -m bench.bench_ingest_cpu --no-write --baseline-python /work/wt-head/.venv/bin/python
    .tools/bin/uv run python -m bench.bench_ingest_cpu --part replicas --no-write

indexer-api runs as `strata serve indexer-api` (the real server: uvicorn, middleware, the pool, group commit on as
by default; no Spark remote, so no embedded indexing runner) on a fresh database of an embedded PostgreSQL. CPU
is utime + stime of the server process from /proc/PID/stat (all its threads), read before and after a phase of N
requests; its children (none expected) are reported apart. Phases: `sequential`, one request at a time, and
`concurrent`, W writers each with one request in flight. With `--baseline-python` a second server is started
from another checkout's interpreter (its own code; e.g. HEAD in a second worktree) and the phases alternate
between the two, round by round, so "before" and "after" share the machine's load; medians of the rounds.

`--part replicas`: the same writers against one indexer-api process and against two (same database, same index,
writers split between them), on the same cores, alternating: requests/s, p50, CPU per request of all processes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench.bench_query import api_child, api_keys, child_env
from bench.common import metrics_index_config
from bench.harness import cpu_seconds_by_tree

SECTION = "ingest_cpu"
ROWS = 200
NDJSON = "application/x-ndjson"
PARTS = ("cpu", "background", "replicas", "floor")
# A Spark Connect remote nothing listens on: the embedded indexing runner starts (it needs a remote), and every
# build of these small splits runs in its local process (`STRATA_INDEXING_LOCAL_MAX_BYTES`), never on Spark.
NO_SPARK = "sc://127.0.0.1:9"


def bodies(seed: int, count: int) -> list[bytes]:
    """200-row NDJSON bodies stamped within the last minute (one window of the index's 900 s, or two at a
    boundary: both are written, late data is an hour)."""
    rng = random.Random(seed)
    now = int(time.time())
    out = []
    for _ in range(count):
        rows = [{"metric_name": f"app.metric_{rng.randrange(50):02d}", "service": f"service-{rng.randrange(10)}",
                 "host": f"host-{seed}-{rng.randrange(100):03d}", "timestamp_secs": now - rng.randrange(60),
                 "value": rng.random() * 100.0} for _ in range(ROWS)]
        out.append(b"".join(json.dumps(r).encode() + b"\n" for r in rows))
    return out


def proc_cpu(pid: int) -> float:
    """utime + stime of one process (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as handle:
        raw = handle.read()
    fields = raw[raw.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _writers(urls: list[str], index_id: str, writers: int, requests: int, seed: int,
                   rate: float | None = None) -> dict[str, Any]:
    """`writers` writers sharing `requests` requests, writer w on urls[w % len(urls)]: closed loop (each sends
    again as soon as answered), or with `rate`, `rate` requests/s in all, each writer's k-th request due at
    k * writers / rate (one in flight per writer; a writer behind sends at once)."""
    keys = api_keys()
    headers = {"content-type": NDJSON, **keys.header(keys.writer)}
    pool = bodies(seed, 40)
    latencies: list[float] = []
    left = [requests]

    async def writer(number: int) -> None:
        url = f"{urls[number % len(urls)]}/v1/indexes/{index_id}/ingest"
        async with httpx.AsyncClient(timeout=120) as client:
            k = number
            sent = 0
            began_writer = time.perf_counter() + (number / rate if rate else 0.0)
            while left[0] > 0:
                left[0] -= 1
                if rate:
                    delay = began_writer + sent * writers / rate - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    sent += 1
                began = time.perf_counter()
                response = await client.post(url, content=pool[k % len(pool)], headers=headers)
                latencies.append(time.perf_counter() - began)
                if response.status_code != 200:
                    raise RuntimeError(f"ingest answered {response.status_code}: {response.text[:300]}")
                answer = response.json()
                if answer["rows_written"] + answer["rows_dropped_late"] != ROWS:
                    raise RuntimeError(f"unexpected outcome {answer}")
                k += writers

    started = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    return {"latencies": latencies, "elapsed": time.perf_counter() - started}


def phase(servers: list[Any], index_id: str, writers: int, requests: int, seed: int,
          rate: float | None = None, postgres_pid: int | None = None) -> dict[str, Any]:
    """One phase; CPU of the servers (their own processes, and their children apart), and with `postgres_pid`,
    of PostgreSQL (its whole tree) and of this process (the writers), per request."""
    pids = {f"p{i}": s.pid for i, s in enumerate(servers)}
    before_own = {k: proc_cpu(p) for k, p in pids.items()}
    before_tree = cpu_seconds_by_tree(pids)
    before_pg = cpu_seconds_by_tree({"pg": postgres_pid})["pg"] if postgres_pid else 0.0
    before_client = time.process_time()
    load_before = os.getloadavg()[0]
    out = asyncio.run(_writers([s.url for s in servers], index_id, writers, requests, seed, rate))
    own = sum(proc_cpu(p) - before_own[k] for k, p in pids.items())
    tree = sum(v - before_tree[k] for k, v in cpu_seconds_by_tree(pids).items())
    pg = cpu_seconds_by_tree({"pg": postgres_pid})["pg"] - before_pg if postgres_pid else float("nan")
    client = time.process_time() - before_client
    lat = sorted(out["latencies"])
    return {"requests": len(lat), "cpu_ms": own / len(lat) * 1e3, "children_cpu_ms": (tree - own) / len(lat) * 1e3,
            "postgres_cpu_ms": pg / len(lat) * 1e3, "client_cpu_ms": client / len(lat) * 1e3,
            "cores": (own + (pg if postgres_pid else 0.0) + client) / out["elapsed"],
            "p50": statistics.median(lat), "p99": lat[min(len(lat) - 1, int(0.99 * (len(lat) - 1)))],
            "requests_per_sec": len(lat) / out["elapsed"], "load": (load_before + os.getloadavg()[0]) / 2}


def _create_index(url: str, index_id: str) -> None:
    keys = api_keys()
    response = httpx.post(f"{url}/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin),
                          timeout=60)
    if response.status_code != 201:
        raise RuntimeError(f"create index answered {response.status_code}: {response.text[:300]}")


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("cpu_ms", "children_cpu_ms", "p50", "p99", "requests_per_sec", "load", "postgres_cpu_ms",
            "client_cpu_ms", "cores")
    return {"rounds": len(results), "requests": sum(r["requests"] for r in results),
            **{k: statistics.median(r[k] for r in results) for k in keys},
            "cpu_ms_runs": [round(r["cpu_ms"], 2) for r in results]}


def cpu_part(stack, *, requests: int, writers: int, rounds: int, baseline_python: str | None,
             env: dict[str, str]) -> dict[str, Any]:
    labels = ["after"] + (["before"] if baseline_python else [])
    with ExitStack() as exits:
        servers, indexes = {}, {}
        for label in labels:
            url = stack.create_database(f"strata_bench_cpu_{label}")
            extra = {"STRATA_SPARK_REMOTE": "", **env}
            child = child_env(url, stack.path(f"cpu-{label}-storage"), stack.path(f"cpu-{label}-home"), **extra)
            servers[label] = exits.enter_context(api_child("indexer-api", child, stack.path(f"cpu-{label}-logs"),
                                                           python=baseline_python if label == "before" else None))
            indexes[label] = f"bench-cpu-{label}"
            _create_index(servers[label].url, indexes[label])
        for label in labels:  # warm-up, not measured
            phase([servers[label]], indexes[label], 2, 60, seed=0)
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for number in range(rounds):
            order = labels if number % 2 == 0 else labels[::-1]
            for name, count in (("sequential", 1), ("concurrent", writers)):
                for label in order:
                    r = phase([servers[label]], indexes[label], count, requests, seed=number + 1)
                    results.setdefault((label, name), []).append(r)
                    print(f"[ingest_cpu] round {number} {label:>6} {name:>10}: {r['cpu_ms']:.2f} ms CPU/request, "
                          f"p50 {r['p50'] * 1e3:.1f} ms, {r['requests_per_sec']:.0f}/s, load {r['load']:.2f}",
                          flush=True)
    return {"requests": requests, "writers": writers, "rounds": rounds, "baseline": baseline_python,
            "rows": [{"server": label, "phase": name, **_summary(runs)} for (label, name), runs in results.items()]}


def background_part(stack, *, requests: int, writers: int, rate: float, rounds: int,
                    baseline_python: str | None, env: dict[str, str]) -> dict[str, Any]:
    """Ingest p50 at a fixed offered rate with the embedded indexing runner building every new split's artifacts
    (`indexing`) and with it off (`STRATA_INDEXING_WORKER_SLOTS=0`, `quiet`), per server, alternating."""
    labels = ["after"] + (["before"] if baseline_python else [])
    modes = {"indexing": {"STRATA_SPARK_REMOTE": NO_SPARK}, "quiet": {"STRATA_SPARK_REMOTE": "",
                                                                      "STRATA_INDEXING_WORKER_SLOTS": "0"}}
    with ExitStack() as exits:
        servers, indexes = {}, {}
        for label in labels:
            for mode, extra in modes.items():
                key = f"{label}-{mode}"
                url = stack.create_database(f"strata_bench_bg_{label}_{mode}")
                child = child_env(url, stack.path(f"bg-{key}-storage"), stack.path(f"bg-{key}-home"),
                                  **{**extra, **env})
                servers[key] = exits.enter_context(api_child(
                    "indexer-api", child, stack.path(f"bg-{key}-logs"),
                    python=baseline_python if label == "before" else None))
                indexes[key] = f"bench-bg-{key}"
                _create_index(servers[key].url, indexes[key])
        keys = list(servers)
        for key in keys:
            phase([servers[key]], indexes[key], 2, 40, seed=0)
        results: dict[str, list[dict[str, Any]]] = {}
        for number in range(rounds):
            for key in (keys if number % 2 == 0 else keys[::-1]):
                r = phase([servers[key]], indexes[key], writers, requests, seed=number + 1, rate=rate)
                results.setdefault(key, []).append(r)
                print(f"[ingest_cpu] round {number} {key:>16}: p50 {r['p50'] * 1e3:.1f} ms, "
                      f"{r['requests_per_sec']:.0f}/s, {r['cpu_ms']:.2f} ms CPU/request, load {r['load']:.2f}",
                      flush=True)
        # Every split of the indexing servers got its artifacts: the runner ran, off the ingest loop or on it.
        waiting = {}
        for key in keys:
            if key.endswith("indexing"):
                waiting[key] = _indexing_waiting(servers[key].url, indexes[key])
    rows = []
    for label in labels:
        quiet, busy = _summary(results[f"{label}-quiet"]), _summary(results[f"{label}-indexing"])
        rows.append({"server": label, "quiet": quiet, "indexing": busy, "ratio": busy["p50"] / quiet["p50"],
                     "waiting": waiting.get(f"{label}-indexing")})
    return {"requests": requests, "writers": writers, "rate": rate, "rounds": rounds, "baseline": baseline_python,
            "rows": rows}


def _indexing_waiting(url: str, index_id: str, patience: float = 120.0) -> dict[str, Any]:
    """Waits (up to `patience` s) until every published file of the index has its artifacts
    (`GET /v1/indexing/lag`): the files still waiting, and how long the backlog took to drain."""
    keys = api_keys()
    started = time.monotonic()
    while True:
        response = httpx.get(f"{url}/v1/indexing/lag", headers=keys.header(keys.writer), timeout=60)
        response.raise_for_status()
        lag = [x for x in response.json()["indexes"] if x["index_id"] == index_id]
        waiting = lag[0]["files_waiting"] if lag else 0
        if waiting == 0 or time.monotonic() - started > patience:
            return {"waiting": waiting, "secs": time.monotonic() - started}
        time.sleep(2)


class FloorServer:
    """`python -m bench.serve --floor KIND` on a free port: a FastAPI app of one route (bench/serve.py)."""

    def __init__(self, kind: str, dsn: str, directory: Path, log: Path) -> None:
        import subprocess
        import sys

        from strata_services.local.processes import free_port

        self.url = f"http://127.0.0.1:{free_port()}"
        env = {**os.environ, "BENCH_FLOOR_DSN": dsn, "BENCH_FLOOR_DIR": str(directory)}
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "bench.serve", "--port", self.url.rsplit(":", 1)[1],
                                          "--floor", kind], cwd=Path(__file__).resolve().parent.parent, env=env,
                                         stdout=out, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/docs", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"floor server {kind} did not start (see {log})")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


def floor_part(stack, *, requests: int, writers: int, rounds: int) -> dict[str, Any]:
    """CPU per request of the floor apps: FastAPI alone, and FastAPI + decode + one Parquet file + one PostgreSQL
    round trip; same bodies, same phases."""
    from bench.harness import asyncpg_dsn

    dsn = asyncpg_dsn(stack.create_database("strata_bench_floor", migrated=False))
    with ExitStack() as exits:
        servers = {}
        for kind in ("fastapi", "full"):
            server = FloorServer(kind, dsn, stack.path(f"floor-{kind}"), stack.path("floor-logs") / f"{kind}.log")
            exits.callback(server.stop)
            servers[kind] = server
        for server in servers.values():
            phase([server], "floor", 2, 60, seed=0)
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for number in range(rounds):
            for name, count in (("sequential", 1), ("concurrent", writers)):
                for kind in servers:
                    r = phase([servers[kind]], "floor", count, requests, seed=number + 1)
                    results.setdefault((kind, name), []).append(r)
                    print(f"[ingest_cpu] round {number} floor {kind:>7} {name:>10}: {r['cpu_ms']:.2f} ms CPU/request, "
                          f"p50 {r['p50'] * 1e3:.1f} ms", flush=True)
    return {"requests": requests, "writers": writers, "rounds": rounds,
            "rows": [{"server": kind, "phase": name, **_summary(runs)} for (kind, name), runs in results.items()]}


def replicas_part(stack, *, requests: int, writers: int, rounds: int, env: dict[str, str]) -> dict[str, Any]:
    with ExitStack() as exits:
        url = stack.create_database("strata_bench_cpu_replicas")
        extra = {"STRATA_SPARK_REMOTE": "", **env}
        child = child_env(url, stack.path("rep-storage"), stack.path("rep-home"), **extra)
        servers = [exits.enter_context(api_child("indexer-api", child, stack.path(f"rep-logs-{i}")))
                   for i in range(2)]
        index_id = "bench-cpu-replicas"
        _create_index(servers[0].url, index_id)
        phase(servers, index_id, writers, 60, seed=0)
        results: dict[int, list[dict[str, Any]]] = {}
        for number in range(rounds):
            order = (1, 2) if number % 2 == 0 else (2, 1)
            for count in order:
                r = phase(servers[:count], index_id, writers, requests, seed=number + 1,
                          postgres_pid=stack.postgres_pid())
                results.setdefault(count, []).append(r)
                print(f"[ingest_cpu] round {number} {count} process(es), {writers} writers: "
                      f"{r['requests_per_sec']:.0f}/s, p50 {r['p50'] * 1e3:.1f} ms, "
                      f"{r['cpu_ms']:.2f} ms CPU/request, PostgreSQL {r['postgres_cpu_ms']:.2f}, "
                      f"writers {r['client_cpu_ms']:.2f}, {r['cores']:.2f} cores in all, load {r['load']:.2f}",
                      flush=True)
    return {"requests": requests, "writers": writers, "rounds": rounds,
            "rows": [{"processes": count, **_summary(runs)} for count, runs in sorted(results.items())]}


def render(result: dict[str, Any]) -> str:
    lines = ["## Ingestion: CPU per 200-row request (issue 34)", ""]
    cpu = result.get("cpu")
    if cpu:
        lines += [
            f"`strata serve indexer-api` (group commit on, no embedded indexing runner), fresh database on the "
            f"embedded PostgreSQL; {ROWS}-row NDJSON requests (metrics rows of the last minute). CPU is utime + "
            "stime of the server process from /proc/PID/stat over a phase of "
            f"{cpu['requests']} requests (children apart: none expected); `sequential` is one request at a time, "
            f"`concurrent` {cpu['writers']} writers each with one in flight. Medians of {cpu['rounds']} rounds"
            + (", the two servers alternating within each round (before: `--baseline-python "
               f"{cpu['baseline']}`)." if cpu["baseline"] else "."),
            "",
            "| server | phase | requests | CPU ms / request (median) | per round | p50 | p99 | requests/s | "
            "1-min load |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in cpu["rows"]:
            lines.append(f"| {row['server']} | {row['phase']} | {row['requests']:,} | **{row['cpu_ms']:.2f}** | "
                         f"{', '.join(f'{x:.2f}' for x in row['cpu_ms_runs'])} | {row['p50'] * 1e3:.1f} ms | "
                         f"{row['p99'] * 1e3:.1f} ms | {row['requests_per_sec']:.0f} | {row['load']:.2f} |")
        lines.append("")
    bg = result.get("background")
    if bg:
        lines += [
            f"Ingest latency at a fixed offered load ({bg['writers']} writers, {bg['rate']:.0f} requests/s in all, "
            f"{bg['requests']} requests per phase) with the embedded indexing runner building every new split's "
            "artifacts (local builds; `STRATA_SPARK_REMOTE` names a remote nothing listens on, which no build this "
            "small reaches) and with it off (`STRATA_INDEXING_WORKER_SLOTS=0`), each on its own server and "
            f"database, alternating; medians of {bg['rounds']} rounds. Files waiting: artifact builds left when "
            "the phases ended and the backlog had up to 2 minutes to drain.",
            "",
            "| server | p50 indexing off | p50 indexing on | ratio | p99 off / on | CPU ms / request off / on | "
            "files waiting (drained in) |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in bg["rows"]:
            q, b, w = row["quiet"], row["indexing"], row["waiting"] or {}
            lines.append(f"| {row['server']} | {q['p50'] * 1e3:.1f} ms | {b['p50'] * 1e3:.1f} ms | "
                         f"**{row['ratio']:.2f}x** | {q['p99'] * 1e3:.0f} / {b['p99'] * 1e3:.0f} ms | "
                         f"{q['cpu_ms']:.2f} / {b['cpu_ms']:.2f} | {w.get('waiting')} ({w.get('secs', 0):.0f} s) |")
        lines.append("")
    floor = result.get("floor")
    if floor:
        lines += [
            "The floor, same bodies and phases (`bench/serve.py --floor`): `fastapi`, a FastAPI app of one route "
            "under the same uvicorn that reads the body and answers; `full`, the same route also decoding the body "
            "(pyarrow.json), writing it as one zstd Parquet file and making one PostgreSQL round trip (an INSERT on "
            "a pooled asyncpg connection).",
            "",
            "| floor | phase | CPU ms / request (median) | per round | p50 |",
            "|---|---|---|---|---|",
        ]
        for row in floor["rows"]:
            lines.append(f"| {row['server']} | {row['phase']} | **{row['cpu_ms']:.2f}** | "
                         f"{', '.join(f'{x:.2f}' for x in row['cpu_ms_runs'])} | {row['p50'] * 1e3:.1f} ms |")
        lines.append("")
    rep = result.get("replicas")
    if rep:
        lines += [
            f"One indexer-api process vs two (same database, same index, {rep['writers']} closed-loop writers split "
            f"between them), on the same cores, alternating; {rep['requests']} requests per phase, medians of "
            f"{rep['rounds']} rounds. CPU per request: of the indexer-api processes together, of PostgreSQL (its "
            "whole process tree) and of the benchmark process (the writers, httpx); cores: the three together over "
            "the phase.",
            "",
            "| processes | requests/s | p50 | p99 | CPU ms / request: indexer-api / PostgreSQL / writers "
            "| cores in all | 1-min load |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in rep["rows"]:
            lines.append(f"| {row['processes']} | **{row['requests_per_sec']:.0f}** | {row['p50'] * 1e3:.1f} ms | "
                         f"{row['p99'] * 1e3:.1f} ms | {row['cpu_ms']:.2f} / {row['postgres_cpu_ms']:.2f} / "
                         f"{row['client_cpu_ms']:.2f} | {row['cores']:.2f} | {row['load']:.2f} |")
        lines.append("")
    return "\n".join(lines).rstrip()


def run(stack, *, parts: tuple[str, ...] = PARTS, requests: int = 300, writers: int = 4, rounds: int = 3,
        rate: float = 40.0, baseline_python: str | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "cpu" in parts:
        out["cpu"] = cpu_part(stack, requests=requests, writers=writers, rounds=rounds,
                              baseline_python=baseline_python, env=env or {})
    if "background" in parts:
        out["background"] = background_part(stack, requests=requests, writers=writers, rate=rate, rounds=rounds,
                                            baseline_python=baseline_python, env=env or {})
    if "floor" in parts:
        out["floor"] = floor_part(stack, requests=requests, writers=writers, rounds=rounds)
    if "replicas" in parts:
        out["replicas"] = replicas_part(stack, requests=requests * 2, writers=max(8, writers), rounds=rounds,
                                        env=env or {})
    return out


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", action="append", choices=PARTS, help="one part (repeatable); default: all")
    parser.add_argument("--requests", type=int, default=300, help="requests per phase (at least 300 to publish)")
    parser.add_argument("--writers", type=int, default=4, help="writers of the concurrent phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=40.0, help="background: offered requests/s in all")
    parser.add_argument("--baseline-python", help="another checkout's interpreter: its indexer-api is 'before'")
    parser.add_argument("--env", action="append", default=[], metavar="STRATA_X=VALUE",
                        help="a setting of the servers (repeatable)")
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    args = parser.parse_args()
    if args.baseline_python and not Path(args.baseline_python).exists():
        parser.error(f"no interpreter at {args.baseline_python}")
    env = dict(item.split("=", 1) for item in args.env)
    parts = tuple(args.part or PARTS)
    run_and_write({SECTION: lambda stack: render(run(stack, parts=parts, requests=args.requests,
                                                     writers=args.writers, rounds=args.rounds,
                                                     rate=args.rate, baseline_python=args.baseline_python, env=env))},
                  write=not args.no_write)


if __name__ == "__main__":
    main()
