"""Cancelling work in flight, whichever replica the cancel reaches: a query running here is interrupted on its
engine at once; otherwise the cancel is recorded in the shared registry, and the replica that plans or runs the
work, which polls the registry while it has any in flight, carries it out."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Mapping
from contextlib import suppress
from typing import Any

from strata_core.errors import NotFound
from strata_query.registry import QueryRegistry, RunningQuery

log = logging.getLogger("strata.query")
CANCEL_RETRY_SECS = 30.0
# While this replica has work in flight, it reads this often whether a cancel for it was received elsewhere.
CANCEL_POLL_SECS = 0.25


class Cancellation:
    def __init__(self, registry: QueryRegistry, plan_tasks: Mapping[str, asyncio.Task]) -> None:
        self.registry = registry
        # The asynchronous plans being planned here (`async_plans.AsyncPlans.tasks`), read at every poll.
        self.plan_tasks = plan_tasks
        self._background: set[asyncio.Task] = set()
        self._watch: asyncio.Task | None = None

    async def cancel_query(self, query_id: str, tenant: str | None) -> None:
        """Interrupts a running query on its engine, on whichever replica runs it; its own caller then gets
        QueryCancelled (or, when its result was already streaming, the stream ends early)."""
        running = self.registry.running_here(query_id)
        if running is not None and (tenant is None or running.tenant == tenant):
            running.cancelled = True
            await asyncio.to_thread(interrupt_until_reached, running)
            return
        if not await self.registry.request_cancel(query_id, tenant):
            raise NotFound(f"no query {query_id!r} is running")

    def watch(self) -> None:
        """Called whenever work starts here: polls for cancels received elsewhere until none is left."""
        if self._watch is None or self._watch.done():
            self._watch = asyncio.create_task(self._poll_cancel_requests(), name="cancel-requests")

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with suppress(asyncio.CancelledError):
                await self._watch

    async def _poll_cancel_requests(self) -> None:
        """While this replica plans or runs anything: cancels received by other replicas, carried out here."""
        while self.plan_tasks or self.registry.has_running():
            await asyncio.sleep(CANCEL_POLL_SECS)
            try:
                plan_ids, queries = await self.registry.cancel_requests(tuple(self.plan_tasks))
            except Exception:  # noqa: BLE001 - read again at the next tick
                log.warning("reading cancel requests failed", exc_info=True)
                continue
            for plan_id in plan_ids:
                if (task := self.plan_tasks.get(plan_id)) is not None:
                    task.cancel()
            for running in queries:
                if not running.cancelled:
                    running.cancelled = True
                    self._in_background(asyncio.to_thread(interrupt_until_reached, running))

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        # The loop keeps only weak references to tasks.
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def interrupt_until_reached(running: RunningQuery) -> None:
    """Blocking: interrupts a query being cancelled. A query still starting (Spark analyses the plan before the
    operation that an interrupt can reach exists) is interrupted again until it is reached or has started; a query
    that finishes starting anyway sees `cancelled` and is closed by its own caller."""
    deadline = time.monotonic() + CANCEL_RETRY_SECS
    while not running.engine.interrupt(running.query_id) and running.opening and time.monotonic() < deadline:
        time.sleep(0.1)
