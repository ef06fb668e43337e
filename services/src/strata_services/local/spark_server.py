"""A Spark Connect server started from the `pyspark` package, for the local stack and the tests.

The JVM is the one thing that can outlive us and keep a CI job hanging, so it is started as the leader of a
new session (stop() can find and kill everything it forked) and with PR_SET_PDEATHSIG (the kernel kills it if
we die, even from SIGKILL, when no cleanup code of ours runs).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyspark

from strata_services.local.java import resolve_java_home
from strata_services.local.processes import (
    Spawner,
    die_with_parent_hook,
    session_members,
    signal_group,
)

log = logging.getLogger(__name__)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class SparkServerError(RuntimeError):
    """The local Spark Connect server could not be started or did not become ready."""


class LocalSparkConnectServer:
    """A Spark Connect server JVM bound to `host:port`, with all its state under `work_dir`."""

    def __init__(
        self,
        port: int,
        host: str = "127.0.0.1",
        master: str = "local[2]",
        driver_memory: str = "2g",
        *,
        work_dir: Path,
        shuffle_partitions: int = 4,
    ) -> None:
        self.port = port
        self.host = host
        self.master = master
        self.driver_memory = driver_memory
        self.work_dir = Path(work_dir).resolve()
        self.shuffle_partitions = shuffle_partitions
        self.log_path = self.work_dir / "logs" / "spark-connect.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def remote(self) -> str:
        """The Spark Connect URL of this server, e.g. `sc://127.0.0.1:15002`."""
        return f"sc://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """Pid of the JVM (spark-class execs java, so it is the child we started), None before start()."""
        return self._proc.pid if self._proc is not None else None

    def running(self) -> bool:
        """Whether the JVM was started and has not exited."""
        return self._proc is not None and self._proc.poll() is None

    def command(self) -> list[str]:
        """The spark-submit command line that start() runs."""
        spark_home = Path(pyspark.__file__).parent
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
        }
        cmd = [
            str(spark_home / "bin" / "spark-submit"),
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
        env = dict(os.environ)
        # A client-side remote in our environment must not leak into the server's launcher.
        for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):
            env.pop(name, None)
        env.update(
            SPARK_HOME=str(Path(pyspark.__file__).parent),
            JAVA_HOME=str(resolve_java_home()),
            # Python workers (mapInArrow, UDFs) must import strata_jobs from this venv.
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            SPARK_LOCAL_IP=self.host,
            SPARK_LOG_DIR=str(self.work_dir / "logs"),
        )
        return env

    def start(self) -> None:
        """Launch the JVM and return without waiting for it to listen (see wait_ready())."""
        with self._lock:
            if self.running():
                raise SparkServerError(f"spark connect server already running (pid {self.pid})")
            for sub in ("logs", "spark-warehouse", "ivy", "tmp", "derby"):
                (self.work_dir / sub).mkdir(parents=True, exist_ok=True)
            cmd, env, hook = self.command(), self._environment(), die_with_parent_hook()
            with open(self.log_path, "ab") as logfile:
                logfile.write(f"\n=== strata: starting {' '.join(cmd)}\n".encode())
                logfile.flush()

                def launch() -> subprocess.Popen[bytes]:
                    return subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=logfile,
                        stderr=subprocess.STDOUT,
                        cwd=self.work_dir,  # anything Spark writes relative to cwd lands in work_dir too
                        env=env,
                        start_new_session=True,
                        preexec_fn=hook,
                    )

                self._proc = Spawner.spawn(launch)
            log.info(
                "spark connect server starting: pid %s, %s, log %s", self.pid, self.remote, self.log_path
            )

    def log_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the server log (empty if there is none yet)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                text = f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _fail(self, reason: str) -> SparkServerError:
        return SparkServerError(f"{reason}; log {self.log_path}, last lines:\n{self.log_tail()}")

    def _check_alive(self) -> None:
        if self._proc is None:
            raise SparkServerError("spark connect server was not started")
        code = self._proc.poll()
        if code is not None:
            raise self._fail(f"spark connect server exited with code {code} before becoming ready")

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

    def wait_ready(self, timeout: float = 120.0) -> str:
        """Block until the server answers a real RPC; return its Spark version.

        Raises SparkServerError (with the tail of the server log) if the JVM exits or `timeout` passes.
        """
        deadline = time.monotonic() + timeout
        while not self._port_open():
            self._check_alive()
            if time.monotonic() > deadline:
                raise self._fail(
                    f"spark connect server not listening on {self.host}:{self.port} after {timeout:.0f}s"
                )
            time.sleep(0.2)
        while True:
            self._check_alive()
            try:
                return self._probe_version()
            except Exception as exc:  # any failure means not ready yet; reported on timeout
                last = exc
            if time.monotonic() > deadline:
                raise self._fail(f"spark connect server did not answer in {timeout:.0f}s: {last!r}")
            time.sleep(0.5)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the server, SIGKILL it after `timeout` s, then kill all it forked; safe to call twice."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            pgid = proc.pid  # start_new_session made the JVM its session and group leader
            if proc.poll() is None:
                signal_group(pgid, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    log.warning("spark connect server %s ignored SIGTERM for %.0fs; killing", pgid, timeout)
                    signal_group(pgid, signal.SIGKILL)
                    proc.wait()
            # Python workers forked by the JVM may linger after it exits; nothing it started may survive.
            signal_group(pgid, signal.SIGKILL)
            if sys.platform.startswith("linux"):
                end = time.monotonic() + 5.0
                while (left := session_members(pgid)) and time.monotonic() < end:
                    for group in set(left.values()):
                        signal_group(group, signal.SIGKILL)
                    time.sleep(0.05)
            # Forget the process: a later stop() must not signal a pgid the kernel may have handed out again.
            self._proc = None

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
