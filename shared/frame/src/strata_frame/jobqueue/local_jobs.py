"""Small jobs in the worker's own host, off Spark: a pool of child processes that run a job kernel (the same
function a Spark task runs, JSON in and JSON out) for jobs whose inputs are tiny.

Why: a Spark job costs about 0.5-0.8 s however little it does (scheduling, a Python worker, the bundle's
imports), while a merge of ten 200-row splits takes about 30 ms in the kernel itself (docs/benchmarks.md, "Keeping
up"). Under a steady stream of small writes that fixed cost is what made compaction fall behind. The kernels stay
the same on both paths, so do their checks (MC-1..MC-4 for a merge, the artifact checks for a build).

Why processes and not threads: the kernels hold the GIL for part of their work, and the worker runs inside an API
process (planner-api, indexer-api) whose requests (ingestion above all) must not wait behind it. The children run
at a lower CPU priority (`niceness`) for the same reason, and exit when their parent is gone.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

log = logging.getLogger("strata.local_jobs")


class LocalJobFailed(RuntimeError):
    """The local process running a job died (killed, out of memory) before answering."""


def exit_with_parent(parent: int) -> None:
    """Ends this child process (at once, as a kill would) within a second of its parent `parent` being gone: a
    child of an API that crashed must not go on working for it."""

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(0)
            time.sleep(1.0)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def _start_child(parent: int, niceness: int) -> None:
    # A SIGTERM or Ctrl-C sent to the API's whole process group (`strata down`, a terminal) is the API's to act
    # on: it lets the running job finish and gives the others back (jobqueue/runner.py); a child dying of it would
    # fail the job instead. The parent ends the children itself (`close`), and they exit when it is gone.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if niceness:
        os.nice(niceness)
    exit_with_parent(parent)


class LocalJobPool:
    """`run(fn, *args)` in one of `processes` children (started on first use, spawned: the parent is a threaded
    server, where fork is unsafe). A child that dies is replaced by a new pool on the next job."""

    def __init__(self, processes: int, *, niceness: int = 10) -> None:
        self.processes = processes
        self.niceness = niceness
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise LocalJobFailed("the local job pool is closed")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=self.processes,
                                                 mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_start_child, initargs=(os.getpid(), self.niceness))
            return self._pool

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Blocking (call from a worker thread): the function's result, or its exception raised again here."""
        pool = self._executor()
        try:
            return pool.submit(fn, *args).result()
        except BrokenProcessPool as exc:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            raise LocalJobFailed(f"the local job process died: {exc}") from exc

    @classmethod
    def when_enabled(cls, max_bytes: int, settings) -> LocalJobPool | None:
        """The pool of a worker whose local limit is `max_bytes` (`Settings`' `*_local_max_bytes`); none at 0."""
        if max_bytes <= 0:
            return None
        return cls(settings.local_job_processes, niceness=settings.local_job_niceness)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            # Children still running a job are killed: their jobs' leases expire and another worker retries them.
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()
            pool.shutdown(wait=True, cancel_futures=True)
