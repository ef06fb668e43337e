"""One JVM started from the `pyspark` package (`spark-submit` or `spark-class`) and bound to our life.

A JVM is the one thing that can outlive us and keep a CI job hanging, so it starts as the leader of a new
session (stop() can find and kill everything it forked) and with PR_SET_PDEATHSIG (the kernel kills it if we
die, even from SIGKILL, when no cleanup code of ours runs).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyspark

from strata_core.config import process_environment
from strata_services.local.java import resolve_java_home
from strata_services.local.processes import Spawner, die_with_parent_hook, session_members, signal_group

log = logging.getLogger(__name__)

# A client-side remote in our environment must not leak into a launcher.
_CLIENT_VARIABLES = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package (bin/, jars/, python/lib)."""
    return Path(pyspark.__file__).parent


def spark_environment(**overrides: str) -> dict[str, str]:
    """Our environment for a Spark launcher: SPARK_HOME and JAVA_HOME set, client-side variables removed."""
    env = {k: v for k, v in process_environment().items() if k not in _CLIENT_VARIABLES}
    env.update(SPARK_HOME=str(spark_home()), JAVA_HOME=str(resolve_java_home()))
    env.update(overrides)
    return env


class JavaProcessError(RuntimeError):
    """A JVM could not be started or exited early; the message carries the tail of its log."""


class JavaProcess:
    """A JVM run as `command` with `env`, its output appended to `log_path`, its working directory `cwd`."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_path: Path, cwd: Path,
                 niceness: int = 0) -> None:
        self.name = name
        self.niceness = niceness
        self.command = command
        self.env = env
        self.log_path = log_path
        self.cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """Pid of the JVM (the launchers exec java, so it is the child we started), None before start()."""
        return self._proc.pid if self._proc is not None else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        with self._lock:
            if self.running():
                raise JavaProcessError(f"{self.name} already running (pid {self.pid})")
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.cwd.mkdir(parents=True, exist_ok=True)
            hook = die_with_parent_hook()
            if self.niceness:
                bind, niceness = hook, self.niceness

                def hook() -> None:  # the JVM's every thread (and the Python workers it starts) inherit it
                    if bind is not None:
                        bind()
                    os.nice(niceness)
                    # With the kernel's autogroups (Linux, on by default) a new session's processes are scheduled
                    # as one group against other sessions', so a niceness inside the group alone would change
                    # nothing against the API servers: lower the group's own too (raising it needs no privilege).
                    try:
                        with open("/proc/self/autogroup", "w") as group:
                            group.write(str(niceness))
                    except OSError:
                        pass  # no autogroups: the process's niceness is what counts
            with open(self.log_path, "ab") as logfile:
                logfile.write(f"\n=== strata: starting {' '.join(self.command)}\n".encode())
                logfile.flush()

                def launch() -> subprocess.Popen[bytes]:
                    return subprocess.Popen(
                        self.command,
                        stdin=subprocess.DEVNULL,
                        stdout=logfile,
                        stderr=subprocess.STDOUT,
                        cwd=self.cwd,  # anything Spark writes relative to cwd lands in its work dir too
                        env=self.env,
                        start_new_session=True,
                        preexec_fn=hook,
                    )

                self._proc = Spawner.spawn(launch)
            log.info("%s starting: pid %s, log %s", self.name, self.pid, self.log_path)

    def log_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the log (empty if there is none yet)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 64 * 1024))
                text = f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def failure(self, reason: str, error: type[RuntimeError] = JavaProcessError) -> RuntimeError:
        return error(f"{reason}; log {self.log_path}, last lines:\n{self.log_tail()}")

    def check_alive(self, error: type[RuntimeError] = JavaProcessError) -> None:
        if self._proc is None:
            raise error(f"{self.name} was not started")
        code = self._proc.poll()
        if code is not None:
            raise self.failure(f"{self.name} exited with code {code} before becoming ready", error)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the JVM, SIGKILL it after `timeout` s, then kill all it forked; safe to call twice."""
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
                    log.warning("%s (%s) ignored SIGTERM for %.0fs; killing", self.name, pgid, timeout)
                    signal_group(pgid, signal.SIGKILL)
                    proc.wait()
            # Python workers and executors forked by the JVM may linger after it exits; nothing may survive.
            signal_group(pgid, signal.SIGKILL)
            if sys.platform.startswith("linux"):
                end = time.monotonic() + 5.0
                while (left := session_members(pgid)) and time.monotonic() < end:
                    for group in set(left.values()):
                        signal_group(group, signal.SIGKILL)
                    time.sleep(0.05)
            # Forget the process: a later stop() must not signal a pgid the kernel may have handed out again.
            self._proc = None
