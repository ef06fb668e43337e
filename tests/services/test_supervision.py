"""The local stack's supervisor without processes: the backoff schedule, what it does when a child exits or a
restart is asked for (with fake children and a fake clock), the state file `strata status` and `strata restart`
read, and what `strata restart` refuses before asking anything."""

from __future__ import annotations

import json
import os
import signal

import pytest

from strata_core.config import Settings
from strata_services.cli import main
from strata_services.client import CliError
from strata_services.local import STATE_FILE
from strata_services.local.api_process import ApiProcess
from strata_services.local.stack import LocalStack
from strata_services.local.supervision import (
    Backoff,
    Phase,
    Supervisor,
    describe,
    exit_reason,
    request_restart_file,
    take_restart_requests,
)
from strata_services.restart_cli import restart_targets, rolling_restart, running_state


class FakeChild:
    """A child whose exits the test decides: `exit(code)` ends the current process, `start` begins a new pid."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.pid: int | None = 100
        self.exit_code: int | None = None
        self.signals: list[str] = []
        self.fail_next_start: Exception | None = None

    def start(self) -> None:
        if self.fail_next_start is not None:
            error, self.fail_next_start = self.fail_next_start, None
            raise error
        self.pid = (self.pid or 100) + 1
        self.exit_code = None

    def terminate(self) -> None:
        self.signals.append("TERM")

    def kill(self) -> None:
        self.signals.append("KILL")

    def exit(self, code: int) -> None:
        self.exit_code = code


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _supervisor(clock: Clock, *children: FakeChild) -> tuple[Supervisor, list[str]]:
    reports: list[str] = []
    return Supervisor(children, stop_timeout_secs=28.0, report=reports.append, monotonic=clock,
                      wall=lambda: clock.now + 1_700_000_000), reports


def test_backoff_doubles_from_one_second_to_thirty_and_starts_over_after_a_stable_run():
    backoff = Backoff()
    assert [backoff.delay_after(uptime_secs=2.0) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff.delay_after(uptime_secs=60.0) == 1
    assert backoff.delay_after(uptime_secs=5.0) == 2


def test_exit_reasons_name_the_signal_or_the_code():
    assert exit_reason(-signal.SIGKILL) == "killed by SIGKILL"
    assert exit_reason(1) == "exited with code 1"
    assert exit_reason(0) == "exited with code 0"


def test_a_child_that_exits_is_started_again_after_its_backoff_and_the_restart_is_recorded(clock):
    query, planner = FakeChild("query-api-2"), FakeChild("planner-api")
    supervisor, reports = _supervisor(clock, query, planner)
    assert not supervisor.tick()

    clock.now += 90  # a long run: the first delay
    query.exit(-signal.SIGKILL)
    assert supervisor.tick()
    entry = supervisor.children["query-api-2"]
    assert entry.phase is Phase.WAITING and entry.as_state()["pid"] is None
    assert reports[-1] == "query-api-2 killed by SIGKILL unexpectedly; starting it again in 1s"
    clock.now += 0.5
    assert not supervisor.tick() and query.pid == 100
    clock.now += 0.5
    assert supervisor.tick()
    state = entry.as_state()
    assert (state["pid"], state["phase"], state["starts"], state["restarts"], state["unexpected_exits"]) == \
        (101, "running", 2, 1, 1)
    assert state["last_exit"]["reason"] == "killed by SIGKILL" and state["last_exit"]["pid"] == 100
    # The other child was never touched.
    assert planner.pid == 100 and supervisor.children["planner-api"].restarts == 0

    # Exiting again soon after: twice the delay.
    clock.now += 3
    query.exit(1)
    supervisor.tick()
    assert reports[-1].endswith("starting it again in 2s")
    clock.now += 2
    supervisor.tick()
    assert query.pid == 102 and entry.restarts == 2 and entry.unexpected_exits == 2


def test_a_requested_restart_drains_the_child_then_starts_it_at_once_without_counting_a_crash(clock):
    query = FakeChild("query-api")
    supervisor, _ = _supervisor(clock, query)
    assert supervisor.request_restart("query-api")
    assert query.signals == ["TERM"] and supervisor.children["query-api"].phase is Phase.STOPPING
    clock.now += 5  # draining
    assert not supervisor.tick() and query.pid == 100
    query.exit(0)
    assert supervisor.tick()
    state = supervisor.children["query-api"].as_state()
    assert (state["pid"], state["phase"], state["restarts"], state["unexpected_exits"]) == (101, "running", 1, 0)
    assert state["last_exit"]["requested"] and state["last_exit"]["reason"] == "restart requested, exited with code 0"
    assert not supervisor.request_restart("query-api-9")


def test_a_drain_that_outlasts_the_stop_timeout_is_killed(clock):
    query = FakeChild("query-api")
    supervisor, reports = _supervisor(clock, query)
    supervisor.request_restart("query-api")
    clock.now += 27
    supervisor.tick()
    assert query.signals == ["TERM"]
    clock.now += 1
    supervisor.tick()
    assert query.signals == ["TERM", "KILL"] and "did not stop within 28s" in reports[-1]
    query.exit(-signal.SIGKILL)
    supervisor.tick()
    assert query.pid == 101 and supervisor.children["query-api"].phase is Phase.RUNNING


def test_a_start_that_fails_is_retried_after_a_longer_backoff_and_a_request_skips_the_wait(clock):
    proxy = FakeChild("proxy")
    supervisor, reports = _supervisor(clock, proxy)
    proxy.exit(1)
    supervisor.tick()
    clock.now += 1
    proxy.fail_next_start = OSError("no such interpreter")
    supervisor.tick()
    entry = supervisor.children["proxy"]
    assert entry.phase is Phase.WAITING and entry.restarts == 0 and entry.unexpected_exits == 2
    assert "could not start (no such interpreter); trying again in 2s" in reports[-1]
    # `strata restart proxy` does not wait out the backoff.
    assert supervisor.request_restart("proxy")
    supervisor.tick()
    assert entry.phase is Phase.RUNNING and proxy.pid == 101 and entry.restarts == 1


def test_restart_requests_are_files_taken_once(tmp_path):
    for label in ("query-api-2", "proxy"):
        path = request_restart_file(tmp_path, label)
        path.parent.mkdir(exist_ok=True)
        path.touch()
    assert sorted(take_restart_requests(tmp_path)) == ["proxy", "query-api-2"]
    assert take_restart_requests(tmp_path) == []
    assert take_restart_requests(tmp_path / "no-such-home") == []


def _stack_with_state(tmp_path, clock: Clock) -> tuple[LocalStack, Supervisor]:
    settings = Settings(home=tmp_path, database_url="postgresql+asyncpg://u@localhost/strata",
                        spark_remote="sc://localhost:15002")
    stack = LocalStack(settings, replicas=2, database_url=settings.database_url, spark_remote=settings.spark_remote)
    stack.apis = [ApiProcess(api, "127.0.0.1", port, {}, tmp_path, label, flight_port=flight)
                  for api, port, label, flight in [("query-api", 8003, "query-api", 8004),
                                                   ("query-api", 8013, "query-api-2", 8014),
                                                   ("proxy", 8000, "proxy", None)]]
    stack.supervisor, _ = _supervisor(clock, *(FakeChild(api.label) for api in stack.apis))
    return stack, stack.supervisor


def test_the_state_file_carries_each_processs_supervision(tmp_path, clock):
    stack, supervisor = _stack_with_state(tmp_path, clock)
    supervisor.children["query-api-2"].process.exit(-signal.SIGKILL)
    supervisor.tick()
    stack._write_state()
    state = json.loads((tmp_path / STATE_FILE).read_text())
    assert state["supervised"] is True and state["pid"] == os.getpid() and state["replicas"] == 2
    assert not list(tmp_path.glob(".*.tmp")), "written whole, through a temporary file"
    processes = {p["label"]: p for p in state["processes"]}
    assert set(processes["query-api-2"]) == {"label", "serves", "url", "pid", "flight_url", "phase", "starts",
                                             "restarts", "unexpected_exits", "started_at", "last_exit",
                                             "restart_at"}
    waiting = processes["query-api-2"]
    assert (waiting["serves"], waiting["url"], waiting["pid"], waiting["phase"]) == \
        ("query-api", "http://127.0.0.1:8013", None, "waiting")
    assert waiting["last_exit"]["code"] == -9 and waiting["restart_at"] == clock.now + 1_700_000_001
    now = clock.now + 1_700_000_000
    assert describe(waiting, now) == ("not running, starting again in 1s, restarts=0 (1 unexpected exit), "
                                      "last exit: killed by SIGKILL 0s ago")

    clock.now += 1
    supervisor.tick()
    stack._write_state()
    back = {p["label"]: p for p in json.loads((tmp_path / STATE_FILE).read_text())["processes"]}["query-api-2"]
    assert back["pid"] == 101 and back["restarts"] == 1
    assert describe(back, now + 75) == ("pid 101, up 1m14s, restarts=1 (1 unexpected exit), "
                                        "last exit: killed by SIGKILL 1m15s ago")
    assert describe({"label": "proxy", "pid": 7}, now) == "pid 7"


def _state(tmp_path, **overrides) -> dict:
    processes = [{"label": label, "serves": serves, "url": f"http://127.0.0.1:{port}", "pid": os.getpid(),
                  "starts": 1, "phase": "running"}
                 for label, serves, port in [("planner-api", "planner-api", 8001),
                                             ("planner-api-2", "planner-api", 8011), ("query-api", "query-api", 8003),
                                             ("query-api-2", "query-api", 8013), ("proxy", "proxy", 8000)]]
    state = {"pid": os.getpid(), "supervised": True, "processes": processes, "urls": {"proxy": "http://x"},
             **overrides}
    (tmp_path / STATE_FILE).write_text(json.dumps(state))
    return state


def test_restart_targets_one_replica_an_apis_replicas_or_every_api_replica_but_not_the_proxy(tmp_path):
    state = _state(tmp_path)
    labels = lambda targets: [t["label"] for t in targets]  # noqa: E731
    assert labels(restart_targets(state, None, None)) == ["planner-api", "planner-api-2", "query-api", "query-api-2"]
    assert labels(restart_targets(state, "query-api", None)) == ["query-api", "query-api-2"]
    assert labels(restart_targets(state, "query-api", 2)) == ["query-api-2"]
    assert labels(restart_targets(state, "proxy", None)) == ["proxy"]
    with pytest.raises(CliError, match=r"query-api has 2 replicas in the running stack \(--replica 1-2\), not 3"):
        restart_targets(state, "query-api", 3)
    with pytest.raises(CliError, match=r"proxy has 1 replica in the running stack \(--replica 1\), not 2"):
        restart_targets(state, "proxy", 2)
    with pytest.raises(CliError, match="the running stack has no indexer-api"):
        restart_targets(state, "indexer-api", None)
    with pytest.raises(CliError, match="--replica needs the API"):
        restart_targets(state, None, 1)


def test_restart_refuses_without_a_running_supervisor_that_can_restart(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STRATA_HOME", str(tmp_path))
    assert main(["restart", "query-api"]) == 2
    assert "no running stack" in capsys.readouterr().err
    # A state file left by a supervisor that is gone.
    _state(tmp_path, pid=2 ** 22 + 1)
    assert main(["restart"]) == 2
    assert "no running stack" in capsys.readouterr().err
    _state(tmp_path, supervised=False)
    with pytest.raises(CliError, match="cannot restart processes"):
        running_state(tmp_path)
    _state(tmp_path)
    assert main(["restart", "query-api", "--replica", "5"]) == 2
    assert "not 5" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["restart", "search-api"])
    assert exited.value.code == 2 and "invalid choice: 'search-api'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["restart", "query-api", "--replica", "0"])


def test_a_restart_the_supervisor_does_not_carry_out_in_time_fails_naming_the_process_and_is_withdrawn(tmp_path):
    state = _state(tmp_path)
    said: list[str] = []
    with pytest.raises(CliError, match=r"query-api-2 was not started again within 1s \(pid \d+, up .*\); see .*"
                                       r"query-api-2\.log"):
        rolling_restart(tmp_path, "query-api", 2, timeout=1.0, http_timeout=1.0, say=said.append)
    assert said == [f"restarting query-api-2 (pid {os.getpid()}, http://127.0.0.1:8013) ..."]
    # Left behind, the request would restart it later, unasked.
    assert take_restart_requests(tmp_path) == [] and state["processes"][3]["label"] == "query-api-2"
