"""`strata spark-cluster up`: a Spark standalone cluster on this machine (master, workers, a Spark Connect server
on it) for trying Strata in its distributed shape; the stack uses it through STRATA_SPARK_REMOTE."""

from __future__ import annotations

import argparse
import threading

from strata_core.config import Settings
from strata_services.client import CliError


def cmd_spark_cluster_up(args: argparse.Namespace, settings: Settings) -> int:
    from strata_services.local.spark_cluster import (
        ClusterShape,
        LocalSparkCluster,
        SparkClusterError,
        bare_executor_python,
    )
    from strata_services.local.spark_server import SparkServerError
    from strata_services.local.stack import install_stop_signals

    work = settings.home / "spark-cluster"
    if args.python:
        python = args.python
    else:
        print(f"executor python: a bare virtualenv (pyarrow, numpy, pandas) in {work / 'bare-executor'} ...",
              flush=True)
        python = str(bare_executor_python(work / "bare-executor"))
    shape = ClusterShape(workers=args.workers, cores_per_worker=args.cores, memory_per_worker=args.worker_memory,
                         executor_memory=args.executor_memory, driver_memory=args.driver_memory)
    cluster = LocalSparkCluster(work, connect_port=args.port, host=settings.host, python=python, shape=shape)
    stop = threading.Event()
    install_stop_signals(stop)
    print(f"starting a spark master, {args.workers} worker(s) and a spark connect server ...", flush=True)
    try:
        try:
            version = cluster.start()
        except (SparkClusterError, SparkServerError) as exc:
            raise CliError(str(exc)) from None
        print(f"\nspark {version} standalone cluster is up:\n"
              f"  master          {cluster.master_url}\n"
              f"  spark connect   {cluster.remote}\n"
              f"  executors run   {python}\n"
              f"  logs            {work / 'logs'}, {work / 'connect' / 'logs'}\n\n"
              f"point strata at it (in another terminal):\n"
              f"  STRATA_SPARK_REMOTE={cluster.remote} make up\n\n"
              "Ctrl-C stops the cluster.", flush=True)
        stop.wait()
        return 0
    finally:
        cluster.stop()
        print("spark cluster stopped.", flush=True)


def add_commands(sub: argparse._SubParsersAction) -> None:
    cluster = sub.add_parser("spark-cluster", help="a local Spark standalone cluster for the distributed shape")
    actions = cluster.add_subparsers(dest="action", required=True)
    up = actions.add_parser("up", help="run master, workers and a Spark Connect server until Ctrl-C")
    up.add_argument("--port", type=int, default=15002, help="Spark Connect port (default 15002)")
    up.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    up.add_argument("--cores", type=int, default=2, help="cores per worker (default 2)")
    up.add_argument("--worker-memory", default="2g", help="memory a worker offers its executors (default 2g)")
    up.add_argument("--executor-memory", default="1g", help="memory of each executor (default 1g)")
    up.add_argument("--driver-memory", default="1g", help="memory of the Spark Connect driver (default 1g)")
    up.add_argument("--python", help="the executors' Python (default: a bare venv with only pyarrow, numpy, "
                                     "pandas, so every job must bring its code with the session)")
    up.set_defaults(func=cmd_spark_cluster_up)
