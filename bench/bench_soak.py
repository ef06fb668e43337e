"""Soak: writers that never stop, against planner-api and indexer-api with their embedded workers (the defaults:
one merge slot, one build slot), on a local Spark Connect server; does compaction keep up, and what is its debt?

    .tools/bin/uv run python -m bench.run soak                       # the three parts, writes docs/benchmarks.md
    .tools/bin/uv run python -m bench.bench_soak --part soak --writers 4 --rate 50 --minutes 5   # printed only
    .tools/bin/uv run python -m bench.bench_soak --quick             # a short run of each part, printed only
    .tools/bin/uv run python -m bench.bench_soak --part sweep --sweep-rates 50 --json a.json    # one point, printed
    .tools/bin/uv run python -m bench.bench_soak --sweep-chart out.svg --series "defaults=a.json,b.json" \
        --series "other settings=c.json,d.json"                      # sweeps saved by --json, side by side

Parts:
- `soak`: W writers sending R NDJSON requests/s in all, of N rows each (timestamps "now"), to one index of 60 s windows
  with 60 s of late data, for M minutes; then the writers stop and the stack drains. Every 2 s the debt
  (`GET /v1/indexes/{id}/debt`) is sampled; the curve is drawn to docs/soak-debt.svg. Targets (issue 22): every
  row accepted, never more than 300 published splits, every closed window final within 60 s of closing, no
  artifact build waiting more than 60 s; ingest p50 under load within 1.5x of the same load with compaction and
  indexing off (a second, shorter run).
- `backlog`: compaction and indexing paused while 5,000 small splits land; then indexing resumed alone (the rate
  the artifact builds drain at, and their CPU per build), then compaction: the rate the backlog drains at (goal
  200 splits/s), and its CPU per merge.
- `sweep`: two-minute soaks at 50, 100, 200 and 400 requests/s, each then one minute without background work: the
  achieved rate, peak splits, final-merge delay and ingest p50 ratio at each, drawn to docs/soak-sweep.svg; the
  highest rate whose debt stays bounded.
- `crossover`: one merge of ten sorted inputs at rising sizes, in the worker's local process pool and as a Spark
  job, alternating: where `STRATA_COMPACTION_LOCAL_MAX_BYTES` should stand.

Writers are open-loop per writer (request k is due at k/R s; a writer that falls behind sends at once, one
request at a time, as an agent would), so the offered and the achieved rates are both reported.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

from bench.bench_query import api_child, api_keys, child_env
from bench.common import fmt_int
from bench.harness import REPO_ROOT, cpu_seconds_by_tree

SECTION = "soak"
CHART_PATH = REPO_ROOT / "docs" / "soak-debt.svg"
SWEEP_CHART_PATH = REPO_ROOT / "docs" / "soak-sweep.svg"
# Requests/s of 200 rows offered by the sweep (issue 34): 400 is past what one indexer-api on 2 cores answers.
SWEEP_RATES = (50, 100, 200, 400)
WINDOW_SECS = 60
LATE_SECS = 60
SAMPLE_SECS = 2.0
GOALS = {"max_published_splits": 300, "final_within_secs": 60, "indexing_wait_secs": 60, "ingest_p50_ratio": 1.5,
         "backlog_splits_per_sec": 200}
PARTS = ("soak", "backlog", "sweep", "crossover")
# Rows per merge (ten inputs each) for the local-vs-Spark crossover.
CROSSOVER_ROWS = (2_000, 20_000, 200_000, 1_000_000, 4_000_000)


def index_config(index_id: str) -> dict[str, Any]:
    from strata_services.sample_data import metrics_index_config

    return metrics_index_config(index_id, window_duration_secs=WINDOW_SECS, late_data_acceptance_secs=LATE_SECS,
                                compaction_start_time=0)


class RowSource:
    """NDJSON bodies of metrics rows stamped "now" (the last two seconds, as agents send what they just
    collected). The rows' other fields are drawn once per source, so a writer spends microseconds, not the
    server's CPU share, on each body."""

    def __init__(self, seed: int, pool: int = 4096) -> None:
        rng = random.Random(seed)
        self.rng = rng
        self.parts = []
        for _ in range(pool):
            service = rng.randrange(20)
            head = json.dumps({"metric_name": f"metric_{rng.randrange(50):03d}", "service": f"service_{service:02d}",
                               "host": f"host-{service * 25 + rng.randrange(25):04d}"})[:-1]
            self.parts.append((head + ', "timestamp_secs": ', f', "value": {rng.random() * 100:.6f}}}\n'))

    def body(self, rows: int, now: float) -> bytes:
        start = self.rng.randrange(len(self.parts))
        stamps = (int(now - 2 * self.rng.random()) for _ in range(rows))
        return "".join(f"{head}{stamp}{tail}" for (head, tail), stamp in zip(
            (self.parts[(start + i) % len(self.parts)] for i in range(rows)), stamps, strict=True)).encode()


class Writers:
    """W writers at R requests/s in all (R/W each); latencies and outcomes of every request."""

    def __init__(self, url: str, index_id: str, headers: dict[str, str], *, writers: int, rate: float,
                 rows: int) -> None:
        self.url = f"{url}/v1/indexes/{index_id}/ingest"
        self.headers = {**headers, "content-type": "application/x-ndjson"}
        self.writers, self.rate, self.rows = writers, rate / writers, rows
        self.latencies: list[float] = []
        self.rows_sent = self.rows_accepted = self.requests = self.failures = 0
        self.errors: list[str] = []

    async def run(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        await asyncio.gather(*(self._writer(w, deadline) for w in range(self.writers)))

    async def _writer(self, number: int, deadline: float) -> None:
        rng = RowSource(number)
        async with httpx.AsyncClient(timeout=60) as client:
            started = time.monotonic() + number / (self.writers * self.rate)  # writers evenly staggered
            k = 0
            while time.monotonic() < deadline:
                due = started + k / self.rate
                if due >= deadline:
                    return
                if due > time.monotonic():
                    await asyncio.sleep(due - time.monotonic())
                await self.send(client, rng)
                # A writer that fell behind skips what it could not send in time: the load phase lasts as long
                # as asked, and the achieved rate says how much of the offered load got through.
                k = max(k + 1, int((time.monotonic() - started) * self.rate))

    async def send(self, client: httpx.AsyncClient, rows: RowSource) -> None:
        body = rows.body(self.rows, time.time())
        sent = time.perf_counter()
        try:
            response = await client.post(self.url, content=body, headers=self.headers)
        except httpx.HTTPError as exc:
            self.failures += 1
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        self.latencies.append(time.perf_counter() - sent)
        self.requests += 1
        self.rows_sent += self.rows
        if response.status_code != 200:
            self.failures += 1
            self.errors.append(f"{response.status_code}: {response.text[:200]}")
            return
        outcome = response.json()
        self.rows_accepted += outcome["rows_written"] + outcome["rows_dropped_late"]


class DebtSampler:
    """`GET /v1/indexes/{id}/debt` every SAMPLE_SECS, with the time since the start."""

    def __init__(self, planner_url: str, index_id: str, headers: dict[str, str]) -> None:
        self.url = f"{planner_url}/v1/indexes/{index_id}/debt"
        self.headers = headers
        self.samples: list[dict[str, Any]] = []
        self.started = time.monotonic()

    async def run(self, stop: asyncio.Event) -> None:
        async with httpx.AsyncClient(timeout=30, headers=self.headers) as client:
            while not stop.is_set():
                await self.sample(client)
                try:
                    await asyncio.wait_for(stop.wait(), SAMPLE_SECS)
                except TimeoutError:
                    pass

    async def sample(self, client: httpx.AsyncClient) -> dict[str, Any] | None:
        try:
            response = await client.get(self.url)
            response.raise_for_status()
        except httpx.HTTPError as exc:
            print(f"[soak] debt sample failed: {exc}", flush=True)
            return None
        debt = response.json()
        compaction, indexing = debt["compaction"], debt["indexing"]
        sample = {
            "t": time.monotonic() - self.started,
            "published_splits": debt["published_splits"],
            "splits_waiting": compaction["splits_waiting"],
            "closed_not_final": compaction["closed_windows_not_final"],
            "closed_not_final_age": compaction["oldest_closed_window_not_final_age_secs"] or 0.0,
            "oldest_waiting_split_age": compaction["oldest_waiting_split_age_secs"] or 0.0,
            "merges_per_sec": compaction["merges_per_sec"],
            "rows_merged_per_sec": compaction["rows_merged_per_sec"],
            "indexing_waiting": indexing["files_waiting"],
            "indexing_oldest": indexing["oldest_waiting_secs"] or 0.0,
        }
        self.samples.append(sample)
        return sample


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


class SoakStack:
    """PostgreSQL database, a Spark Connect server, and planner-api and indexer-api with their embedded workers."""

    def __init__(self, stack, name: str, env_overrides: dict[str, str]) -> None:
        self.stack, self.name, self.env_overrides = stack, name, env_overrides
        self.exits = ExitStack()

    def __enter__(self) -> SoakStack:
        from strata_core.config import Settings
        from strata_services.local.processes import free_port
        from strata_services.local.spark_server import LocalSparkConnectServer

        url = self.stack.create_database(f"strata_bench_{self.name}")
        storage = self.stack.path(f"{self.name}-storage")
        settings = Settings()
        server = LocalSparkConnectServer(free_port(), master=settings.spark_master,
                                         driver_memory=settings.spark_driver_memory,
                                         work_dir=self.stack.path(f"{self.name}-spark"))
        self.exits.callback(server.stop)
        server.start()
        server.wait_ready(timeout=240)
        env = child_env(url, storage, self.stack.path(f"{self.name}-home"), server.remote, **self.env_overrides)
        logs = self.stack.path(f"{self.name}-logs")
        self.planner = self.exits.enter_context(api_child("planner-api", env, logs))
        self.indexer = self.exits.enter_context(api_child("indexer-api", env, logs))
        self.spark_pid = server.pid
        return self

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds so far of each part: the APIs and, apart, their children (the local job processes, and
        indexer-api's indexing runner process with its own), Spark (its JVM and Python workers), PostgreSQL, and
        this process (the writers and the sampler)."""
        roots = {"planner-api": self.planner.pid, "indexer-api": self.indexer.pid, "spark": self.spark_pid,
                 "postgresql": self.stack.postgres_pid()}
        out = cpu_seconds_by_tree({k: v for k, v in roots.items() if v}, children_apart=True)
        for name in ("spark", "postgresql"):
            if name in out:
                out[name] += out.pop(f"{name} children")
        out["bench (writers)"] = time.process_time()
        return out

    def __exit__(self, *exc: object) -> None:
        self.exits.close()

    def create_index(self, index_id: str) -> None:
        keys = api_keys()
        response = httpx.post(f"{self.indexer.url}/v1/indexes", json=index_config(index_id),
                              headers=keys.header(keys.admin), timeout=60)
        response.raise_for_status()

    def published_rows(self, index_id: str) -> int:
        keys = api_keys()
        windows = httpx.get(f"{self.planner.url}/v1/indexes/{index_id}/windows", params={"limit": 1000},
                            headers=keys.header(keys.admin), timeout=60).json()
        return sum(w["rows"] for w in windows["windows"])


async def _idle_latencies(writers: Writers, count: int) -> list[float]:
    """Single requests, spaced out, before any load: ingestion's own latency on an idle stack."""
    rng = RowSource(99)
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(count):
            await writers.send(client, rng)
            await asyncio.sleep(0.2)
    latencies, writers.latencies = writers.latencies, []
    return latencies


async def _drain(sampler: DebtSampler, seconds: float) -> float:
    """Sample until the last window written is closed and final and no artifact build waits, or `seconds` pass;
    how long it took."""
    started = time.monotonic()
    # The last window written closes one window length plus the late-data period after the writers stop.
    closes_after = WINDOW_SECS + LATE_SECS
    if seconds <= 0:
        return float("nan")
    async with httpx.AsyncClient(timeout=30, headers=sampler.headers) as client:
        while time.monotonic() - started < seconds:
            sample = await sampler.sample(client)
            elapsed = time.monotonic() - started
            if (sample is not None and elapsed > closes_after and sample["closed_not_final"] == 0
                    and sample["indexing_waiting"] == 0):
                return elapsed
            await asyncio.sleep(SAMPLE_SECS)
    return float("nan")


def soak(stack, *, writers: int, rate: float, rows: int, seconds: float, drain_secs: float,
         env_overrides: dict[str, str] | None = None, name: str = "soak") -> dict[str, Any]:
    keys = api_keys()
    index_id = f"soak-{int(time.time())}"
    with SoakStack(stack, name, env_overrides or {}) as s:
        s.create_index(index_id)
        load = Writers(s.indexer.url, index_id, keys.header(keys.writer), writers=writers, rate=rate, rows=rows)
        sampler = DebtSampler(s.planner.url, index_id, keys.header(keys.admin))

        async def scenario() -> dict[str, Any]:
            idle = await _idle_latencies(load, 40)
            stop = asyncio.Event()
            sampling = asyncio.create_task(sampler.run(stop))
            cpu_before = s.cpu_seconds()
            load_started = time.monotonic()
            await load.run(seconds)
            load_secs = time.monotonic() - load_started
            cpu = {k: (v - cpu_before.get(k, 0.0)) / load_secs for k, v in s.cpu_seconds().items()}
            stop.set()
            await sampling
            load_end = sampler.samples[-1]["t"] if sampler.samples else 0.0
            drained = await _drain(sampler, drain_secs)
            return {"idle": idle, "load_secs": load_secs, "load_end": load_end, "drain_secs": drained, "cpu": cpu}

        print(f"[soak] {writers} writers, {rate:g} requests/s of {rows} rows for {seconds:.0f}s", flush=True)
        outcome = asyncio.run(scenario())
        published_rows = s.published_rows(index_id)
    samples = sampler.samples
    during = [x for x in samples if x["t"] <= outcome["load_end"]]
    return {
        "writers": writers, "rate": rate, "rows": rows, "seconds": seconds,
        "offered_rps": rate, "achieved_rps": load.requests / outcome["load_secs"],
        "requests": load.requests, "failures": load.failures, "errors": load.errors[:5],
        "rows_sent": load.rows_sent, "rows_accepted": load.rows_accepted, "rows_published": published_rows,
        "ingest_idle_p50": percentile(outcome["idle"], 50), "ingest_idle_p99": percentile(outcome["idle"], 99),
        "ingest_load_p50": percentile(load.latencies, 50), "ingest_load_p99": percentile(load.latencies, 99),
        "max_published_splits": max((x["published_splits"] for x in samples), default=0),
        "max_published_splits_load": max((x["published_splits"] for x in during), default=0),
        "max_closed_not_final_age": max((x["closed_not_final_age"] for x in samples), default=0.0),
        "max_indexing_wait": max((x["indexing_oldest"] for x in samples), default=0.0),
        "max_indexing_waiting": max((x["indexing_waiting"] for x in samples), default=0),
        "merges_per_sec_peak": max((x["merges_per_sec"] for x in samples), default=0.0),
        "drain_secs": outcome["drain_secs"], "load_end": outcome["load_end"],
        "final": samples[-1] if samples else {}, "samples": samples, "cpu_cores": outcome["cpu"],
        "env": env_overrides or {},
    }


def bounded(result: dict[str, Any]) -> bool:
    """Debt bounded: the published splits of the load's last third no higher than those of its middle third
    (plus a window's worth of slack), every closed window final within the goal, no build waiting past it."""
    during = [x for x in result["samples"] if x["t"] <= result["load_end"]]
    if len(during) < 6:
        return False
    third = len(during) // 3
    middle = max(x["published_splits"] for x in during[third:2 * third])
    last = max(x["published_splits"] for x in during[2 * third:])
    return (last <= middle * 1.2 + 20 and result["max_closed_not_final_age"] <= GOALS["final_within_secs"]
            and result["max_indexing_wait"] <= GOALS["indexing_wait_secs"] and result["failures"] == 0)


def backlog(stack, *, splits: int, rows: int, env_overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """Compaction and indexing paused while `splits` small splits land in one open window; then indexing resumed
    alone (how fast the artifact builds drain, and their CPU per build), then compaction (how fast the merges
    drain, and their CPU per merge)."""
    keys = api_keys()
    index_id = f"backlog-{int(time.time())}"
    admin = keys.header(keys.admin)
    # One split per request, so the backlog is exactly `splits` splits (group commit would coalesce the fill).
    env = {**(env_overrides or {}), "STRATA_INGEST_GROUP_COMMIT": "false"}
    with SoakStack(stack, "backlog", env) as s:
        config = index_config(index_id)
        # One long open window holds the whole backlog: nothing closes (and gets a final merge) meanwhile.
        config.update(window_duration_secs=3600, late_data_acceptance_secs=7200)
        httpx.post(f"{s.indexer.url}/v1/indexes", json=config, headers=admin, timeout=60).raise_for_status()
        httpx.post(f"{s.planner.url}/v1/indexes/{index_id}/compaction/pause", json={}, headers=admin,
                   timeout=60).raise_for_status()
        httpx.post(f"{s.indexer.url}/v1/indexes/{index_id}/indexing/pause", json={}, headers=admin,
                   timeout=60).raise_for_status()
        load = Writers(s.indexer.url, index_id, keys.header(keys.writer), writers=8, rate=1000.0, rows=rows)
        print(f"[soak] backlog: {splits:,} splits of {rows} rows, compaction and indexing paused", flush=True)

        async def fill() -> None:
            rng = RowSource(7)
            sem = asyncio.Semaphore(8)
            async with httpx.AsyncClient(timeout=60) as client:
                async def one() -> None:
                    async with sem:
                        await load.send(client, rng)
                await asyncio.gather(*(one() for _ in range(splits)))

        asyncio.run(fill())
        sampler = DebtSampler(s.planner.url, index_id, admin)

        async def drain_phase(client: httpx.AsyncClient, resume_url: str,
                              drained: Callable[[dict[str, Any]], bool]) -> tuple[float, dict[str, float]]:
            """Resume a paused queue and wait until a debt sample is `drained`: the seconds it took and the CPU
            seconds of each part meanwhile."""
            cpu_before = s.cpu_seconds()
            (await client.post(resume_url, json={})).raise_for_status()
            started = time.monotonic()
            while time.monotonic() - started < 900:
                if drained(await sampler.sample(client)):
                    break
                # Not more often: each sample is a debt read on planner-api's event loop, which the polls share.
                await asyncio.sleep(0.5)
            took = time.monotonic() - started
            cpu_after = s.cpu_seconds()
            return took, {k: cpu_after[k] - cpu_before.get(k, 0.0) for k in cpu_after}

        async def drain() -> tuple[tuple[float, dict[str, float]], int, tuple[float, dict[str, float]]]:
            async with httpx.AsyncClient(timeout=30, headers=admin) as client:
                # The backlog's artifact builds first, alone, so each drain's rate and CPU are its own.
                builds = await drain_phase(client, f"{s.indexer.url}/v1/indexes/{index_id}/indexing/resume",
                                           lambda sample: sample["indexing_waiting"] == 0)
                before = (await sampler.sample(client))["published_splits"]
                # Drained: what is left is one split per level the policy leaves alone.
                merged = await drain_phase(client, f"{s.planner.url}/v1/indexes/{index_id}/compaction/resume",
                                           lambda sample: sample["splits_waiting"] <= 20
                                           and sample["published_splits"] <= 20)
                return builds, before, merged

        load_before = os.getloadavg()[0]
        (builds_secs, builds_cpu), before, (seconds, drain_cpu) = asyncio.run(drain())
        load_after = os.getloadavg()[0]
        published_rows = s.published_rows(index_id)
        merges = httpx.get(f"{s.planner.url}/v1/compaction/summary", headers=admin,
                           timeout=60).json()["counts"].get("success", 0)
    after = sampler.samples[-1]["published_splits"]
    return {"splits": splits, "rows": rows, "ingested_splits": before, "left": after, "drain_secs": seconds,
            "splits_per_sec": (before - after) / seconds if seconds else 0.0,
            # The builds' drain: from indexing resumed to no build waiting, and the CPU seconds of each part.
            "indexing_secs": builds_secs, "builds_per_sec": before / builds_secs if builds_secs else 0.0,
            "builds_cpu": builds_cpu,
            "rows_sent": load.rows_sent, "rows_published": published_rows, "failures": load.failures,
            "env": env_overrides or {}, "merges": merges, "load_before": load_before, "load_after": load_after,
            # CPU seconds of each part over the drain (from resume to drained): what a merge costs, end to end.
            "drain_cpu": drain_cpu}


def without_background(stack, *, writers: int, rate: float, rows: int, seconds: float,
                       env_overrides: dict[str, str] | None, name: str) -> dict[str, Any]:
    """The same load with no compaction and no indexing at all: ingestion's latency under that load on its own,
    so the ratio to it says what the background work adds (issue 34: at most 1.5x)."""
    quiet = {**(env_overrides or {}), "STRATA_COMPACTION_WORKER_SLOTS": "0", "STRATA_INDEXING_WORKER_SLOTS": "0"}
    baseline = soak(stack, writers=writers, rate=rate, rows=rows, seconds=seconds, drain_secs=0,
                    env_overrides=quiet, name=name)
    return {k: v for k, v in baseline.items() if k != "samples"}


def sweep(stack, *, rates: list[float], writers: int, rows: int, seconds: float,
          env_overrides: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One soak per rate, with as many writers as the rate needs for each to send at most 12.5 requests/s (an
    80 ms budget per request: a writer waits for each answer, so fewer could not offer the rate at all), then the
    same load without background work for the ingest p50 ratio."""
    out = []
    for rate in rates:
        rate_writers = max(writers, math.ceil(rate / 12.5))
        result = soak(stack, writers=rate_writers, rate=rate, rows=rows, seconds=seconds, drain_secs=240,
                      env_overrides=env_overrides, name=f"sweep{int(rate)}")
        result["bounded"] = bounded(result)
        point = {k: v for k, v in result.items() if k != "samples"}
        point["baseline"] = without_background(stack, writers=rate_writers, rate=rate, rows=rows,
                                               seconds=min(seconds, 60.0), env_overrides=env_overrides,
                                               name=f"sweep{int(rate)}-baseline")
        point["ingest_p50_ratio"] = result["ingest_load_p50"] / point["baseline"]["ingest_load_p50"]
        out.append(point)
        print(f"[soak] sweep {rate:g} requests/s: achieved {point['achieved_rps']:.1f}, bounded={point['bounded']}, "
              f"ingest p50 {point['ingest_p50_ratio']:.2f}x of no background work", flush=True)
    return out


def crossover(stack, *, sizes: tuple[int, ...], runs: int) -> list[dict[str, Any]]:
    """The same merge through `LocalJobPool` (what a worker does under the local limit) and as a Spark job on a
    local Spark Connect server (above it), alternating, `runs` times each; median seconds."""
    from bench.bench_merge import generate_dataset, merge_spec
    from strata_core.config import Settings
    from strata_frame.jobqueue.local_jobs import LocalJobPool
    from strata_frame.spark import SparkSessionFactory
    from strata_jobs.spark_merge import run_merge_locally, submit_merges
    from strata_services.local.processes import free_port
    from strata_services.local.spark_server import LocalSparkConnectServer

    settings = Settings()
    out = []
    server = LocalSparkConnectServer(free_port(), master=settings.spark_master,
                                     driver_memory=settings.spark_driver_memory,
                                     work_dir=stack.path("crossover-spark"))
    pool = LocalJobPool(settings.local_job_processes, niceness=settings.local_job_niceness)
    factory = None
    try:
        server.start()
        server.wait_ready(timeout=240)
        factory = SparkSessionFactory(server.remote, bundle_dir=stack.path("crossover-bundles"))
        for rows in sizes:
            paths = generate_dataset(stack.path(f"crossover-{rows}"), rows, 10, seed=rows)
            input_bytes = sum(p.stat().st_size for p in paths)
            times: dict[str, list[float]] = {"local": [], "spark": []}
            for run_number in range(runs + 1):  # the first of each is a warm-up
                for path in ("local", "spark"):
                    spec = merge_spec(paths, stack.path(f"crossover-out-{rows}-{path}-{run_number}"),
                                      f"x{rows}-{path}-{run_number}")
                    started = time.perf_counter()
                    if path == "local":
                        outcome = run_merge_locally(pool, spec)
                    else:
                        [outcome] = submit_merges(factory.session(), [spec], f"crossover-{rows}-{run_number}")
                    if outcome.result is None:
                        raise RuntimeError(f"{path} merge of {rows} rows failed: {outcome.error}")
                    if run_number:
                        times[path].append(time.perf_counter() - started)
            local, spark = statistics.median(times["local"]), statistics.median(times["spark"])
            out.append({"rows": rows, "input_bytes": input_bytes, "local": local, "spark": spark})
            print(f"[soak] crossover {rows:,} rows ({input_bytes / 2**20:.1f} MiB): local {local * 1e3:.0f} ms, "
                  f"spark {spark * 1e3:.0f} ms", flush=True)
    finally:
        pool.close()
        if factory is not None:
            factory.close()
        server.stop()
    return out


def run(stack, *, quick: bool = False, parts: tuple[str, ...] = PARTS, writers: int = 4, rate: float = 50.0,
        rows: int = 200, seconds: float = 300.0, backlog_splits: int = 5000, compare_spark: bool = True,
        env_overrides: dict[str, str] | None = None, sweep_rates: tuple[float, ...] = (),
        charts: bool = True) -> dict[str, Any]:
    """Every part asked for; `quick` makes each short (to check the harness, not to publish). `charts`: draw the
    docs' charts (a run whose results are only printed must leave the published ones alone)."""
    if quick:
        seconds, backlog_splits, compare_spark = 30.0, 500, False
    sweep_rates = sweep_rates or ((50, 200) if quick else SWEEP_RATES)
    sweep_secs = 30.0 if quick else 120.0
    crossover_sizes = CROSSOVER_ROWS[:3] if quick else CROSSOVER_ROWS
    crossover_runs = 1 if quick else 5
    result: dict[str, Any] = {"parts": parts}
    if "soak" in parts:
        result["soak"] = soak(stack, writers=writers, rate=rate, rows=rows, seconds=seconds, drain_secs=300,
                              env_overrides=env_overrides)
        result["soak"]["bounded"] = bounded(result["soak"])
        if charts:
            draw_chart(result["soak"], CHART_PATH)
        result["soak_baseline"] = without_background(stack, writers=writers, rate=rate, rows=rows,
                                                     seconds=min(seconds, 120.0), env_overrides=env_overrides,
                                                     name="soak-baseline")
    if "backlog" in parts:
        result["backlog"] = backlog(stack, splits=backlog_splits, rows=rows, env_overrides=env_overrides)
        if compare_spark:
            # The same drain with every merge a Spark job, as before tiny merges ran locally (a smaller backlog: at
            # that rate 5,000 splits take minutes; the builds stay local, they only precede the drain).
            result["backlog_spark"] = backlog(stack, splits=min(backlog_splits, 2000), rows=rows,
                                              env_overrides={"STRATA_COMPACTION_LOCAL_MAX_BYTES": "0"})
    if "sweep" in parts:
        result["sweep"] = sweep(stack, rates=list(sweep_rates), writers=writers, rows=rows, seconds=sweep_secs,
                                env_overrides=env_overrides)
        if charts:
            draw_sweep_chart([("", result["sweep"])], SWEEP_CHART_PATH)
    if "crossover" in parts:
        result["crossover"] = crossover(stack, sizes=crossover_sizes, runs=crossover_runs)
    return result


# -- the chart ------------------------------------------------------------------------------------------------

COUNTS = (("published_splits", "published splits", "#1f77b4"),
          ("splits_waiting", "splits waiting to merge", "#ff7f0e"),
          ("indexing_waiting", "artifact builds waiting", "#2ca02c"))
AGES = (("closed_not_final_age", "oldest closed window not final", "#d62728"),
        ("indexing_oldest", "oldest artifact build waiting", "#9467bd"),
        ("oldest_waiting_split_age", "oldest split waiting to merge", "#8c564b"))


def draw_chart(result: dict[str, Any], path: Path) -> None:
    """The debt over time as a plain SVG (no plotting dependency): counts above, ages in seconds below, and when
    the writers stopped."""
    samples = result["samples"]
    if not samples:
        return
    width, left, right = 900, 60, 20
    t_max = max(x["t"] for x in samples) or 1.0

    def px(t: float) -> float:
        return left + (width - left - right) * t / t_max

    parts = [f'<text x="{left}" y="20" font-size="14">Debt over time: {result["writers"]} writers, '
             f'{result["rate"]:g} requests/s of {result["rows"]} rows, {result["seconds"]:.0f} s, then drain</text>']
    top = 40
    for series, unit in ((COUNTS, ""), (AGES, "s")):
        height = 200
        y_max = _nice(max(max(x[key] for x in samples) for key, _, _ in series) or 1.0)

        def py(v: float, top: int = top, height: int = height, y_max: float = y_max) -> float:
            return top + height * (1 - v / y_max)

        for i in range(6):
            v = y_max * i / 5
            parts.append(f'<line x1="{left}" x2="{width - right}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#ddd"/>')
            parts.append(f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}{unit}</text>')
        stop_x = px(result["load_end"])
        parts.append(f'<line x1="{stop_x:.1f}" x2="{stop_x:.1f}" y1="{top}" y2="{top + height}" stroke="#555" '
                     f'stroke-dasharray="4,3"/>')
        parts.append(f'<text x="{stop_x + 4:.1f}" y="{top + 12}">writers stop</text>')
        for n, (key, label, color) in enumerate(series):
            points = " ".join(f"{px(x['t']):.1f},{py(x[key]):.1f}" for x in samples)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{points}"/>')
            lx = left + n * 260
            parts.append(f'<rect x="{lx}" y="{top + height + 12}" width="12" height="3" fill="{color}"/>')
            parts.append(f'<text x="{lx + 16}" y="{top + height + 17}">{label}</text>')
        top += height + 50
    for i in range(7):
        t = t_max * i / 6
        parts.append(f'<text x="{px(t):.1f}" y="{top - 8}" text-anchor="middle">{t:.0f}s</text>')
    total = top + 10
    path.write_text("\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" '
                               f'font-family="sans-serif" font-size="12">',
                               f'<rect width="{width}" height="{total}" fill="white"/>', *parts, "</svg>"]) + "\n")


SWEEP_PANELS = (
    ("achieved_rps", "requests/s achieved (dashed: offered)", "", None),
    ("max_published_splits_load", "most published splits under load", "", GOALS["max_published_splits"]),
    ("max_closed_not_final_age", "longest a closed window waited for its final merge", "s",
     GOALS["final_within_secs"]),
    ("ingest_p50_ratio", "ingest p50 / the same load without compaction or indexing", "x",
     GOALS["ingest_p50_ratio"]),
)


SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")


def draw_sweep_chart(series: list[tuple[str, list[dict[str, Any]]]], path: Path) -> None:
    """One or more sweeps (label, points at the same offered rates) as four small panels over the offered rate
    (plain SVG): what was achieved, the peak debt, the final-merge delay and the ingest latency ratio, each with
    its goal as a dashed red line; several sweeps are drawn side by side, one colour each, with a legend."""
    series = [(label, points) for label, points in series if points]
    if not series:
        return
    rates = sorted({float(p["offered_rps"]) for _, points in series for p in points})
    width, left, right, height = 700, 60, 80, 130
    step = (width - left - right) / max(len(rates) - 1, 1)

    def px(rate: float) -> float:
        return left + step * rates.index(float(rate))

    parts = ['<text x="10" y="20" font-size="14">Sustainable rate: soaks at rising offered rates of 200-row '
             'requests</text>']
    if len(series) > 1:
        for n, (label, _) in enumerate(series):
            colour = SERIES_COLOURS[n % len(SERIES_COLOURS)]
            parts.append(f'<rect x="{10 + n * 250}" y="30" width="12" height="12" fill="{colour}"/>')
            parts.append(f'<text x="{26 + n * 250}" y="40">{label}</text>')
    top = 70
    for key, label, unit, goal in SWEEP_PANELS:
        values = [float(p[key]) for _, points in series for p in points]
        ceiling = max(values + ([float(goal)] if goal else []) + (rates if key == "achieved_rps" else []))
        y_max = _nice(ceiling * 1.1) if unit != "x" else max(2.0, math.ceil(ceiling * 1.1))

        def py(v: float, top: int = top, y_max: float = y_max) -> float:
            return top + height * (1 - v / y_max)

        parts.append(f'<text x="{left}" y="{top - 6}" font-weight="bold">{label}</text>')
        for i in range(5):
            v = y_max * i / 4
            parts.append(f'<line x1="{left}" x2="{width - right}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#ddd"/>')
            parts.append(f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:g}{unit}</text>')
        if goal:
            parts.append(f'<line x1="{left}" x2="{width - right}" y1="{py(goal):.1f}" y2="{py(goal):.1f}" '
                         f'stroke="#d62728" stroke-dasharray="5,3"/>')
        if key == "achieved_rps":
            offered = " ".join(f"{px(r):.1f},{py(r):.1f}" for r in rates)
            parts.append(f'<polyline fill="none" stroke="#999" stroke-dasharray="4,3" points="{offered}"/>')
        for n, (_, points) in enumerate(series):
            colour = SERIES_COLOURS[n % len(SERIES_COLOURS)]
            ordered = sorted(points, key=lambda p: float(p["offered_rps"]))
            line = " ".join(f"{px(p['offered_rps']):.1f},{py(float(p[key])):.1f}" for p in ordered)
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{line}"/>')
            for p in ordered:
                v = float(p[key])
                shown = f"{v:.2f}{unit}" if unit == "x" else f"{v:.0f}{unit}"
                # Labels of a second series go below its points, so two close values stay readable.
                dy = -5 if n == 0 else 14
                parts.append(f'<circle cx="{px(p["offered_rps"]):.1f}" cy="{py(v):.1f}" r="3" fill="{colour}"/>')
                parts.append(f'<text x="{px(p["offered_rps"]) + 5:.1f}" y="{py(v) + dy:.1f}" fill="{colour}">'
                             f'{shown}</text>')
        top += height + 45
    for r in rates:
        parts.append(f'<text x="{px(r):.1f}" y="{top - 22}" text-anchor="middle">{r:g}/s offered</text>')
    total = top
    path.write_text("\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" '
                               f'font-family="sans-serif" font-size="12">',
                               f'<rect width="{width}" height="{total}" fill="white"/>', *parts, "</svg>"]) + "\n")


def chart_from_results(spec: list[str], path: Path) -> None:
    """`--sweep-chart`: draw the sweeps saved by `--json` runs; each spec is LABEL=FILE[,FILE...], the files'
    sweep points together (runs of one setting at different rates)."""
    series = []
    for item in spec:
        label, _, files = item.rpartition("=")
        points = [p for f in files.split(",") for p in json.loads(Path(f).read_text()).get("sweep", [])]
        series.append((label, points))
    draw_sweep_chart(series, path)


def _nice(value: float) -> float:
    for step in (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000):
        if value <= step:
            return float(step)
    return float(value)


# -- the section ----------------------------------------------------------------------------------------------


def _met(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _baseline_rows(s: dict[str, Any], baseline: dict[str, Any] | None) -> list[str]:
    if not baseline:
        return []
    ratio = s["ingest_load_p50"] / baseline["ingest_load_p50"]
    return [f"| ingest p50 / p99, same load with no compaction or indexing at all | "
            f"{baseline['ingest_load_p50'] * 1e3:.1f} / {baseline['ingest_load_p99'] * 1e3:.1f} ms "
            f"({baseline['achieved_rps']:.1f} requests/s achieved) | with them <= {GOALS['ingest_p50_ratio']}x: "
            f"{ratio:.2f}x {_met(ratio <= GOALS['ingest_p50_ratio'])} |"]


def render(r: dict[str, Any]) -> str:
    lines = ["## Keeping up: soak, backlog and sustainable rate", "",
             "Writers that never stop, against planner-api and indexer-api with their embedded workers (defaults: "
             "one merge slot, one build slot; merges and artifact builds of inputs up to "
             "`STRATA_COMPACTION_LOCAL_MAX_BYTES` / `STRATA_INDEXING_LOCAL_MAX_BYTES` run in the worker's local "
             "process, larger ones on the local Spark Connect server). Index of 60 s windows, 60 s of late data, "
             "the default merge policy; NDJSON requests of rows stamped \"now\". Debt sampled every 2 s from "
             "`GET /v1/indexes/{id}/debt`.", ""]
    if "soak" in r:
        s = r["soak"]
        ratio = s["ingest_load_p50"] / s["ingest_idle_p50"] if s["ingest_idle_p50"] else float("nan")
        lines += [
            f"### Soak: {s['writers']} writers, {s['rate']:g} requests/s of {s['rows']} rows in all, for "
            f"{s['seconds']:.0f} s", "",
            "![debt over time](soak-debt.svg)", "",
            "| measure | value | goal |", "|---|---|---|",
            f"| requests offered / achieved | {s['offered_rps']:.0f}/s / {s['achieved_rps']:.1f}/s | |",
            f"| rows sent / accepted / published at the end | {fmt_int(s['rows_sent'])} / "
            f"{fmt_int(s['rows_accepted'])} / {fmt_int(s['rows_published'])} | every row "
            f"{_met(s['failures'] == 0 and s['rows_sent'] == s['rows_accepted'] == s['rows_published'])} |",
            f"| failed requests | {s['failures']} | 0 |",
            f"| most published splits (under load / ever) | {s['max_published_splits_load']} / "
            f"{s['max_published_splits']} | <= {GOALS['max_published_splits']} "
            f"{_met(s['max_published_splits'] <= GOALS['max_published_splits'])} |",
            f"| longest a closed window waited for its final merge | {s['max_closed_not_final_age']:.1f} s | "
            f"<= {GOALS['final_within_secs']} s {_met(s['max_closed_not_final_age'] <= GOALS['final_within_secs'])} |",
            f"| longest an artifact build waited (most waiting at once) | {s['max_indexing_wait']:.1f} s "
            f"({s['max_indexing_waiting']}) | <= {GOALS['indexing_wait_secs']} s "
            f"{_met(s['max_indexing_wait'] <= GOALS['indexing_wait_secs'])} |",
            f"| ingest p50 / p99, idle | {s['ingest_idle_p50'] * 1e3:.1f} / {s['ingest_idle_p99'] * 1e3:.1f} ms | |",
            f"| ingest p50 / p99, under load | {s['ingest_load_p50'] * 1e3:.1f} / "
            f"{s['ingest_load_p99'] * 1e3:.1f} ms ({ratio:.2f}x idle) | |",
            *_baseline_rows(s, r.get("soak_baseline")),
            f"| peak merges/s (60 s average) | {s['merges_per_sec_peak']:.2f} | |",
            f"| drained (last window final, no build waiting) after the writers stopped | "
            f"{s['drain_secs']:.0f} s | |",
            f"| debt bounded | {'yes' if s['bounded'] else 'no'} | |",
            "| CPU under load, cores (of " + str(os.cpu_count()) + ") | "
            + ", ".join(f"{k} {v:.2f}" for k, v in s["cpu_cores"].items()) + " | |", ""]
        if s["errors"]:
            lines += ["First errors: " + "; ".join(f"`{e[:120]}`" for e in s["errors"]), ""]
    if "backlog" in r:
        lines += ["### Backlog drain", "",
                  "Compaction and indexing paused on an index with one open 1-hour window while that many small "
                  "splits land (8 concurrent writers, group commit off so each request is one split); then "
                  "indexing resumed alone until no build waits (builds per second, and CPU per build of all "
                  "processes), then compaction; the rate is splits removed from the published set per second "
                  "until at most 20 are left.", "",
                  "| path | splits | builds drained in | builds | CPU per build | drained in | rate | goal |",
                  "|---|---|---|---|---|---|---|---|"]
        for key, label in (("backlog", "tiny merges in the worker's local process (default)"),
                           ("backlog_spark", "every merge a Spark job (`STRATA_COMPACTION_LOCAL_MAX_BYTES=0`), a "
                                             "smaller backlog")):
            if key in r:
                b = r[key]
                per_build = sum(b["builds_cpu"].values()) / max(b["ingested_splits"], 1) * 1e3
                lines.append(f"| {label} | {fmt_int(b['ingested_splits'])} -> {b['left']} | {b['indexing_secs']:.1f} s "
                             f"| {b['builds_per_sec']:.0f}/s | {per_build:.1f} ms "
                             f"| {b['drain_secs']:.1f} s "
                             f"| **{b['splits_per_sec']:.0f} splits/s** | >= {GOALS['backlog_splits_per_sec']} "
                             f"{_met(b['splits_per_sec'] >= GOALS['backlog_splits_per_sec'])} |")
        lines.append("")
    if "sweep" in r:
        lines += ["### Sustainable rate", "",
                  "Two-minute soaks at rising rates, each writer at most 12.5 requests/s (so 4 to 32 writers), each "
                  "followed by one minute of the same load with no compaction or indexing at all (the ratio's "
                  "denominator); bounded: the published splits of the load's last third no higher than of its "
                  "middle third (+20%, +20), every closed window final within 60 s, no build waiting over 60 s, no "
                  "failure.", "", "![the sweep](soak-sweep.svg)", "",
                  "| offered requests/s | writers | achieved | rows sent / published | most splits under load | "
                  "closed window final within | builds waited at most | ingest p50 load / no background work | "
                  "ratio (goal <= 1.5x) | bounded |", "|---|---|---|---|---|---|---|---|---|---|"]
        best = None
        for s in r["sweep"]:
            if s["bounded"] and (best is None or s["achieved_rps"] > best["achieved_rps"]):
                best = s
            quiet_p50 = s["baseline"]["ingest_load_p50"]
            lines.append(f"| {s['offered_rps']:.0f} | {s['writers']} | {s['achieved_rps']:.1f} | "
                         f"{fmt_int(s['rows_sent'])} / {fmt_int(s['rows_published'])} | "
                         f"{s['max_published_splits_load']} | {s['max_closed_not_final_age']:.0f} s | "
                         f"{s['max_indexing_wait']:.0f} s | {s['ingest_load_p50'] * 1e3:.1f} / {quiet_p50 * 1e3:.1f} "
                         f"ms ({s['baseline']['achieved_rps']:.1f}/s) | {s['ingest_p50_ratio']:.2f}x | "
                         f"{'yes' if s['bounded'] else 'no'} |")
        lines += ["", "Highest rate with bounded debt: " + (
            "none" if best is None else f"**{best['achieved_rps']:.0f} requests/s** of {best['rows']} rows achieved "
            f"({best['offered_rps']:.0f} offered)") + " (goal 200).", ""]
    if "crossover" in r:
        lines += ["### Where a merge runs: local process vs Spark job", "",
                  "One merge of ten sorted inputs, through the worker's local process pool (spawned child, niceness "
                  "10) and as a Spark job on the local Spark Connect server (`local[2]`), alternating; median of "
                  "the runs after a warm-up.", "",
                  "| rows | input | local | Spark job | Spark / local |", "|---|---|---|---|---|"]
        for c in r["crossover"]:
            lines.append(f"| {fmt_int(c['rows'])} | {c['input_bytes'] / 2**20:.2f} MiB | {c['local'] * 1e3:.0f} ms | "
                         f"{c['spark'] * 1e3:.0f} ms | {c['spark'] / c['local']:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=PARTS, action="append", help="only this part (repeatable); printed only")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--rate", type=float, default=50.0, help="requests/s of all writers together")
    parser.add_argument("--rows", type=int, default=200, help="rows per request")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--backlog-splits", type=int, default=5000)
    parser.add_argument("--no-spark-compare", action="store_true", help="backlog: skip the all-Spark run")
    parser.add_argument("--quick", action="store_true", help="short runs, printed only")
    parser.add_argument("--sweep-rates", type=lambda v: tuple(float(x) for x in v.split(",")), default=(),
                        help="sweep: the offered rates, comma-separated (default 50,100,200,400)")
    parser.add_argument("--json", type=Path, help="also write the raw result here")
    parser.add_argument("--env", action="append", default=[], metavar="STRATA_X=VALUE",
                        help="a setting of the APIs for this run (repeatable), e.g. STRATA_COMPACTION_WORKER_SLOTS=0")
    parser.add_argument("--sweep-chart", type=Path, metavar="SVG",
                        help="only draw this chart from earlier --json results (see --series), run nothing")
    parser.add_argument("--series", action="append", default=[], metavar="LABEL=FILE[,FILE...]",
                        help="--sweep-chart: one sweep drawn from these --json results (repeatable)")
    args = parser.parse_args()
    if args.sweep_chart:
        chart_from_results(args.series, args.sweep_chart)
        return
    from bench.report import run_and_write

    parts = tuple(args.part or PARTS)
    quick = args.quick
    write = not (quick or args.part)

    def bench(stack) -> str:
        env = dict(item.split("=", 1) for item in args.env)
        result = run(stack, quick=quick, parts=parts, writers=args.writers, rate=args.rate, rows=args.rows,
                     env_overrides=env, seconds=args.minutes * 60, backlog_splits=args.backlog_splits,
                     compare_spark=not args.no_spark_compare, sweep_rates=args.sweep_rates, charts=write)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1, default=str))
        return render(result)

    run_and_write({SECTION: bench}, write=write)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
