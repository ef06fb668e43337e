"""Per-tenant admission limits of the proxy: a token bucket on request rate and a cap on requests in flight.

Pure bookkeeping, no I/O and no locks: the proxy calls these from its single event loop.

Who is limited: a tenant-bound key is limited by its tenant, so a tenant's keys share one budget. A key without a
tenant (an admin key) is limited by its own identity, `key:<key_id>`: those keys are operators' scripts and
tools, and one runaway script should not throttle another, which one shared "_untenanted" bucket would do.
Tenant names come from the operator's key configuration, never from a request, so the number of buckets is
bounded by the configured keys and a tenant cannot pick a name that collides with a key's bucket.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def limit_key(tenant: str | None, key_id: str) -> str:
    """The budget a request is counted against."""
    return tenant if tenant is not None else f"key:{key_id}"


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
        self._buckets: dict[str, _Bucket] = {}

    def try_acquire(self, key: str, now: float | None = None) -> Decision:
        now = self._clock() if now is None else now
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
    request (body done, client gone, forwarding failed) may release without coordinating with the others."""

    __slots__ = ("_cap", "_key", "_held")

    def __init__(self, cap: ConcurrencyCap, key: str) -> None:
        self._cap = cap
        self._key = key
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._cap._release(self._key)


class ConcurrencyCap:
    """At most `limit` requests in flight per key."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the proxy concurrency cap must be at least 1, got {limit}")
        self.limit = limit
        self._in_flight: dict[str, int] = {}

    def try_acquire(self, key: str) -> Slot | None:
        running = self._in_flight.get(key, 0)
        if running >= self.limit:
            return None
        self._in_flight[key] = running + 1
        return Slot(self, key)

    def in_flight(self, key: str) -> int:
        return self._in_flight.get(key, 0)

    def _release(self, key: str) -> None:
        running = self._in_flight[key] - 1
        if running:
            self._in_flight[key] = running
        else:
            # Idle keys leave no entry behind.
            del self._in_flight[key]
