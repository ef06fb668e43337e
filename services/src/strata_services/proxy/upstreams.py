"""The replicas of one API behind the proxy: health-checked in the background, chosen round-robin among those in
rotation. The proxy keeps one pool per API (planner-api, indexer-api, query-api), all built the same way.

Each replica's /readyz is asked every `interval_secs`, and its answer puts it in one of four states:

- `ready` (200): in rotation.
- `draining` (503 with the draining problem type, `strata_frame.web.health`): out of rotation. It is shutting
  down and finishes what it has; its listener closes after its grace, by when the proxy has stopped sending to it.
- `unready` (503 for any other reason: PostgreSQL or Spark Connect unreachable from it): out of rotation while
  another replica is ready, in rotation when none is. A dependency down for every replica is the API's own
  failure to report, in its own words (its 503 names the cause), and query-api still answers what needs no Spark
  (local queries); only a failure one replica has alone is a reason to route around it.
- `down` (no answer in time, refused, or any other status): out of rotation. A request the proxy could not
  deliver marks its replica down at once, without waiting for the next check.

/healthz is not what is asked: it answers 200 until the very end of a drain, so it cannot tell the proxy to stop
sending new work."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection
from enum import StrEnum

from strata_frame.web.health import DRAINING_PROBLEM_TYPE
from strata_services.proxy.upstream_http import UpstreamError, UpstreamPool

log = logging.getLogger("strata.proxy")


class ReplicaState(StrEnum):
    READY = "ready"
    UNREADY = "unready"
    DRAINING = "draining"
    DOWN = "down"


def state_of_readiness(status: int, body: bytes) -> ReplicaState:
    """A replica's state from its /readyz answer."""
    if status == 200:
        return ReplicaState.READY
    if status != 503:
        return ReplicaState.DOWN
    try:
        problem = json.loads(body)
    except ValueError:
        return ReplicaState.UNREADY
    if isinstance(problem, dict) and problem.get("type") == DRAINING_PROBLEM_TYPE:
        return ReplicaState.DRAINING
    return ReplicaState.UNREADY


class Upstreams:
    """One API's replicas."""

    def __init__(self, api: str, urls: list[str], pool: UpstreamPool, interval_secs: float = 2.0,
                 timeout_secs: float = 5.0) -> None:
        if not urls:
            raise ValueError(f"the proxy needs at least one {api} upstream")
        self.api = api
        self.urls = list(dict.fromkeys(u.rstrip("/") for u in urls))
        self.pool = pool
        self.interval_secs = interval_secs
        # Longer than the replica's own dependency checks may take: a slow Spark must read as `unready` (its 503),
        # not as a replica that does not answer.
        self.timeout_secs = timeout_secs
        # Until the first check says otherwise, every replica is presumed ready.
        self.states: dict[str, ReplicaState] = dict.fromkeys(self.urls, ReplicaState.READY)
        self._turn = 0
        self._tasks: list[asyncio.Task] = []

    def rotation(self) -> list[str]:
        """The replicas requests go to: the ready ones, else those only their dependencies hold back."""
        ready = [url for url in self.urls if self.states[url] is ReplicaState.READY]
        return ready or [url for url in self.urls if self.states[url] is ReplicaState.UNREADY]

    def pick(self, tried: Collection[str] = ()) -> str | None:
        """The next replica in rotation, round-robin, other than those `tried` already."""
        candidates = [url for url in self.rotation() if url not in tried]
        if not candidates:
            return None
        self._turn += 1
        return candidates[self._turn % len(candidates)]

    def mark_down(self, url: str, reason: str) -> None:
        if self.states[url] is not ReplicaState.DOWN:
            log.warning("%s replica %s is now down: %s", self.api, url, reason)
        self.states[url] = ReplicaState.DOWN

    async def check(self, url: str) -> ReplicaState:
        try:
            async with asyncio.timeout(self.timeout_secs):
                response = await self.pool.request("GET", url, "/readyz", [])
                try:
                    body = await response.read()
                finally:
                    await response.aclose()
            state = state_of_readiness(response.status, body)
        except (UpstreamError, TimeoutError):
            state = ReplicaState.DOWN
        if state is not self.states[url]:
            log.warning("%s replica %s is now %s", self.api, url, state)
        self.states[url] = state
        return state

    async def check_all(self) -> None:
        await asyncio.gather(*(self.check(url) for url in self.urls))

    async def _watch(self, url: str) -> None:
        # One loop per replica: a replica slow to answer delays no other's check.
        while True:
            await self.check(url)
            await asyncio.sleep(self.interval_secs)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._watch(url)) for url in self.urls]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
