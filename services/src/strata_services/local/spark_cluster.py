"""A Spark standalone cluster on one machine, from the `pyspark` package: a master, workers, and a Spark Connect
server whose application runs on that cluster's executors instead of inside the server's own JVM.

It is the distributed shape of a real deployment: executors are separate JVMs started by a worker, and their
Python workers can run a bare interpreter (`bare_executor_python`: a venv with only pyarrow, numpy and pandas),
so every job has to bring its code with the session, as it must on a real cluster. Used by `strata spark-cluster
up` and by the cluster tests; every JVM it starts dies with it (`strata_services.local.jvm`).
"""

from __future__ import annotations

import importlib.metadata
import logging
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from strata_core.config import uv_executable
from strata_services.local.jvm import JavaProcess, JavaProcessError, spark_environment, spark_home
from strata_services.local.processes import free_port
from strata_services.local.spark_server import LocalSparkConnectServer

log = logging.getLogger(__name__)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# What an executor's Python must have for PySpark's Arrow features; Strata's own code travels with the session.
EXECUTOR_PACKAGES = ("pyarrow", "numpy", "pandas")


class SparkClusterError(RuntimeError):
    """The local standalone cluster could not be started or did not become ready."""


def _find_uv() -> str | None:
    # `uv run` exports UV; `make` puts uv in .tools/bin.
    for candidate in (uv_executable(), shutil.which("uv"), str(Path(".tools/bin/uv").resolve())):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def bare_executor_python(target: Path) -> Path:
    """A virtualenv at `target` with the driver's Python and only pyarrow, numpy and pandas (the versions
    installed here), made once; returns its interpreter. Nothing of Strata is installed in it."""
    python = target / "bin" / "python"
    marker = target / ".strata-bare-executor"
    if marker.exists() and python.exists():
        return python
    shutil.rmtree(target, ignore_errors=True)
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in EXECUTOR_PACKAGES]
    base = getattr(sys, "_base_executable", sys.executable)
    uv = _find_uv()
    if uv:
        subprocess.run([uv, "venv", "--quiet", "--python", base, str(target)], check=True)
        subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), *pins], check=True)
    else:
        subprocess.run([base, "-m", "venv", str(target)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *pins], check=True)
    marker.write_text(" ".join(pins) + "\n")
    return python


@dataclass(frozen=True)
class ClusterShape:
    workers: int = 1
    cores_per_worker: int = 2
    memory_per_worker: str = "2g"
    executor_memory: str = "1g"
    driver_memory: str = "1g"


class LocalSparkCluster:
    """Master + workers + a Spark Connect server on `spark://host:master_port`, all state under `work_dir`."""

    def __init__(self, work_dir: Path, *, connect_port: int | None = None, host: str = "127.0.0.1",
                 python: str | None = None, shape: ClusterShape | None = None) -> None:
        self.work_dir = Path(work_dir).resolve()
        self.host = host
        self.shape = shape or ClusterShape()
        self.python = python or sys.executable
        self.master_port = free_port(host)
        self.connect = LocalSparkConnectServer(
            connect_port or free_port(host), host, self.master_url, self.shape.driver_memory,
            work_dir=self.work_dir / "connect", python=self.python,
            conf={"spark.executor.memory": self.shape.executor_memory,
                  "spark.executor.cores": str(self.shape.cores_per_worker),
                  "spark.cores.max": str(self.shape.cores_per_worker * self.shape.workers)})
        self._daemons: list[JavaProcess] = []

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    @property
    def remote(self) -> str:
        return self.connect.remote

    def _env(self, role: str) -> dict[str, str]:
        return spark_environment(SPARK_LOCAL_IP=self.host, SPARK_LOG_DIR=str(self.work_dir / "logs"),
                                 SPARK_DAEMON_MEMORY="512m", SPARK_WORKER_DIR=str(self.work_dir / role / "work"),
                                 PYSPARK_PYTHON=self.python,
                                 # No REST submission server: it takes a fixed port (6066) and nothing here uses it.
                                 SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")

    def _daemon(self, role: str, *args: str) -> JavaProcess:
        command = [str(spark_home() / "bin" / "spark-class"), *args]
        process = JavaProcess(f"spark {role}", command, self._env(role), self.work_dir / "logs" / f"{role}.log",
                              self.work_dir / role)
        self._daemons.append(process)
        process.start()
        return process

    def start(self, timeout: float = 120.0) -> str:
        """Start everything and wait until the workers registered and the Connect server answers; returns its
        Spark version. On failure everything started so far is stopped."""
        try:
            master = self._daemon("master", MASTER_CLASS, "--host", self.host, "--port", str(self.master_port),
                                  "--webui-port", str(free_port(self.host)))
            for n in range(self.shape.workers):
                self._daemon(f"worker-{n}", WORKER_CLASS, "--host", self.host, "--port", str(free_port(self.host)),
                             "--webui-port",
                             str(free_port(self.host)), "--cores", str(self.shape.cores_per_worker),
                             "--memory", self.shape.memory_per_worker, self.master_url)
            self._wait_for_workers(master, timeout)
            self.connect.start()
            return self.connect.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def registered_workers(self, master: JavaProcess) -> int:
        """How many workers registered with the master, from its log (its UI port may have moved on a clash)."""
        return master.log_tail(400).count("Master: Registering worker ")

    def _wait_for_workers(self, master: JavaProcess, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for daemon in self._daemons:
                daemon.check_alive(SparkClusterError)
            if self.registered_workers(master) >= self.shape.workers:
                return
            if time.monotonic() > deadline:
                raise master.failure(f"{self.shape.workers} worker(s) did not register in {timeout:.0f}s",
                                     SparkClusterError)
            time.sleep(0.3)

    def stop(self) -> None:
        """Stop the Connect server (its executors go with the application), then workers, then the master."""
        self.connect.stop()
        for daemon in reversed(self._daemons):
            try:
                daemon.stop()
            except JavaProcessError:
                log.exception("stopping %s failed", daemon.name)

    def __enter__(self) -> LocalSparkCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
