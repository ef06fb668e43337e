"""What an API runs beside its routes until shutdown: periodic passes (in every replica, or once across the
replicas: `web/singleton.py`) and an embedded job runner, which reaches its own API in process (ASGI transport)
like any worker would over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import httpx
from fastapi import FastAPI

from strata_frame.web.periodic import every
from strata_frame.web.singleton import PassLeases, once_every


class Background:
    def __init__(self, passes: PassLeases | None = None, *, stop_timeout_secs: float = 15.0) -> None:
        self.stop = asyncio.Event()
        self.passes = passes
        # How long `close` waits for each loop: longer than a job runner's shutdown timeout, so it can give its
        # jobs back after them.
        self.stop_timeout_secs = stop_timeout_secs
        self._tasks: list[asyncio.Task[None]] = []
        self._clients: list[httpx.AsyncClient] = []
        self._closers: list[Callable[[], object]] = []

    def every(self, seconds: float, work: Callable[[], Awaitable[object]], name: str) -> None:
        """A pass every replica runs (reads only, e.g. gauges refreshed from the database)."""
        self._tasks.append(asyncio.create_task(every(seconds, self.stop, work, name)))

    def once_every(self, seconds: float, work: Callable[[], Awaitable[object]], name: str) -> None:
        """A pass that runs once per interval across the replicas, in whichever holds its lease (anything that
        writes: garbage collection, retention, the janitor, debt samples)."""
        if self.passes is None:
            raise RuntimeError(f"{name}: a pass run once across replicas needs the pass leases")
        self._tasks.append(asyncio.create_task(once_every(seconds, self.stop, self.passes, work, name)))

    def in_process_client(self, app: FastAPI, base_url: str) -> httpx.AsyncClient:
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)
        self._clients.append(client)
        return client

    def run(self, loop: Callable[[asyncio.Event], Awaitable[None]]) -> None:
        """A long-running loop (a job runner) that returns once `stop` is set."""
        self._tasks.append(asyncio.create_task(loop(self.stop)))

    def on_close(self, close: Callable[[], object]) -> None:
        """Called once every loop has stopped (e.g. a runner's local job processes)."""
        self._closers.append(close)

    async def close(self) -> None:
        """Stop every loop (a pass still running past the timeout is cancelled and gives its lease back; a runner
        gives its jobs back), then run the closers."""
        self.stop.set()
        deadline = asyncio.get_running_loop().time() + self.stop_timeout_secs
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
        for client in self._clients:
            await client.aclose()
        for close in self._closers:
            close()
