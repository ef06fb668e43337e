"""Keeping the local stack's API replicas and proxy running: a child that exits is started again after a backoff,
and `strata restart` asks for one to be restarted (drained, then started at once). What happened to each child is
recorded for the state file, which `strata status` and `strata restart` read.

Only the supervisor's own loop touches this (`LocalStack.wait` calls `tick` every `TICK_SECS`), so nothing here
locks; nothing here blocks either, so a slow drain never delays noticing another child's death or Ctrl-C.

How `strata restart` asks: it creates a file named after the process's label in `RESTART_REQUESTS_DIR` under the
stack's home, and the supervisor takes (deletes) it on its next tick. A file rather than the CLI sending SIGTERM to
the pid in the state file, because then the supervisor would see an unexplained exit: it would wait out a crash's
backoff (growing with each step of a rolling restart) and count it as a crash; the pid could also have been reused
by then. The supervisor holds the process itself, so it signals the right process group, escalates to SIGKILL
after the same timeout `strata down` allows, and records the restart as asked for. A file rather than a socket:
nothing more to serve or secure in the supervisor, it is already polling, and a request outlives a CLI that was
interrupted (the supervisor still completes it); `strata up` clears requests left from an earlier stack."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol

log = logging.getLogger("strata.stack")

RESTART_REQUESTS_DIR = "restart-requests"
TICK_SECS = 0.5
FIRST_DELAY_SECS = 1.0
MAX_DELAY_SECS = 30.0
# Up this long, a process is taken to be healthy again: its next exit waits the first delay, not a longer one.
STABLE_AFTER_SECS = 60.0


@dataclass
class Backoff:
    """How long to wait before starting again a process that exited: FIRST_DELAY_SECS, doubled after each exit
    that follows a short run, up to MAX_DELAY_SECS; back to the first after a run of STABLE_AFTER_SECS."""

    first_secs: float = FIRST_DELAY_SECS
    max_secs: float = MAX_DELAY_SECS
    stable_after_secs: float = STABLE_AFTER_SECS
    _short_runs: int = 0

    def delay_after(self, uptime_secs: float) -> float:
        if uptime_secs >= self.stable_after_secs:
            self._short_runs = 0
        delay = min(self.max_secs, self.first_secs * 2 ** self._short_runs)
        self._short_runs += 1
        return delay


def exit_reason(code: int) -> str:
    """A process's exit status in words (Popen's returncode: negative for the signal that killed it)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


class Child(Protocol):
    """What the supervisor needs of a process (`ApiProcess`)."""

    label: str

    @property
    def pid(self) -> int | None: ...

    @property
    def exit_code(self) -> int | None: ...

    def start(self) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


class Phase(StrEnum):
    RUNNING = "running"
    # Asked to restart: SIGTERM sent, draining; started again as soon as it has exited.
    STOPPING = "stopping"
    # Exited on its own: started again when its backoff is over.
    WAITING = "waiting"


@dataclass
class Supervised:
    """One child and what has happened to it."""

    process: Child
    backoff: Backoff = field(default_factory=Backoff)
    phase: Phase = Phase.RUNNING
    starts: int = 1
    # Every start after the first; `unexpected_exits` counts the exits nobody asked for (and starts that failed).
    restarts: int = 0
    unexpected_exits: int = 0
    started_at: float = 0.0  # time.time(), for people
    started_mono: float = 0.0  # the uptime that resets the backoff
    last_exit: dict | None = None
    restart_due: float | None = None  # monotonic
    restart_at: float | None = None  # the same, as time.time() for the state file
    kill_at: float | None = None  # monotonic: a drain that outlasts this gets SIGKILL

    def as_state(self) -> dict:
        """This process's entry in the state file, beside its label, url and flight_url."""
        return {"pid": self.process.pid if self.phase is not Phase.WAITING else None, "phase": str(self.phase),
                "starts": self.starts, "restarts": self.restarts, "unexpected_exits": self.unexpected_exits,
                "started_at": self.started_at, "last_exit": self.last_exit, "restart_at": self.restart_at}


class Supervisor:
    """The children of one stack, each started already (the first start is `LocalStack.start`'s, which fails the
    whole stack when it fails)."""

    def __init__(self, processes: Iterable[Child], stop_timeout_secs: float,
                 report: Callable[[str], None] = lambda _: None, monotonic: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self._monotonic = monotonic
        self._wall = wall
        self.stop_timeout_secs = stop_timeout_secs
        self.report = report
        self.children: dict[str, Supervised] = {
            p.label: Supervised(p, started_at=wall(), started_mono=monotonic()) for p in processes}

    def request_restart(self, label: str) -> bool:
        """Drain `label` and start it again at once (one waiting out a backoff starts now). False for a label the
        stack does not have."""
        child = self.children.get(label)
        if child is None:
            return False
        if child.phase is Phase.RUNNING:
            self.report(f"{label}: restart requested, draining (pid {child.process.pid})")
            try:
                child.process.terminate()
            except ProcessLookupError:  # it exited just now: the next tick starts it again all the same
                pass
            child.phase = Phase.STOPPING
            child.kill_at = self._monotonic() + self.stop_timeout_secs
        elif child.phase is Phase.WAITING:
            child.restart_due = self._monotonic()
        return True

    def tick(self) -> bool:
        """Notices exits, starts what is due; True when anything changed (the state file is then rewritten)."""
        changed = False
        now = self._monotonic()
        for label, child in self.children.items():
            code = child.process.exit_code
            if child.phase is Phase.RUNNING and code is not None:
                self._exited(child, code, requested=False)
                delay = child.backoff.delay_after(now - child.started_mono)
                child.phase, child.restart_due, child.restart_at = Phase.WAITING, now + delay, self._wall() + delay
                self.report(f"{label} {exit_reason(code)} unexpectedly; starting it again in {delay:g}s")
                changed = True
            elif child.phase is Phase.STOPPING and code is not None:
                self._exited(child, code, requested=True)
                self._start(child)
                changed = True
            elif child.phase is Phase.STOPPING and child.kill_at is not None and now >= child.kill_at:
                self.report(f"{label} did not stop within {self.stop_timeout_secs:g}s of SIGTERM; killing it")
                try:
                    child.process.kill()
                except ProcessLookupError:
                    pass
                child.kill_at = None
            elif child.phase is Phase.WAITING and child.restart_due is not None and now >= child.restart_due:
                self._start(child)
                changed = True
        return changed

    def _exited(self, child: Supervised, code: int, requested: bool) -> None:
        reason = f"restart requested, {exit_reason(code)}" if requested else exit_reason(code)
        child.last_exit = {"code": code, "reason": reason, "at": self._wall(), "requested": requested,
                           "pid": child.process.pid}
        if not requested:
            child.unexpected_exits += 1
        log.info("%s (pid %s) %s", child.process.label, child.process.pid, exit_reason(code))

    def _start(self, child: Supervised) -> None:
        label = child.process.label
        child.restart_due = child.restart_at = child.kill_at = None
        try:
            child.process.start()
        except Exception as exc:  # noqa: BLE001 - a failed start is one more exit, retried after the backoff
            log.exception("starting %s again", label)
            delay = child.backoff.delay_after(0.0)
            child.last_exit = {"code": None, "reason": f"could not start: {exc}", "at": self._wall(),
                               "requested": False, "pid": None}
            child.unexpected_exits += 1
            child.phase = Phase.WAITING
            child.restart_due, child.restart_at = self._monotonic() + delay, self._wall() + delay
            self.report(f"{label} could not start ({exc}); trying again in {delay:g}s")
            return
        child.phase = Phase.RUNNING
        child.restarts += 1
        child.starts += 1
        child.started_at, child.started_mono = self._wall(), self._monotonic()
        self.report(f"{label} started again (pid {child.process.pid}, restart {child.restarts})")


def request_restart_file(home: Path, label: str) -> Path:
    """Where `strata restart` asks for `label` to be restarted."""
    return home / RESTART_REQUESTS_DIR / label


def take_restart_requests(home: Path) -> list[str]:
    """The labels asked for since the last call; the requests are consumed."""
    directory = home / RESTART_REQUESTS_DIR
    try:
        entries = sorted(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    labels = []
    for entry in entries:
        try:
            entry.unlink()
        except FileNotFoundError:
            continue
        labels.append(entry.name)
    return labels


def clear_restart_requests(home: Path) -> None:
    """Requests a stopped stack never took are not for this one."""
    take_restart_requests(home)


def write_json_atomically(path: Path, text: str) -> None:
    """The CLI reads the state file while the supervisor rewrites it: a reader sees the old file or the new one,
    never half of one."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(text)
    os.replace(partial, path)


def describe(process: dict, now: float) -> str:
    """What the supervisor did to a process (its entry in the state file), as `strata status` shows it."""
    pid, phase = process.get("pid"), process.get("phase")
    if phase is None:  # a state file written before supervision: nothing more is known
        return f"pid {pid}"
    if phase == Phase.WAITING:
        due = process.get("restart_at") or now
        parts = [f"not running, starting again in {max(0.0, due - now):.0f}s"]
    elif phase == Phase.STOPPING:
        parts = [f"pid {pid}, draining for a restart"]
    else:
        parts = [f"pid {pid}, up {_duration(now - process.get('started_at', now))}"]
    restarts, unexpected = process.get("restarts", 0), process.get("unexpected_exits", 0)
    unexpected_text = f" ({unexpected} unexpected exit{'s' * (unexpected != 1)})" if unexpected else ""
    parts.append(f"restarts={restarts}{unexpected_text}")
    if last := process.get("last_exit"):
        parts.append(f"last exit: {last['reason']} {_duration(now - last['at'])} ago")
    return ", ".join(parts)


def _duration(secs: float) -> str:
    secs = max(0, int(secs))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"
