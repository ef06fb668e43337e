"""The set of query-api instances behind the proxy, health-checked in the background, chosen round-robin."""

from __future__ import annotations

import asyncio
import itertools
import logging

from strata_services.proxy.upstream_http import UpstreamError, UpstreamPool

log = logging.getLogger("strata.proxy")


class Upstreams:
    def __init__(self, urls: list[str], pool: UpstreamPool, interval_secs: float = 2.0,
                 timeout_secs: float = 2.0) -> None:
        if not urls:
            raise ValueError("the proxy needs at least one query-api upstream")
        self.urls = [u.rstrip("/") for u in urls]
        self.pool = pool
        self.interval_secs = interval_secs
        self.timeout_secs = timeout_secs
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
                async with asyncio.timeout(self.timeout_secs):
                    response = await self.pool.request("GET", url, "/healthz", [])
                    try:
                        await response.read()
                    finally:
                        await response.aclose()
                ok = response.status == 200
            except (UpstreamError, TimeoutError):
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
