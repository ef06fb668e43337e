"""What an API runs beside its routes until shutdown: periodic passes and an embedded job runner, which reaches
its own API in process (ASGI transport) like any worker would over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import httpx
from fastapi import FastAPI

from strata_shared.web.periodic import every


class Background:
    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._clients: list[httpx.AsyncClient] = []
        self._closers: list[Callable[[], object]] = []

    def every(self, seconds: float, work: Callable[[], Awaitable[object]], name: str) -> None:
        self._tasks.append(asyncio.create_task(every(seconds, self.stop, work, name)))

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

    async def close(self, timeout_secs: float = 15.0) -> None:
        self.stop.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, timeout=timeout_secs)
        for client in self._clients:
            await client.aclose()
        for close in self._closers:
            close()
