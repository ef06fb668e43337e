"""Per-tenant admission limits, the one mechanism behind both doors a tenant queries through: the proxy (HTTP) and
query-api's Flight SQL server. A token bucket on request rate, then a cap on requests in flight; the settings
(`proxy_rate_per_sec`, `proxy_burst`, `proxy_max_concurrent_per_tenant`) are the same for both.

Who is limited: a tenant-bound key is limited by its tenant, so a tenant's keys share one budget. A key without a
tenant (an admin key) is limited by its own identity, `key:<key_id>`: those keys are operators' scripts and
tools, and one runaway script should not throttle another, which one shared "_untenanted" bucket would do.
Tenant names come from the operator's key configuration, never from a request, so the number of buckets is
bounded by the configured keys and a tenant cannot pick a name that collides with a key's bucket.

Each door process keeps its own budgets: the proxy's from its event loop, the Flight door's from gRPC's threads,
hence the locks (uncontended on the proxy's one loop, where they cost a few tens of nanoseconds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from strata_core.config import ProxySettings
from strata_frame.web.auth import Principal


def limit_key(tenant: str | None, key_id: str) -> str:
    """The budget a request is counted against."""
    return tenant if tenant is not None else f"key:{key_id}"


def who(principal: Principal) -> str:
    """The budget's owner as a refusal names it."""
    return f"tenant {principal.tenant!r}" if principal.tenant is not None else f"untenanted key {principal.key_id}"


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    # 0 when allowed; otherwise how long until one token will have refilled, exactly, in seconds.
    retry_after_secs: float


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class TokenBuckets:
    """One token bucket per key: it holds at most `burst` tokens, refills at `rate_per_sec`, and each request
    takes one. A new key starts full, so a quiet tenant may burst right away."""

    def __init__(self, rate_per_sec: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_sec <= 0:
            raise ValueError(f"the proxy rate limit must be positive, got {rate_per_sec}")
        if burst < 1:
            raise ValueError(f"the proxy burst must be at least 1, got {burst}")
        self.rate_per_sec = rate_per_sec
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}

    def try_acquire(self, key: str, now: float | None = None) -> Decision:
        now = self._clock() if now is None else now
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(self.burst), now)
            # max(): a clock that steps back (a caller passing an older `now`) must not drain the bucket.
            elapsed = max(0.0, now - bucket.updated)
            bucket.tokens = min(float(self.burst), bucket.tokens + elapsed * self.rate_per_sec)
            bucket.updated = max(bucket.updated, now)
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return Decision(True, 0.0)
            return Decision(False, (1.0 - bucket.tokens) / self.rate_per_sec)


class Slot:
    """One admitted request's place under the cap. Releasing twice is harmless, so every path that ends a
    request (body done, client gone, forwarding failed, a Flight ticket redeemed or given up) may release without
    coordinating with the others."""

    __slots__ = ("_cap", "_key", "_held")

    def __init__(self, cap: ConcurrencyCap, key: str) -> None:
        self._cap = cap
        self._key = key
        self._held = True

    def release(self) -> None:
        # The flag is flipped under the cap's lock: two threads releasing at once must free one place, not two.
        self._cap._release(self)


class ConcurrencyCap:
    """At most `limit` requests in flight per key."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the proxy concurrency cap must be at least 1, got {limit}")
        self.limit = limit
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}

    def try_acquire(self, key: str) -> Slot | None:
        with self._lock:
            running = self._in_flight.get(key, 0)
            if running >= self.limit:
                return None
            self._in_flight[key] = running + 1
        return Slot(self, key)

    def in_flight(self, key: str) -> int:
        return self._in_flight.get(key, 0)

    def _release(self, slot: Slot) -> None:
        with self._lock:
            if not slot._held:
                return
            slot._held = False
            running = self._in_flight[slot._key] - 1
            if running:
                self._in_flight[slot._key] = running
            else:
                # Idle keys leave no entry behind.
                del self._in_flight[slot._key]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was not admitted: the limit it hit, whose budget, and when a retry can succeed."""

    reason: Literal["rate", "concurrency"]
    key: str
    # For the rate, the exact wait for one token; for the cap, a nominal second, since when a running request
    # ends is unknown.
    retry_after_secs: float
    owner: str
    limits: TenantLimits

    def detail(self, waited_secs: float = 0.0) -> str:
        """The refusal in words, for a client already held `waited_secs` before hearing it."""
        if self.reason == "concurrency":
            return (f"{self.owner} already has {self.limits.cap.limit} requests running, its cap on concurrent "
                    "requests; retry once one of them ends")
        return (f"{self.owner} is over its rate limit of {self.limits.buckets.rate_per_sec:g} requests/s "
                f"(burst {self.limits.buckets.burst}); retry in {self.retry_in(waited_secs):.3g} s")

    def retry_in(self, waited_secs: float = 0.0) -> float:
        """Seconds until a retry can succeed, once the client has been held `waited_secs`. The cap's nominal
        second is not shortened by a hold: a running request is no nearer its end for it."""
        if self.reason == "concurrency":
            return self.retry_after_secs
        return max(0.0, self.retry_after_secs - waited_secs)


class TenantLimits:
    """The rate, then the cap, as every door applies them to a caller."""

    def __init__(self, rate_per_sec: float, burst: int, max_concurrent: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.buckets = TokenBuckets(rate_per_sec, burst, clock)
        self.cap = ConcurrencyCap(max_concurrent)

    @classmethod
    def from_settings(cls, proxy: ProxySettings) -> TenantLimits:
        return cls(proxy.rate_per_sec, proxy.burst, proxy.max_concurrent_per_tenant)

    def admit(self, principal: Principal, *, takes_token: bool = True) -> Slot | Refusal:
        """The caller's slot under its limits, or why not. A request refused by the cap has still taken a token:
        a client retrying in a tight loop against a full cap runs into the rate limit too. `takes_token=False`
        is for work that continues a request already counted (the Flight door's prepared statements)."""
        key = limit_key(principal.tenant, principal.key_id)
        if takes_token:
            decision = self.buckets.try_acquire(key)
            if not decision.allowed:
                return Refusal("rate", key, decision.retry_after_secs, who(principal), self)
        slot = self.cap.try_acquire(key)
        if slot is None:
            return Refusal("concurrency", key, 1.0, who(principal), self)
        return slot
