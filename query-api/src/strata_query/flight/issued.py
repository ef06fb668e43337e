"""Results a Flight SQL GetFlightInfo has started and a DoGet streams: between the two, a run waits here under a
random handle (its ticket). A ticket is redeemed once, by a caller of the tenant that ran it, on the replica that
issued it; one not redeemed within the pickup time is given up, so an abandoned FlightInfo holds no engine. A run
waits with its slot under the tenant's cap (`limits.py`): taken by the DoGet that redeems it, freed if it is given
up."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

from strata_core.errors import NotFound
from strata_frame.web.tenant_limits import Slot
from strata_query.query_run import QueryRun


@dataclass
class Issued:
    run: QueryRun
    tenant: str | None
    issued_at: float
    slot: Slot | None = None
    taken: bool = False


class IssuedResults:
    def __init__(self, pickup_secs: float) -> None:
        self.pickup_secs = pickup_secs
        # gRPC's threads issue, redeem and cancel concurrently.
        self._lock = threading.Lock()
        self._entries: dict[bytes, Issued] = {}

    def issue(self, run: QueryRun, tenant: str | None, slot: Slot | None = None) -> bytes:
        self.give_up_expired()
        handle = secrets.token_bytes(16)
        with self._lock:
            self._entries[handle] = Issued(run, tenant, time.monotonic(), slot)
        return handle

    def take(self, handle: bytes, tenant: str | None) -> Issued:
        """The result to stream; its slot is the taker's to free from now on (a taken result is never given up).
        It stays findable (to cancel it) until `finished`."""
        with self._lock:
            entry = self._entries.get(handle)
            if entry is None or entry.taken or not _same_tenant(entry, tenant):
                raise NotFound("no result waits under this ticket: it was redeemed, cancelled, given up after "
                               f"{self.pickup_secs:g} s, or issued by another replica or tenant")
            entry.taken = True
            return entry

    def find(self, handle: bytes, tenant: str | None) -> Issued | None:
        with self._lock:
            entry = self._entries.get(handle)
        return entry if entry is not None and _same_tenant(entry, tenant) else None

    def finished(self, handle: bytes) -> None:
        with self._lock:
            self._entries.pop(handle, None)

    def give_up(self, handle: bytes) -> bool:
        """Ends a result not yet taken; False when it is being streamed (or gone)."""
        with self._lock:
            entry = self._entries.get(handle)
            if entry is None or entry.taken:
                return False
            del self._entries[handle]
        if entry.slot is not None:
            entry.slot.release()
        entry.run.abandon()
        return True

    def give_up_all(self) -> None:
        """At shutdown: every result not yet taken ends."""
        with self._lock:
            waiting = [handle for handle, entry in self._entries.items() if not entry.taken]
        for handle in waiting:
            self.give_up(handle)

    def give_up_expired(self) -> None:
        """Tickets past their pickup time are given up: also before a caller is admitted, since an abandoned
        ticket holds its tenant's slot."""
        deadline = time.monotonic() - self.pickup_secs
        with self._lock:
            expired = [h for h, e in self._entries.items() if not e.taken and e.issued_at < deadline]
        for handle in expired:
            self.give_up(handle)


def _same_tenant(entry: Issued, tenant: str | None) -> bool:
    return entry.tenant == tenant
