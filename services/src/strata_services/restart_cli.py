"""`strata restart`: a rolling restart of the running local stack, one process at a time. Each is drained and
started again by the supervisor (asked through a request file, `supervision`), and the next goes only once the
new process answers /readyz and the proxy has it in rotation again, so callers going through the proxy never find
every replica of an API gone at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx

from strata_services.client import CliError, stack_state
from strata_services.local.processes import pid_alive
from strata_services.local.supervision import Phase, describe, request_restart_file

APIS = ("planner-api", "indexer-api", "query-api")
POLL_SECS = 0.3


def running_state(home: Path) -> dict:
    """The running stack's state file, or a CliError saying why there is none to restart."""
    state = stack_state(home)
    if not state or not pid_alive(state.get("pid", -1)):
        raise CliError(f"no running stack in {home}; start one with `strata up`")
    if not state.get("supervised"):
        raise CliError("the running stack's supervisor cannot restart processes (it predates `strata restart`, or "
                       "is still starting); wait for `strata up` to finish, or stop it with `strata down` and start "
                       "it again")
    return state


def restart_targets(state: dict, api: str | None, replica: int | None) -> list[dict]:
    """The processes to restart, in order: every replica of every API when `api` is None (not the proxy: it is a
    single process, so restarting it refuses requests; it is restarted only when named), else every replica of
    `api`, else its `replica`-th (from 1, as `strata status` numbers them: query-api is 1, query-api-2 is 2)."""
    processes = state.get("processes", [])
    if api is None:
        if replica is not None:
            raise CliError("--replica needs the API it is a replica of, e.g. `strata restart query-api --replica 2`")
        return [p for name in APIS for p in processes if p["serves"] == name]
    replicas = [p for p in processes if p["serves"] == api]
    if not replicas:
        raise CliError(f"the running stack has no {api}")
    if replica is None:
        return replicas
    if not 1 <= replica <= len(replicas):
        raise CliError(f"{api} has {len(replicas)} replica{'s' * (len(replicas) != 1)} in the running stack "
                       f"(--replica 1{f'-{len(replicas)}' if len(replicas) > 1 else ''}), not {replica}")
    return [replicas[replica - 1]]


def _entry(state: dict | None, label: str) -> dict | None:
    return next((p for p in (state or {}).get("processes", []) if p["label"] == label), None)


def _readiness(url: str, timeout: float) -> tuple[int | None, dict]:
    try:
        response = httpx.get(f"{url}/readyz", timeout=timeout)
        return response.status_code, response.json()
    except (httpx.HTTPError, ValueError) as exc:
        return None, {"detail": f"unreachable ({type(exc).__name__})"}


def restart_one(home: Path, process: dict, proxy_url: str | None, timeout: float, http_timeout: float,
                say: Callable[[str], None]) -> None:
    """Asks the supervisor to restart `process` (a state-file entry) and waits until its new process is ready and,
    for a replica the proxy fronts, in the proxy's rotation again; a CliError when that takes over `timeout`."""
    label, started = process["label"], time.monotonic()
    deadline = started + timeout
    # As it is now, not as it was when the rolling restart began: it may have been started again since (a crash).
    process = _entry(stack_state(home), label) or process
    say(f"restarting {label} (pid {process.get('pid')}, {process['url']}) ...")
    request = request_restart_file(home, label)
    request.parent.mkdir(parents=True, exist_ok=True)
    request.touch()

    def give_up(what: str, state: dict | None) -> CliError:
        # An untaken request would restart the process later, when nobody is watching.
        request.unlink(missing_ok=True)
        entry = _entry(state, label)
        now_doing = f" ({describe(entry, time.time())})" if entry else ""
        return CliError(f"{label} {what} within {timeout:.0f}s{now_doing}; see {home / 'logs' / f'{label}.log'}")

    # 1. The supervisor has drained the old process and started a new one.
    while True:
        state = stack_state(home)
        if not state or not pid_alive(state.get("pid", -1)):
            raise give_up("was being restarted when the stack stopped; not back", None)
        entry = _entry(state, label)
        if entry and entry.get("starts", 0) > process.get("starts", 0) and entry.get("phase") == Phase.RUNNING:
            break
        if time.monotonic() > deadline:
            raise give_up("was not started again", state)
        time.sleep(POLL_SECS)
    new_pid = entry["pid"]
    # 2. It answers /readyz (a fresh query-api's first probes may read `unready` while it opens its Spark session).
    while (answer := _readiness(entry["url"], http_timeout))[0] != 200:
        if time.monotonic() > deadline:
            raise give_up(f"(pid {new_pid}) did not answer /readyz 200 (last: {answer[0] or ''} "
                          f"{answer[1].get('detail', '')})", stack_state(home))
        time.sleep(POLL_SECS)
    # 3. The proxy routes to it again. Its /readyz asks every replica afresh, so this is the proxy's own view, not
    # one up to a health-check interval old.
    in_rotation = ""
    if proxy_url and entry["serves"] != "proxy":
        while True:
            pools = _readiness(proxy_url, http_timeout)[1].get("upstreams", {})
            pool = pools.get(entry["serves"], {})
            if entry["url"] not in pool and pools:
                in_rotation = ", not behind the proxy (its upstreams for this API were set by hand)"
                break
            if pool.get(entry["url"]) == "ready":
                in_rotation = ", in the proxy's rotation"
                break
            if time.monotonic() > deadline:
                raise give_up(f"(pid {new_pid}) is ready but not back in the proxy's rotation (the proxy sees it "
                              f"{pool.get(entry['url'], 'not at all')})", stack_state(home))
            time.sleep(POLL_SECS)
    say(f"  {label}: pid {new_pid}, ready{in_rotation} after {time.monotonic() - started:.1f}s")


def rolling_restart(home: Path, api: str | None, replica: int | None, timeout: float, http_timeout: float,
                    say: Callable[[str], None] = print) -> int:
    state = running_state(home)
    targets = restart_targets(state, api, replica)
    proxy_url = state.get("urls", {}).get("proxy")
    for name in dict.fromkeys(p["serves"] for p in targets):
        if sum(p["serves"] == name for p in state["processes"]) == 1:
            what = "the stack" if name == "proxy" else name
            say(f"note: {what} runs a single {'process' if name == 'proxy' else 'replica'}: requests to it fail "
                f"while it restarts" + ("" if name == "proxy" else " (`strata up --replicas 2` avoids that)"))
    for process in targets:
        restart_one(home, process, proxy_url, timeout, http_timeout, say)
    say(f"restarted {len(targets)} process{'es' * (len(targets) != 1)}, one at a time")
    return 0

