"""Fresh queries, side by side: `strata demo`'s five queries run every time (`Cache-Control: no-cache`) on each
door (HTTP straight to query-api, HTTP through the proxy, Arrow Flight SQL through the ADBC driver's DB-API
cursor) against DuckDB over the same files from a warm connection, alternating run by run so the ratios hold on a
noisy machine. With `--baseline-python`, a second query-api (and its proxy) is served from another checkout's
interpreter over the same metastore and files, and timed in the same loop: before and after in one run.

    .tools/bin/uv run --group bench python -m bench.bench_fresh [--runs 30] \
        [--baseline-python /work/main/.venv/bin/python] [--hold 60]

`--hold N` keeps the servers up N seconds after the runs, printing their pids. `--profile FILE` samples this
checkout's query-api with py-spy (raw collapsed stacks, every thread) while one door runs the first query back to
back: add `--with py-spy` to the command (py-spy is not a project dependency).
Printed only: docs/benchmarks.md's section "Arrow Flight SQL beside HTTP" quotes it by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from typing import Any

import httpx

from bench.bench_engines import (
    DEMO_ROWS_PER_WINDOW,
    DEMO_WINDOWS,
    _duck_timer,
    _flight_timer,
    _ingest_demo,
    _strata,
)
from bench.bench_query import api_child, api_keys, child_env
from bench.harness import Stack


def _uptime() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _profile(client: httpx.Client, door: dict[str, Any], sql: str, args: argparse.Namespace) -> None:
    import subprocess

    sampler = subprocess.Popen(["py-spy", "record", "--pid", str(door["pid"]), "--format", "raw", "--threads",
                                "--rate", "1000", "--duration", str(int(args.profile_secs)), "--output", args.profile])
    time.sleep(1.0)
    count = 0
    deadline = time.monotonic() + args.profile_secs - 1.5
    while time.monotonic() < deadline:
        if args.profile_door == "flight":
            door["flight"](sql)
        else:
            _strata(client, door["query" if args.profile_door == "direct" else "proxy"], sql, None, fresh=True)
        count += 1
    sampler.wait()
    print(f"[fresh] profiled {count} queries on {args.profile_door} into {args.profile}", flush=True)


def main() -> None:
    from strata_services.demo import TABLE, demo_queries
    from strata_services.local.processes import free_port

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--baseline-python", default=None)
    parser.add_argument("--hold", type=float, default=0.0)
    parser.add_argument("--profile", default=None, help="py-spy's collapsed stacks of this query-api into this file "
                        "while one door (--profile-door) runs the first query back to back")
    parser.add_argument("--profile-door", default="direct", choices=("direct", "proxy", "flight"))
    parser.add_argument("--profile-secs", type=float, default=20.0)
    args = parser.parse_args()
    keys = api_keys()
    variants = [("this", None)] + ([("baseline", args.baseline_python)] if args.baseline_python else [])
    with Stack() as stack, contextlib.ExitStack() as servers:
        url = stack.create_database("strata_bench_fresh")
        storage_root = stack.path("fresh-storage")
        indexer = stack.start_indexer(url, storage_root)
        demo = _ingest_demo(indexer.base_url, storage_root, DEMO_WINDOWS, DEMO_ROWS_PER_WINDOW)
        indexer.stop()
        doors: dict[str, dict[str, Any]] = {}
        for label, python in variants:
            flight_port = free_port()
            env = child_env(url, storage_root, stack.path(f"home-{label}"), STRATA_FLIGHT_PORT=str(flight_port))
            query_api = servers.enter_context(api_child("query-api", env, stack.path(f"logs-{label}"), python))
            proxy_env = child_env(url, storage_root, stack.path(f"home-{label}-proxy"),
                                  STRATA_QUERY_UPSTREAMS=query_api.url, STRATA_PROXY_RATE_PER_SEC="1000",
                                  STRATA_PROXY_BURST="1000")
            proxy = servers.enter_context(api_child("proxy", proxy_env, stack.path(f"logs-{label}-proxy")))
            flight, close_flight = _flight_timer(f"grpc://127.0.0.1:{flight_port}", keys.noisy)
            servers.callback(close_flight)
            doors[label] = {"query": query_api.url, "proxy": proxy.url, "flight": flight, "pid": query_api.pid}
            print(f"[fresh] {label}: query-api pid {query_api.pid} {query_api.url}, flight {flight_port}, "
                  f"proxy {proxy.url}", flush=True)
        duck = _duck_timer(demo["paths"], TABLE)
        client = servers.enter_context(httpx.Client(headers=keys.header(keys.noisy), timeout=600))
        print(f"[fresh] load before: {_uptime()}", flush=True)
        header = f"{'query':<40} {'duckdb':>7}"
        for label in doors:
            header += f" | {label}: {'direct':>7} {'proxy':>7} {'flight':>7} (x duckdb)"
        print(header)
        for title, sql in demo_queries(demo["now"]):
            times: dict[str, list[float]] = {"duckdb": []}
            for label, door in doors.items():
                for kind in ("direct", "proxy", "flight"):
                    times[f"{label}.{kind}"] = []
                # Warm: the plan cache, the RAM tier, the Flight connection.
                _strata(client, door["query"], sql, None, fresh=True)
                _strata(client, door["proxy"], sql, None, fresh=True)
                door["flight"](sql)
            duck(sql)
            for _ in range(args.runs):
                times["duckdb"].append(duck(sql))
                for label, door in doors.items():
                    times[f"{label}.direct"].append(_strata(client, door["query"], sql, None, fresh=True)[0])
                    times[f"{label}.proxy"].append(_strata(client, door["proxy"], sql, None, fresh=True)[0])
                    times[f"{label}.flight"].append(door["flight"](sql))
            p50 = {k: statistics.median(v) * 1000 for k, v in times.items()}
            line = f"{title[:40]:<40} {p50['duckdb']:6.2f}ms"
            for label in doors:
                line += " | " + " ".join(
                    f"{p50[f'{label}.{kind}']:5.2f}ms {p50[f'{label}.{kind}'] / p50['duckdb']:4.2f}x"
                    for kind in ("direct", "proxy", "flight"))
            print(line, flush=True)
        print(f"[fresh] load after: {_uptime()}", flush=True)
        if args.profile:
            _profile(client, doors["this"], demo_queries(demo["now"])[0][1], args)
        if args.hold:
            print(f"[fresh] holding {args.hold:.0f} s: " + ", ".join(f"{k} pid {d['pid']}" for k, d in doors.items()),
                  flush=True)
            time.sleep(args.hold)


if __name__ == "__main__":
    main()
