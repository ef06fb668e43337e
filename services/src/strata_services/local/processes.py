"""Child processes bound to this process's life: started from one long-lived thread with PR_SET_PDEATHSIG, so
the kernel kills them when we die (even from SIGKILL), plus the small process-table helpers around them."""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on `host` right now (another process may still take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _proc_state(pid: int) -> tuple[str, int, int] | None:
    """(state letter, process group, session) of a pid from /proc, or None when it does not exist."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name is in parentheses and may itself contain spaces or ')'.
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[2]), int(fields[3])


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a running process; a zombie waiting to be reaped counts as dead."""
    if pid <= 0:  # os.kill(-1, 0) would probe every process we may signal
        return False
    if sys.platform.startswith("linux"):
        state = _proc_state(pid)
        return state is not None and state[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def session_members(sid: int) -> dict[int, int]:
    """Live (non-zombie) processes of session `sid` as {pid: pgid} (Linux: scans /proc).

    The server is started as a session leader, so its session is everything it ever forked, including
    pyspark's worker daemon, which moves itself into a process group of its own.
    """
    members = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        state = _proc_state(int(entry.name))
        if state is not None and state[2] == sid and state[0] not in ("Z", "X"):
            members[int(entry.name)] = state[1]
    return members


def die_with_parent_hook() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGKILL when the spawning thread dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    # Load libc before fork: dlopen after fork in a threaded process can deadlock on loader locks.
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    parent = os.getpid()

    def hook() -> None:
        if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        # The parent may have died between fork and prctl; then nobody would ever send the signal.
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


class Spawner:
    """Starts children from one daemon thread that lives as long as the process.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process. Spawning from a
    short-lived worker thread (anyio's to_thread workers retire after idling) would kill the JVM at a random
    later moment, so every spawn goes through this thread instead.
    """

    _lock = threading.Lock()
    _jobs: queue.SimpleQueue = queue.SimpleQueue()
    _thread: threading.Thread | None = None

    @classmethod
    def spawn(cls, start: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        """Run `start` (which calls Popen) on the spawner thread and return its result."""
        with cls._lock:
            if cls._thread is None:
                cls._thread = threading.Thread(target=cls._run, name="strata-spawner", daemon=True)
                cls._thread.start()
        future: concurrent.futures.Future = concurrent.futures.Future()
        cls._jobs.put((start, future))
        return future.result()

    @classmethod
    def _run(cls) -> None:
        while True:
            start, future = cls._jobs.get()
            try:
                future.set_result(start())
            except BaseException as exc:  # handed back to the caller, who re-raises it
                future.set_exception(exc)




def signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
