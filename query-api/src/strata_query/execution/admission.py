"""query-api's own admission: a bounded number of queries in flight, at most a few per tenant, and waiting
requests admitted round-robin across tenants, so one tenant's flood queues behind itself and not in front of a
quiet tenant. The proxy's token bucket limits what enters; this shares what query-api can do among what did."""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from strata_core.errors import TooManyRequests


class TenantBusy(TooManyRequests):
    slug, title = "tenant-busy", "Too many queries waiting for this tenant"


class FairAdmission:
    def __init__(self, max_concurrent: int, max_per_tenant: int, max_waiting_per_tenant: int) -> None:
        self.max_concurrent = max_concurrent
        self.max_per_tenant = max_per_tenant
        self.max_waiting_per_tenant = max_waiting_per_tenant
        self.running: dict[str, int] = {}
        self.total = 0
        # Tenants with waiters, in the order they are next served; a tenant served moves to the back.
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @asynccontextmanager
    async def slot(self, tenant: str | None) -> AsyncIterator[None]:
        key = tenant or ""
        await self._acquire(key)
        try:
            yield
        finally:
            self._release(key)

    def waiting(self, tenant: str | None = None) -> int:
        if tenant is not None:
            return len(self._waiting.get(tenant, ()))
        return sum(len(q) for q in self._waiting.values())

    async def _acquire(self, key: str) -> None:
        if key not in self._waiting and self._can_run(key):
            self._start(key)
            return
        queue = self._waiting.setdefault(key, deque())
        if len(queue) >= self.max_waiting_per_tenant:
            if not queue:
                del self._waiting[key]
            raise TenantBusy(f"{len(queue)} queries of this tenant are already waiting; retry later",
                             headers={"Retry-After": "1"})
        ticket: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(ticket)
        try:
            await ticket
        except asyncio.CancelledError:
            if ticket.done() and not ticket.cancelled():
                # Admitted just as the waiter gave up: hand the slot on.
                self._release(key)
            else:
                queue.remove(ticket)
                if not queue:
                    self._waiting.pop(key, None)
            raise

    def _can_run(self, key: str) -> bool:
        return self.total < self.max_concurrent and self.running.get(key, 0) < self.max_per_tenant

    def _start(self, key: str) -> None:
        self.total += 1
        self.running[key] = self.running.get(key, 0) + 1

    def _release(self, key: str) -> None:
        self.total -= 1
        self.running[key] -= 1
        if not self.running[key]:
            del self.running[key]
        self._dispatch()

    def _dispatch(self) -> None:
        while self.total < self.max_concurrent:
            # The tenant with the fewest queries running goes next; among equals, the one served longest ago.
            ready = [key for key in self._waiting if self._can_run(key)]
            if not ready:
                return
            chosen = min(ready, key=lambda key: self.running.get(key, 0))
            queue = self._waiting.pop(chosen)
            ticket = queue.popleft()
            if queue:
                self._waiting[chosen] = queue  # to the back of the round
            self._start(chosen)
            ticket.set_result(None)
