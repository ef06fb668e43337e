"""The set of query-api instances behind the proxy, health-checked in the background, chosen round-robin."""

from __future__ import annotations

import asyncio
import itertools
import logging

import httpx

log = logging.getLogger("strata.proxy")


class Upstreams:
    def __init__(self, urls: list[str], client: httpx.AsyncClient, interval_secs: float = 2.0) -> None:
        if not urls:
            raise ValueError("the proxy needs at least one query-api upstream")
        self.urls = [u.rstrip("/") for u in urls]
        self.client = client
        self.interval_secs = interval_secs
        # Until the first check says otherwise, every upstream is presumed healthy.
        self.healthy: dict[str, bool] = dict.fromkeys(self.urls, True)
        self._cycle = itertools.cycle(self.urls)
        self._task: asyncio.Task | None = None

    def pick(self) -> str | None:
        for _ in range(len(self.urls)):
            url = next(self._cycle)
            if self.healthy[url]:
                return url
        return None

    def mark_down(self, url: str) -> None:
        self.healthy[url] = False

    async def check_once(self) -> None:
        async def one(url: str) -> None:
            try:
                response = await self.client.get(f"{url}/healthz", timeout=2.0)
                ok = response.status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok != self.healthy[url]:
                log.warning("upstream %s is now %s", url, "healthy" if ok else "down")
            self.healthy[url] = ok

        await asyncio.gather(*(one(u) for u in self.urls))

    async def _loop(self) -> None:
        while True:
            await self.check_once()
            await asyncio.sleep(self.interval_secs)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
