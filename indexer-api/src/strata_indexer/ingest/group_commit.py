"""Group commit of ingest requests: requests of one scope that arrive while a commit of that scope is in flight are
committed together by the next one (docs/architecture.md, "Write path").

Classic leader/follower, without a timer: a request that finds its scope idle is committed at once (no latency is
added when idle); requests that arrive meanwhile queue into a group, and when the commit in flight ends the group
is committed as one. A group stops growing at `max_rows` or `max_bytes` (a request larger alone is still its own
group), the next requests start another, and groups of one scope commit one after the other, in arrival order.

Each scope's commits run in a task of their own rather than in the task of the request that leads them: a client
that goes away must not cancel a commit that other requests wait on. Every request of a group gets the group's
result, or the group's exception: all of it is published or none of it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")


@dataclass(eq=False)
class _Group(Generic[T, R]):
    # The commit of the request that opened the group: every request of a scope would commit the same way.
    commit: Callable[[list[T]], Awaitable[R]]
    items: list[T] = field(default_factory=list)
    waiters: list[asyncio.Future[R]] = field(default_factory=list)
    rows: int = 0
    nbytes: int = 0
    # Whether the committer tells the group's size (`GroupCommitter.alone`'s commit tells it itself).
    observed: bool = True

    def has_room(self, rows: int, nbytes: int, max_rows: int, max_bytes: int) -> bool:
        return not self.items or (self.rows + rows <= max_rows and self.nbytes + nbytes <= max_bytes)

    def add(self, item: T, rows: int, nbytes: int) -> asyncio.Future[R]:
        waiter: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self.items.append(item)
        self.waiters.append(waiter)
        self.rows += rows
        self.nbytes += nbytes
        return waiter

    def settle(self, result: R | None = None, error: Exception | None = None) -> None:
        for waiter in self.waiters:
            if waiter.done():  # its request went away: nobody is left to tell
                continue
            if error is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(result)

    def cancel(self) -> None:
        for waiter in self.waiters:
            waiter.cancel()


class GroupCommitter(Generic[T, R]):
    def __init__(self, *, enabled: bool, max_rows: int, max_bytes: int,
                 on_commit: Callable[[int], None] | None = None) -> None:
        self.enabled = enabled
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        # Told the size of every group committed (a metric: how much grouping the load gives).
        self.on_commit = on_commit
        # A scope is here exactly while one of its commits is in flight, with the groups waiting for it to end.
        self._busy: dict[Hashable, deque[_Group[T, R]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def waiting(self) -> int:
        """Requests waiting for the commit in flight of their scope to end."""
        return sum(len(group.items) for groups in self._busy.values() for group in groups)

    async def submit(self, scope: Hashable, item: T, *, rows: int, nbytes: int,
                     commit: Callable[[list[T]], Awaitable[R]]) -> R:
        """Commit `item` with whatever else of `scope` waits for the same commit; `commit` gets the group's items."""
        if not self.enabled:
            self._observe(1)
            return await commit([item])
        waiting = self._busy.get(scope)
        if waiting is None:
            waiting = self._busy[scope] = deque()
            group: _Group[T, R] = _Group(commit)
            waiter = group.add(item, rows, nbytes)
            task = asyncio.create_task(self._run(scope, waiting, group), name=f"ingest-group-commit {scope}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        else:
            group = waiting[-1] if waiting else None
            if group is None or not group.has_room(rows, nbytes, self.max_rows, self.max_bytes):
                group = _Group(commit)
                waiting.append(group)
            waiter = group.add(item, rows, nbytes)
        return await waiter

    def alone(self, scope: Hashable, commit: Callable[[], Awaitable[S]]) -> Awaitable[S] | None:
        """When no commit of `scope` is in flight: `commit` runs now as the scope's commit, of one request (the
        requests that arrive meanwhile queue behind it, as behind any commit), and its outcome is returned to await;
        else None, and the request is `submit`ted as usual. What lets a request that finds its scope idle do its
        own work (decode) and the commit's (cut, sort, encode) in one hand-off to a thread: nothing can join it.
        `commit` tells the group's size itself (`observe`), once it has a group to commit."""
        if not self.enabled:
            return commit()
        if scope in self._busy:
            return None
        waiting: deque[_Group[Any, Any]] = deque()
        self._busy[scope] = waiting
        group: _Group[Any, Any] = _Group(lambda _items: commit(), observed=False)
        waiter = group.add(None, 0, 0)
        task = asyncio.create_task(self._run(scope, waiting, group), name=f"ingest-group-commit {scope}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return waiter

    def observe(self, requests: int) -> None:
        """A group of `requests` committed (`alone`'s commit tells it itself)."""
        self._observe(requests)

    def _observe(self, requests: int) -> None:
        if self.on_commit is not None:
            self.on_commit(requests)

    async def _run(self, scope: Hashable, waiting: deque[_Group[T, R]], group: _Group[T, R]) -> None:
        try:
            while True:
                if group.observed:
                    self._observe(len(group.items))
                try:
                    result = await group.commit(group.items)
                except Exception as exc:  # noqa: BLE001 - the group's requests answer it, each with this problem
                    group.settle(error=exc)
                else:
                    group.settle(result)
                if not waiting:
                    break
                group = waiting.popleft()
        except BaseException:
            # Cancelled (the event loop ends): the requests of this group and of those waiting must not wait forever.
            for pending in (group, *waiting):
                pending.cancel()
            raise
        finally:
            del self._busy[scope]
