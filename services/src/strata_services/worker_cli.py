"""`strata worker`: a standalone compaction or indexing runner, polling its API's job queue and running each job
on Spark (or a tiny one in a local process) until Ctrl-C or SIGTERM. It serves no /metrics: what each job cost the
object store goes with the job's end to the API, which counts it in its own (README, "What it costs")."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket

import httpx

from strata_core.config import Settings
from strata_services.client import QUEUE_API, CliError, api_key, api_url


def _runner_builder(kind: str, settings: Settings, spark, executors: list):
    """How to build the runner of a worker of `kind`: it polls its queue and runs each assignment on Spark (or a
    tiny one in a local process); the executors it makes are added to `executors`, for the caller to close."""
    if kind == "compaction":
        from strata_planner.compaction.executor import merge_executor
        from strata_planner.compaction.runner import CompactionRunner

        def compaction_runner(client: httpx.AsyncClient, worker_id: str, slots: int, key: str):
            executor = merge_executor(spark, settings)
            executors.append(executor)
            return CompactionRunner(client, worker_id=worker_id, slots=slots, executor=executor,
                                    api_key=key, poll_interval_secs=settings.compaction_poll_interval_secs,
                                    merge_delay_secs=settings.fault_merge_delay_secs,
                                    report_delay_secs=settings.fault_report_delay_secs,
                                    shutdown_timeout_secs=settings.worker_shutdown_timeout_secs,
                                    local_slots=settings.compaction_worker_local_slots,
                                    local_batch=settings.local_job_batch)
        return compaction_runner
    from strata_indexer.indexing.runner import index_build_executor, indexing_runner

    executor = index_build_executor(spark, settings)
    executors.append(executor)

    def build_runner(client: httpx.AsyncClient, worker_id: str, slots: int, key: str):
        return indexing_runner(client, executor, worker_id=worker_id, slots=slots, api_key=key,
                               poll_interval_secs=settings.indexing_poll_interval_secs,
                               shutdown_timeout_secs=settings.worker_shutdown_timeout_secs,
                               local_slots=settings.indexing_worker_local_slots,
                               local_batch=settings.local_job_batch)
    return build_runner


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from strata_core.observability.logs import configure_logging
    from strata_frame.spark.session import SparkSessionFactory

    if not settings.spark_remote:
        raise CliError(f"STRATA_SPARK_REMOTE is not set: a {args.kind} worker submits its jobs to a Spark Connect "
                       f"server")
    base = args.url or api_url(settings, QUEUE_API[args.kind])
    key = api_key(settings, "worker")
    worker_id = args.worker_id or f"{socket.gethostname()}:{os.getpid()}:{args.kind}"
    configure_logging(f"strata-{args.kind}-worker", settings.log_format, settings.log_level or "INFO")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        spark = SparkSessionFactory.for_jobs(settings)
        executors: list = []
        async with httpx.AsyncClient(base_url=base) as client:
            runner = _runner_builder(args.kind, settings, spark, executors)(client, worker_id, args.slots, key)
            print(f"{args.kind} worker {worker_id}: {args.slots} slots, polling {base}", flush=True)
            try:
                await runner.run(stop)
            finally:
                for executor in executors:
                    executor.close()
                spark.close()

    asyncio.run(main())
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    worker = sub.add_parser("worker", help="run a standalone worker that polls a job queue and runs its jobs on "
                                           "Spark (STRATA_SPARK_REMOTE) until Ctrl-C or SIGTERM")
    worker.add_argument("--kind", choices=sorted(QUEUE_API), default="compaction",
                        help="compaction (merges, polls planner-api; default) or indexing (artifacts, polls "
                             "indexer-api)")
    worker.add_argument("--url", help="base URL of the API the worker polls (default: the local stack's)")
    worker.add_argument("--slots", type=int, default=1, help="jobs run at once (default 1)")
    worker.add_argument("--worker-id", help="the id leases are held under (default host:pid:kind)")
    worker.set_defaults(func=cmd_worker)
