"""Periodic passes that run once per interval across every replica of an API, not once per replica.

Operators run each API as several replicas on one PostgreSQL. Each replica ticks every pass, but a pass runs only
in the replica that claims its lease (`BackgroundPassRepository.claim`, one statement): it is claimed when no live
lease is held and its interval has passed since its last start, both by the database's clock, so replicas whose
clocks drift still agree. The holder renews the lease while the pass runs and gives it back when the pass ends
(at shutdown too); a holder that dies stops renewing, the lease expires, and another replica takes the pass at its
next tick once the interval is due. A holder whose renewal is refused (it stalled past its lease and another
replica took the pass) stops its run, so two replicas never run the same pass at once for longer than a renewal.
Replicas tick several times per interval, so the pass runs at most once per interval and at least once per
interval and a tick while any replica lives.

What runs once, and what runs everywhere:

- Anything that writes runs once: garbage collection, retention, the janitor, and the debt samples kept in
  `compaction_debt_samples` (a singleton pass of its own, apart from the gauges).
- Gauges refreshed from the database (the compaction backlog and debt, write amplification, indexing debt) are
  refreshed by every replica: they only read. Prometheus scrapes every replica, and a series exported by the holder
  alone would go stale or vanish on the others whenever the pass moves (a replica keeps the last value it set),
  which `max by (index_id)` across replicas cannot tell from a real value; every replica reading keeps each
  replica's series current, and `max by` (or any one replica) gives the answer. The cost is N replicas' reads
  every 10 s instead of one's.
- Planning is not periodic: compaction plans in a worker poll's housekeeping and indexing enqueues on publish,
  per request and already safe between replicas (a partial unique index lets a split be claimed by one live job
  only, and assignment and lease expiry lock with SKIP LOCKED).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_frame.web.periodic import every
from strata_metastore.background_pass_repository import BackgroundPassRepository, PassRun

log = logging.getLogger("strata.background")

# A holder renews three times per lease, so a slow statement or a pause of a second does not lose the pass; a
# dead holder's pass moves within this long.
LEASE_SECS = 30.0
_PROCESS_STARTED = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def replica_id() -> str:
    """host:pid:start of this process: the pid alone repeats across containers (often 1) and restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{_PROCESS_STARTED}"


class LostLease(Exception):
    """The run's lease was taken by another replica while it ran."""


class PassLeases:
    """One replica's side of the pass leases: claims, renews and gives back the leases of the passes it runs."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], holder: str, *,
                 lease_secs: float = LEASE_SECS) -> None:
        self.sessions = sessions
        self.holder = holder
        self.lease_secs = lease_secs

    async def run_if_due(self, name: str, interval_secs: float, work: Callable[[], Awaitable[object]]) -> bool:
        """Run `work` if this replica claims the pass now; whether it ran. Its error, if any, is recorded on the
        pass and raised again."""
        async with self.sessions() as session:
            run = await BackgroundPassRepository(session).claim(name, self.holder, interval_secs, self.lease_secs)
            await session.commit()
        if run is None:
            return False
        error: str | None = "stopped before the end (replica shutting down)"
        try:
            await self._run_renewing(run, work)
            error = None
        except LostLease:
            log.warning("%s: lease lost to another replica, run stopped", name)
            return True
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            # Shielded: at shutdown the run is cancelled, and the lease must still go back at once rather than
            # keep the pass from the other replicas until it expires.
            await asyncio.shield(self._finish(run, error))
        return True

    async def _run_renewing(self, run: PassRun, work: Callable[[], Awaitable[object]]) -> None:
        task = asyncio.create_task(work())
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.lease_secs / 3)
                if done:
                    task.result()
                    return
                if not await self._renew(run):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
                    raise LostLease(run.name)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _renew(self, run: PassRun) -> bool:
        async with self.sessions() as session:
            renewed = await BackgroundPassRepository(session).renew(run, self.lease_secs)
            await session.commit()
        return renewed

    async def _finish(self, run: PassRun, error: str | None) -> None:
        try:
            async with self.sessions() as session:
                await BackgroundPassRepository(session).finish(run, error)
                await session.commit()
        except Exception:  # noqa: BLE001 - the lease then expires on its own
            log.exception("%s: giving back the lease failed", run.name)


def tick_secs(interval_secs: float) -> float:
    """How often a replica asks for a pass: four times per interval, so the pass is late by at most a quarter
    interval after its holder dies or when another replica's tick comes first."""
    return interval_secs / 4


async def once_every(seconds: float, stop: asyncio.Event, leases: PassLeases, work: Callable[[], Awaitable[object]],
                     name: str) -> None:
    """`periodic.every` across replicas: the same loop, ticking `tick_secs(seconds)`, and each tick runs `work` if
    this replica claims the pass (a failed pass is recorded on the pass and retried when due again)."""
    await every(tick_secs(seconds), stop, lambda: leases.run_if_due(name, seconds, work), name)
