"""One Strata API (or the proxy) as a child process of the supervisor, bound to the supervisor's life
(PR_SET_PDEATHSIG)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from strata_core.config import process_environment
from strata_services.local.processes import Spawner, die_with_parent_hook


class ApiProcess:
    """`name` is what it serves (`strata serve NAME`); `label` names this process among the replicas of that API
    (`query-api`, `query-api-2`, ...: `strata_services.local.stack.replica_label`), in logs, state and status."""

    def __init__(self, name: str, host: str, port: int, env: dict[str, str], log_dir: Path,
                 label: str | None = None, flight_port: int | None = None, python: str | None = None) -> None:
        self.name = name
        self.label = label or name
        self.host = host
        self.port = port
        # query-api's Arrow Flight SQL port, beside its HTTP one.
        self.flight_port = flight_port
        self.env = env if flight_port is None else {**env, "STRATA_FLIGHT_PORT": str(flight_port)}
        self.log_path = log_dir / f"{self.label}.log"
        # The interpreter to run it with: this one unless told another (a benchmark's baseline checkout).
        self.python = python or sys.executable
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def flight_url(self) -> str | None:
        return None if self.flight_port is None else f"grpc://{self.host}:{self.flight_port}"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = [self.python, "-m", "strata_services.cli", "serve", self.name, "--host", self.host,
               "--port", str(self.port)]
        hook = die_with_parent_hook()
        with open(self.log_path, "ab") as logfile:
            self._proc = Spawner.spawn(lambda: subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=logfile, stderr=subprocess.STDOUT,
                env={**process_environment(), **self.env}, start_new_session=True, preexec_fn=hook))

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def exit_code(self) -> int | None:
        """How the last started process ended (negative: the signal that killed it); None while it runs."""
        return None if self._proc is None else self._proc.poll()

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.label} exited during start-up; see {self.log_path}:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.label} did not answer /healthz within {timeout:.0f}s; see {self.log_path}")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def terminate(self) -> None:
        """SIGTERM: the process drains, then shuts down (`strata_services.serving`); `wait_stopped` waits for it."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to its process group, for a drain that did not end in time."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)

    def wait_stopped(self, timeout: float) -> None:
        """Waits for the process to exit after `terminate`, killing it after `timeout` seconds."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def stop(self, timeout: float = 30.0) -> None:
        # The default outlasts the default drain grace and shutdown timeout (3 s and 10 s) and the lifespan's end.
        self.terminate()
        self.wait_stopped(timeout)
