"""The same sorted merge (4M rows in 16 splits, one window) on a standalone Spark cluster whose executors run a
bare Python (pyarrow, numpy, pandas only: the job bundle brings Strata's code) and on the local Spark Connect
server that shares Strata's virtualenv, in one run and alternating, so the ratio is what counts.

Reported: the bundle (size, build time); per target a cold first merge on a throw-away session (JVM and Python
worker start-up, which is not the bundle's doing), then on a new session the time to open it and ship the bundle,
its first merge (executors fetch and unpack the bundle and start the session's Python workers), its warm merges
(median), and the cluster/local ratios. Goals (issue: "every Strata job runs on a real Spark cluster"): warm
ratio <= 1.1x, the first job's extra cost of shipping the bundle under 5 s.

    .tools/bin/uv run --group bench python -m bench.run cluster
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import bench_merge
from bench.harness import DATA_DIR

GOALS = {"warm_ratio": 1.1, "first_job_extra_secs": 5.0}


def _merge_once(factory, paths: list[Path], out_root: Path, label: str) -> float:
    from strata_jobs.spark_merge import submit_merges

    out = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=out_root))
    try:
        spec = bench_merge.merge_spec(paths, out, label)
        started = time.perf_counter()
        [outcome] = submit_merges(factory.session(), [spec], f"bench-cluster-{label}")
        seconds = time.perf_counter() - started
        if outcome.result is None:
            raise RuntimeError(f"merge on {factory.remote} failed: {outcome.error}")
        return seconds
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run(stack, rows: int = 4_000_000, splits: int = 16, runs: int = 3) -> dict[str, Any]:
    from strata_frame.spark.bundle import build_job_bundle
    from strata_frame.spark.session import SparkSessionFactory
    from strata_services.local.processes import free_port
    from strata_services.local.spark_cluster import ClusterShape, LocalSparkCluster, bare_executor_python
    from strata_services.local.spark_server import LocalSparkConnectServer

    work = stack.workdir / "cluster"
    # Kept between runs (bench/.data is git-ignored): generating 4M rows takes longer than a merge.
    paths = bench_merge.generate_dataset(DATA_DIR / f"cluster-merge-{rows}-{splits}", rows, splits, seed=1)
    outputs = work / "out"
    outputs.mkdir(parents=True, exist_ok=True)

    bundle_dir = work / "bundles"
    started = time.perf_counter()
    bundle = build_job_bundle(bundle_dir)
    build_secs = time.perf_counter() - started

    local = LocalSparkConnectServer(free_port(), master="local[2]", driver_memory="3g", work_dir=work / "local")
    cluster = LocalSparkCluster(work / "standalone", python=str(bare_executor_python(work / "bare-executor")),
                                shape=ClusterShape(workers=1, cores_per_worker=2, memory_per_worker="4g",
                                                   executor_memory="3g", driver_memory="1g"))
    factories: dict[str, SparkSessionFactory] = {}
    try:
        local.start()
        local.wait_ready(180)
        cluster.start(180)
        results: dict[str, dict[str, Any]] = {}
        for name, remote in (("local", local.remote), ("cluster", cluster.remote)):
            # A throw-away first session: the server's and the executors' cold start (JIT, Python worker
            # daemon, pyarrow imports) is not the bundle's cost, so it is measured apart.
            warmup = SparkSessionFactory(remote, bundle_dir=bundle_dir)
            try:
                cold = _merge_once(warmup, paths, outputs, f"{name}-cold")
            finally:
                warmup.close()
            # The measured session: shipping the bundle, then its first job, which makes every executor fetch and
            # unpack it and start the session's own Python workers.
            factory = factories[name] = SparkSessionFactory(remote, bundle_dir=bundle_dir)
            started = time.perf_counter()
            factory.session()
            ship = time.perf_counter() - started
            first = _merge_once(factory, paths, outputs, f"{name}-first")
            results[name] = {"cold_secs": cold, "ship_secs": ship, "first_secs": first, "warm": []}
        for run_index in range(runs):
            for name in ("local", "cluster") if run_index % 2 == 0 else ("cluster", "local"):
                results[name]["warm"].append(_merge_once(factories[name], paths, outputs, f"{name}-{run_index}"))
    finally:
        for factory in factories.values():
            factory.close()
        cluster.stop()
        local.stop()
    for result in results.values():
        result["warm_median"] = statistics.median(result["warm"])
        # What the first job pays on top of a warm one: the session's shipping plus the executors' first fetch.
        result["first_extra_secs"] = result["ship_secs"] + result["first_secs"] - result["warm_median"]
    return {"rows": rows, "splits": splits, "runs": runs, "bundle_mb": bundle.size_bytes / 1e6,
            "bundle_digest": bundle.digest, "build_secs": build_secs, "results": results,
            "warm_ratio": results["cluster"]["warm_median"] / results["local"]["warm_median"]}


def render(result: dict[str, Any]) -> str:
    local, cluster = result["results"]["local"], result["results"]["cluster"]

    def verdict(value: float, goal: float) -> str:
        return "met" if value <= goal else "missed"

    lines = [
        f"## Spark cluster: the {result['rows']:,}-row, {result['splits']}-split merge on a standalone cluster "
        "with bare executors vs the local server",
        "",
        "One run, both targets up side by side, warm merges alternating between them. The cluster is a master, one "
        "worker (2 cores, executor 3 GiB) and a Spark Connect server (`strata_services.local.spark_cluster`); its "
        "executors run a virtualenv with only pyarrow, numpy and pandas, so the merge code and its native "
        "dependencies arrive with the session (the job bundle). The local server is `local[2]` sharing Strata's "
        "virtualenv. Both sessions ship the same bundle.",
        "",
        f"Job bundle `{result['bundle_digest']}`: **{result['bundle_mb']:.1f} MB** (code zip + dependency archive), "
        f"built in {result['build_secs']:.1f} s (once per code version, then reused from disk).",
        "",
        "| | local server | standalone cluster | cluster / local |",
        "|---|---:|---:|---:|",
        f"| first merge after the server started (cold JVM and workers; not the bundle's cost) | "
        f"{local['cold_secs']:.2f} s | {cluster['cold_secs']:.2f} s | |",
        f"| new session: open + ship bundle | {local['ship_secs']:.2f} s | {cluster['ship_secs']:.2f} s | |",
        "| new session: first merge (executors fetch and unpack the bundle) | "
        f"{local['first_secs']:.2f} s | {cluster['first_secs']:.2f} s | "
        f"{cluster['first_secs'] / local['first_secs']:.2f}x |",
        f"| warm merge, median of {result['runs']} | {local['warm_median']:.2f} s | {cluster['warm_median']:.2f} s "
        f"| **{result['warm_ratio']:.2f}x** |",
        f"| warm merges | {', '.join(f'{s:.2f}' for s in local['warm'])} | "
        f"{', '.join(f'{s:.2f}' for s in cluster['warm'])} | |",
        f"| a new session's extra cost (ship + first merge - warm merge) | {local['first_extra_secs']:.2f} s | "
        f"**{cluster['first_extra_secs']:.2f} s** | |",
        "",
        f"Goals: warm ratio <= {GOALS['warm_ratio']}x: **{verdict(result['warm_ratio'], GOALS['warm_ratio'])}**; "
        f"a new session's extra cost on the cluster < {GOALS['first_job_extra_secs']:.0f} s: "
        f"**{verdict(cluster['first_extra_secs'], GOALS['first_job_extra_secs'])}**.",
    ]
    return "\n".join(lines)
