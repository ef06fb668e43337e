"""A Spark Connect server started from the `pyspark` package, for the local stack, a local cluster and the
tests; its JVM's life is bound to ours (`strata_services.local.jvm`)."""

from __future__ import annotations

import logging
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from strata_services.local.jvm import JavaProcess, spark_environment, spark_home

log = logging.getLogger(__name__)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


FAIR_SCHEDULER_FILE = "fairscheduler.xml"
FAIR_DEFAULT_POOL = """<?xml version="1.0"?>
<allocations>
  <pool name="default">
    <schedulingMode>FAIR</schedulingMode>
    <weight>1</weight>
    <minShare>0</minShare>
  </pool>
</allocations>
"""


# The local server's JVM runs below the API servers' CPU priority: on a machine it shares with query-api, a merge
# holding every core would otherwise take half the CPU an interactive in-process query needs (bench engines,
# "Queries while merges ...": Q9 at 1.83-1.84x of idle at nice 0, 1.41-1.74x at nice 10). When nothing else wants
# the CPU a niced JVM runs as fast as ever.
SPARK_NICENESS = 10


class SparkServerError(RuntimeError):
    """The local Spark Connect server could not be started or did not become ready."""


class LocalSparkConnectServer:
    """A Spark Connect server JVM bound to `host:port`, with all its state under `work_dir`.

    `master` is `local[N]` (the driver runs the tasks itself) or a cluster's `spark://host:port`; `python` is
    the interpreter Python workers run with, on whatever machine runs them (this venv's by default; a bare
    one on a cluster whose executors have only Spark, Python and pyarrow). `conf` adds Spark settings.
    `niceness` is the JVM's CPU priority below ours (its threads and Python workers inherit it).
    """

    def __init__(
        self,
        port: int,
        host: str = "127.0.0.1",
        master: str = "local[2]",
        driver_memory: str = "2g",
        *,
        work_dir: Path,
        shuffle_partitions: int = 4,
        python: str | None = None,
        conf: dict[str, str] | None = None,
        niceness: int = SPARK_NICENESS,
    ) -> None:
        self.port = port
        self.host = host
        self.master = master
        self.driver_memory = driver_memory
        self.work_dir = Path(work_dir).resolve()
        self.shuffle_partitions = shuffle_partitions
        self.python = python or sys.executable
        self.extra_conf = dict(conf or {})
        self.niceness = niceness
        self.log_path = self.work_dir / "logs" / "spark-connect.log"
        # Built by start(): resolving Java belongs to starting, not to describing the command.
        self._jvm: JavaProcess | None = None

    @property
    def remote(self) -> str:
        """The Spark Connect URL of this server, e.g. `sc://127.0.0.1:15002`."""
        return f"sc://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Pid of the JVM (spark-submit execs java, so it is the child we started), None before start()."""
        return self._jvm.pid if self._jvm is not None else None

    def running(self) -> bool:
        """Whether the JVM was started and has not exited."""
        return self._jvm is not None and self._jvm.running()

    def command(self) -> list[str]:
        """The spark-submit command line that start() runs."""
        work = self.work_dir
        conf = {
            "spark.connect.grpc.binding.address": self.host,
            "spark.connect.grpc.binding.port": str(self.port),
            # Keep the driver's other listeners (block manager, RPC) off public interfaces too.
            "spark.driver.bindAddress": self.host,
            "spark.driver.host": self.host,
            "spark.driver.memory": self.driver_memory,
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": str(self.shuffle_partitions),
            "spark.sql.warehouse.dir": str(work / "spark-warehouse"),
            "spark.jars.ivy": str(work / "ivy"),
            "spark.local.dir": str(work / "tmp"),
            # Quoted: the launcher splits this option string shell-style and work_dir may contain spaces.
            "spark.driver.extraJavaOptions": f'-Dderby.system.home="{work / "derby"}"',
            # The Python that executors start their workers with (mapInArrow).
            "spark.pyspark.python": self.python,
            # Queries, merges and artifact builds share the server. Spark Connect cannot put a session's jobs in
            # a pool of its own, so every job lands in the default pool; FAIR inside it (the allocation file) lets
            # a query's few tasks take the next free slots instead of waiting for a merge's whole stage (FIFO).
            "spark.scheduler.mode": "FAIR",
            "spark.scheduler.allocation.file": str(work / FAIR_SCHEDULER_FILE),
            **self.extra_conf,
        }
        cmd = [
            str(spark_home() / "bin" / "spark-submit"),
            "--class",
            SERVER_CLASS,
            "--name",
            "strata-spark-connect",
            "--master",
            self.master,
        ]
        for key, value in conf.items():
            cmd += ["--conf", f"{key}={value}"]
        return cmd

    def _environment(self) -> dict[str, str]:
        return spark_environment(
            PYSPARK_PYTHON=self.python,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            SPARK_LOCAL_IP=self.host,
            SPARK_LOG_DIR=str(self.work_dir / "logs"),
        )

    def start(self) -> None:
        """Launch the JVM and return without waiting for it to listen (see wait_ready())."""
        if self.running():
            raise SparkServerError(f"spark connect server already running (pid {self.pid})")
        for sub in ("logs", "spark-warehouse", "ivy", "tmp", "derby"):
            (self.work_dir / sub).mkdir(parents=True, exist_ok=True)
        (self.work_dir / FAIR_SCHEDULER_FILE).write_text(FAIR_DEFAULT_POOL)
        self._jvm = JavaProcess("spark connect server", self.command(), self._environment(), self.log_path,
                                self.work_dir, self.niceness)
        self._jvm.start()

    def log_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the server log (empty if there is none yet)."""
        return self._jvm.log_tail(lines) if self._jvm is not None else ""

    def _fail(self, reason: str) -> SparkServerError:
        return SparkServerError(f"{reason}; log {self.log_path}, last lines:\n{self.log_tail()}")

    def _check_alive(self) -> None:
        if self._jvm is None:
            raise SparkServerError("spark connect server was not started")
        self._jvm.check_alive(SparkServerError)

    def _port_open(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def _probe_version(self) -> str:
        # Imported here: the connect client pulls in grpc/pandas, which a CLI that never waits should not pay.
        from pyspark.sql.connect.client.retries import DefaultPolicy
        from pyspark.sql.connect.session import SparkSession

        session = SparkSession(connection=self.remote)
        try:
            # The default policy retries for ~10 minutes; here we loop ourselves and watch the process.
            session.client.set_retry_policies([DefaultPolicy(max_retries=2, max_backoff=1000)])
            return session.version
        finally:
            session.stop()

    def wait_ready(self, timeout: float = 120.0, waiting: Callable[[float], None] | None = None,
                   every_secs: float = 10.0) -> str:
        """Block until the server answers a real RPC; return its Spark version. `waiting` is told the seconds
        waited so far every `every_secs`.

        Raises SparkServerError (with the tail of the server log) if the JVM exits or `timeout` passes.
        """
        started = time.monotonic()
        deadline = started + timeout
        next_report = started + every_secs

        def tick() -> None:
            nonlocal next_report
            if waiting is not None and time.monotonic() >= next_report:
                waiting(time.monotonic() - started)
                next_report += every_secs
        while not self._port_open():
            self._check_alive()
            if time.monotonic() > deadline:
                raise self._fail(
                    f"spark connect server not listening on {self.host}:{self.port} after {timeout:.0f}s"
                )
            tick()
            time.sleep(0.2)
        while True:
            self._check_alive()
            try:
                return self._probe_version()
            except Exception as exc:  # any failure means not ready yet; reported on timeout
                last = exc
            if time.monotonic() > deadline:
                raise self._fail(f"spark connect server did not answer in {timeout:.0f}s: {last!r}")
            tick()
            time.sleep(0.5)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the server, SIGKILL it after `timeout` s, then kill all it forked; safe to call twice."""
        if self._jvm is not None:
            self._jvm.stop(timeout)

    def __enter__(self) -> LocalSparkConnectServer:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
