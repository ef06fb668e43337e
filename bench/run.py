"""Run every benchmark on one stack and rewrite their sections of docs/benchmarks.md.

    .tools/bin/uv run python -m bench.run                 # all: ingest, ingest_group, register, metastore, merge,
                                                          # planner, artifacts, query, cluster
    .tools/bin/uv run python -m bench.run ingest register # some of them
    .tools/bin/uv run python -m bench.run --quick         # small sizes, to check the harness (do not publish)

Also runnable as `uv run python bench/run.py`. Each benchmark can run alone too (`python -m
bench.bench_ingest`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # `python bench/run.py`: make `bench` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import (  # noqa: E402
    bench_artifacts,
    bench_cluster,
    bench_commit_log,
    bench_engines,
    bench_ingest,
    bench_ingest_cpu,
    bench_ingest_group,
    bench_merge,
    bench_metastore,
    bench_otlp,
    bench_planner,
    bench_query,
    bench_register,
    bench_soak,
    bench_tsbs,
)
from bench.report import run_and_write  # noqa: E402

NAMES = ("ingest", "ingest_group", "ingest_cpu", "register", "metastore", "merge", "planner", "artifacts", "query",
         "cluster", "engines", "soak", "tsbs", "otlp", "commit_log")


def main() -> int:
    parser = argparse.ArgumentParser(description="Strata benchmarks: run them and update docs/benchmarks.md")
    parser.add_argument(
        "names",
        nargs="*",
        default=[],
        metavar="NAME",
        help=f"benchmarks to run (default: all of {', '.join(NAMES)})",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only (implies --no-write)")
    parser.add_argument(
        "--no-write", action="store_true", help="print the sections instead of updating the docs"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run's directory under bench/.data/")
    parser.add_argument(
        "--runs", type=int, default=5, help="ingest: measured runs per path (median reported)"
    )
    parser.add_argument(
        "--merge-runs", type=int, default=5, help="merge: measured runs per method (median reported)"
    )
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in NAMES]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}: choose from {', '.join(NAMES)}")
    names = args.names or list(NAMES)
    quick = args.quick

    benchmarks = {
        "ingest": lambda stack: bench_ingest.render(
            bench_ingest.run(stack, rows=100_000 if quick else 1_000_000, runs=2 if quick else args.runs)
        ),
        "ingest_group": lambda stack: bench_ingest_group.render(
            bench_ingest_group.run(stack, writer_counts=(1, 4) if quick else (1, 4, 8), seconds=2 if quick else 10,
                                   rounds=1 if quick else 2)
        ),
        "ingest_cpu": lambda stack: bench_ingest_cpu.render(
            bench_ingest_cpu.run(stack, requests=60 if quick else 300, rounds=1 if quick else 3)
        ),
        "register": lambda stack: bench_register.render(
            bench_register.run(stack, splits=1_000 if quick else 10_000, batch=500 if quick else 1_000)
        ),
        "metastore": lambda stack: bench_metastore.render(
            bench_metastore.run(stack, splits=20_000 if quick else 1_000_000)
        ),
        "merge": lambda stack: bench_merge.render(
            bench_merge.run(
                stack,
                rows=400_000 if quick else 4_000_000,
                runs=1 if quick else args.merge_runs,
            )
        ),
        "planner": lambda stack: bench_planner.render(
            bench_planner.run(stack, splits=20_000 if quick else 1_000_000, runs=1 if quick else 3)
        ),
        "artifacts": lambda stack: bench_artifacts.render(
            bench_artifacts.run(stack, rows=400_000 if quick else 4_000_000, runs=1 if quick else 3)
        ),
        "query": lambda stack: bench_query.render(bench_query.run(stack, quick=quick)),
        "engines": lambda stack: bench_engines.render(
            bench_engines.run(stack, rows=240_000 if quick else 3_000_000, runs=3 if quick else 20,
                              spark_runs=1 if quick else 3, merge_rows=400_000 if quick else 4_000_000)
        ),
        "soak": lambda stack: bench_soak.render(bench_soak.run(stack, quick=quick)),
        "tsbs": lambda stack: bench_tsbs.render(
            bench_tsbs.run(stack, hosts=20 if quick else 100, hours=2 if quick else 12, runs=3 if quick else 20,
                           spark_runs=1 if quick else 3)
        ),
        "otlp": lambda stack: bench_otlp.render(
            bench_otlp.run(stack, batches=20 if quick else 100, rounds=2 if quick else 4)
        ),
        "commit_log": lambda stack: bench_commit_log.render(
            bench_commit_log.run(stack, transactions_1=50 if quick else 500, transactions_100=10 if quick else 100,
                                 rebuild_splits=2_000 if quick else 20_000)
        ),
        "cluster": lambda stack: bench_cluster.render(
            bench_cluster.run(stack, rows=400_000 if quick else 4_000_000, runs=1 if quick else 3)
        ),
    }
    failures = run_and_write(
        {name: benchmarks[name] for name in names}, write=not (args.no_write or quick), keep=args.keep
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
