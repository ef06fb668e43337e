"""No poison pill: how a periodic pass (GC, retention, the janitor, compaction and indexing planning) handles
one entry it cannot process without stopping for the rest.

A pass opens `maintenance_pass(...)` and runs each entry's action inside `skips.entry(index_id, entry)`. When the
action raises, one rule decides whose fault it is (`is_entry_fault`):

- **The dependency's** (the pass stops, logs one line, and runs again at its next interval): PostgreSQL does not
  answer (connection-level errors, `Unavailable`), or the object store as a whole does not (its root cannot be
  listed). Skipping
  every entry because S3 or the database is down would be wrong (nothing is wrong with them) and would flood the
  record with the outage.
- **The entry's** (skipped, counted in `strata_maintenance_skipped_total{pass,reason}`, recorded in
  `maintenance_skips`, and the pass goes on): a path outside the storage root, an artifact that does not decode, a
  storage error on that one object while the store's root and the database still answer, and, for the passes
  that declare it (planning), an error of the index's own configuration or splits (`PLANNING_FAULTS`).
- Anything else is a bug: it propagates as before, with its traceback.

The record is written when the pass finishes: what it skipped is upserted (one row per entry, its attempts
counted), and the rows of entries it handled this time, or no longer met, are deleted. A pass stopped by an
outage writes nothing: it was not a judgement on any entry.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import exc as sa_exc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.artifacts.envelope import ArtifactFormatError
from strata_core.errors import Unavailable
from strata_core.storage import ObjectStore, PathOutsideRoot
from strata_frame.maintenance.metrics import MaintenanceMetrics
from strata_frame.maintenance.passes import LISTING_HEAD, MaintenancePass
from strata_metastore.maintenance_models import MAINTENANCE_PASSES
from strata_metastore.maintenance_repository import MaintenanceSkipRepository, SkippedEntry

log = logging.getLogger("strata.maintenance")


assert tuple(MaintenancePass) == MAINTENANCE_PASSES, "the enum and the table's check constraint must agree"


class StorageUnavailable(Exception):
    """The object store's root does not answer: an outage, not a fault of the entry being handled."""


# What can be wrong with one stored object: outside the root, not an artifact, or a storage error on it alone.
STORAGE_FAULTS: tuple[type[BaseException], ...] = (PathOutsideRoot, ArtifactFormatError, OSError)
# Planning an index also fails on the index's own data: a stored config the current model refuses (pydantic's
# ValidationError is a ValueError), or splits the policy cannot handle.
PLANNING_FAULTS: tuple[type[BaseException], ...] = (*STORAGE_FAULTS, ValueError, LookupError, ArithmeticError)

_DATABASE_DOWN = (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.DisconnectionError, sa_exc.TimeoutError)
_NETWORK_DOWN = (ConnectionError, TimeoutError, socket.gaierror)


def is_dependency_failure(exc: BaseException) -> bool:
    """PostgreSQL or the object store as a whole not answering, by the exception alone (no probe)."""
    if isinstance(exc, (StorageUnavailable, Unavailable, *_DATABASE_DOWN, *_NETWORK_DOWN)):
        return True
    return isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated


_CREDENTIALS = [
    # user:password@ in a URL
    (re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/@\s:]*:[^/@\s]*@"), r"\1***@"),
    # key=value and key: value pairs whose key names a secret
    (re.compile(r"(?i)\b([\w-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|credential|signature|"
                r"authorization|session)[\w-]*)(\s*[=:]\s*)(?:bearer\s+|basic\s+)?[^\s,;&'\"]+"), r"\1\2***"),
    # AWS access key ids
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "***"),
]
_REASON_MAX_CHARS = 2000


def describe_failure(exc: BaseException) -> tuple[str, str]:
    """(the exception's class, its message with credential-looking text replaced by ***), as recorded."""
    message = str(exc).replace("\x00", "")
    for pattern, replacement in _CREDENTIALS:
        message = pattern.sub(replacement, message)
    return type(exc).__name__, message[:_REASON_MAX_CHARS]


@dataclass(slots=True)
class EntryOutcome:
    """Whether the entry's action was skipped (it raised a fault of the entry, now recorded)."""

    skipped: bool = False
    reason_class: str | None = None
    reason: str | None = None


@dataclass
class PassSkips:
    """One run of one pass: the entries it skipped and the indexes it looked at (see the module docstring)."""

    pass_name: MaintenancePass
    sessions: async_sessionmaker[AsyncSession]
    storage: ObjectStore
    metrics: MaintenanceMetrics | None
    now: datetime
    faults: tuple[type[BaseException], ...]
    # True: the pass looks at every entry it could record, so any older row it did not meet again is cleared;
    # False: only rows of the indexes it visited are.
    covers_everything: bool
    skipped: list[SkippedEntry] = field(default_factory=list)
    visited: set[str] = field(default_factory=set)

    @asynccontextmanager
    async def entry(self, index_id: str | None, entry: str) -> AsyncIterator[EntryOutcome]:
        """Run one entry's action in the block; a fault of the entry is recorded and suppressed."""
        if index_id is not None:
            self.visited.add(index_id)
        outcome = EntryOutcome()
        try:
            yield outcome
        except Exception as exc:  # noqa: BLE001 - sorted by is_entry_fault; the rest is raised again
            if not await self.is_entry_fault(exc):
                raise
            reason_class, reason = describe_failure(exc)
            outcome.skipped, outcome.reason_class, outcome.reason = True, reason_class, reason
            self.skipped.append(SkippedEntry(str(self.pass_name), index_id, entry, reason_class, reason))
            if self.metrics is not None:
                self.metrics.skipped.labels(str(self.pass_name), reason_class).inc()
            log.debug("%s: skipped %s (index %s): %s: %s", self.pass_name, entry, index_id, reason_class, reason)

    async def is_entry_fault(self, exc: BaseException) -> bool:
        """The rule of the module docstring. Raises StorageUnavailable when a storage error turns out to be the
        whole store's."""
        if is_dependency_failure(exc) or not isinstance(exc, self.faults):
            return False
        if isinstance(exc, OSError):
            # A storage error names no culprit: it is this object's only if, asked right after, the store's root
            # and the database both answer.
            if not await asyncio.to_thread(self.storage.root_answers):
                raise StorageUnavailable(f"the object store {self.storage.root_uri!r} does not answer") from exc
            async with self.sessions() as session:
                await session.execute(text("SELECT 1"))
        return True

    async def finish(self) -> None:
        """Record what was skipped and clear what no longer is, in one transaction; set the gauge."""
        pass_name = str(self.pass_name)
        async with self.sessions() as session:
            repo = MaintenanceSkipRepository(session)
            await repo.record(self.skipped, self.now)
            cleared = await repo.clear(pass_name, index_ids=None if self.covers_everything else self.visited,
                                       keep={s.entry for s in self.skipped})
            counts = await repo.counts_by_pass([pass_name]) if self.skipped or cleared else None
            await session.commit()
        if counts is not None and self.metrics is not None:
            self.metrics.recorded.labels(pass_name).set(counts[pass_name])
        if self.skipped:
            by_reason = Counter(s.reason_class for s in self.skipped)
            log.warning("%s: skipped %d entries (%s); GET /v1/%s/maintenance/skips?pass=%s lists them", pass_name,
                        len(self.skipped), ", ".join(f"{r} {n}" for r, n in sorted(by_reason.items())),
                        LISTING_HEAD[self.pass_name], pass_name)


@dataclass(frozen=True, slots=True)
class PassRecorder:
    """What every run of a pass needs besides its own work: the database its record goes to, the store whose root
    tells an outage from an entry's fault, the metrics of its skips, and the meter its object-store requests are
    counted under (by the pass's name). Each API that runs passes builds one and hands it to them."""

    sessions: async_sessionmaker[AsyncSession]
    storage: ObjectStore
    metrics: MaintenanceMetrics | None
    measure: Callable[[str], AbstractContextManager[object]]


@asynccontextmanager
async def maintenance_pass(recorder: PassRecorder, pass_name: MaintenancePass, now: datetime, *,
                           faults: tuple[type[BaseException], ...] = STORAGE_FAULTS,
                           covers_everything: bool = True) -> AsyncIterator[PassSkips]:
    """One run of a pass; its record is written when the block ends normally (an outage raises through). Its
    object-store requests are counted under the pass's name."""
    skips = PassSkips(pass_name, recorder.sessions, recorder.storage, recorder.metrics, now, faults,
                      covers_everything)
    with recorder.measure(str(pass_name)):
        yield skips
        await skips.finish()


def quiet_on_outage(name: str, work: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[object]]:
    """A periodic pass that an outage of PostgreSQL or the object store stops with one log line (it runs again at
    its next interval) instead of a traceback per pass; anything else still propagates."""

    async def run() -> object:
        try:
            return await work()
        except Exception as exc:  # noqa: BLE001 - only outages are swallowed; the rest is raised again
            if not (is_dependency_failure(exc) or isinstance(exc, OSError)):
                raise
            _, reason = describe_failure(exc)
            log.warning("%s stopped: a dependency does not answer (%s: %s); retried at the next interval", name,
                        type(exc).__name__, reason)
            return None

    return run
