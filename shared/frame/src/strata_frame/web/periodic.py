"""Background work of the APIs: a pass repeated at an interval until stopped, surviving a failed pass."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("strata.background")


async def every(seconds: float, stop: asyncio.Event, work: Callable[[], Awaitable[object]], name: str) -> None:
    while not stop.is_set():
        try:
            await work()
        except Exception:  # noqa: BLE001 - a failed pass is retried at the next tick
            log.exception("%s failed", name)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=seconds)
