"""Per-tenant admission limits of the proxy: a token bucket on request rate, a cap on requests in flight, and the
pacing of the 429s that refuse the rest.

Bookkeeping without locks: the proxy calls these from its single event loop.

Who is limited: a tenant-bound key is limited by its tenant, so a tenant's keys share one budget. A key without a
tenant (an admin key) is limited by its own identity, `key:<key_id>`: those keys are operators' scripts and
tools, and one runaway script should not throttle another, which one shared "_untenanted" bucket would do.
Tenant names come from the operator's key configuration, never from a request, so the number of buckets is
bounded by the configured keys and a tenant cannot pick a name that collides with a key's bucket.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
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


class RejectionPacer:
    """Holds a refused request for `delay_secs` before its 429 is sent, like HAProxy's tarpit.

    Why: a client that ignores Retry-After and loops on 429s (a runaway script, a retry storm) is otherwise
    answered as fast as the proxy can answer, and the proxy's one event loop, shared by every tenant, spends its
    time refusing one tenant while the others' requests wait behind those refusals. Held, such a client gets one
    answer per delay per connection, and a held request costs a sleeping task, not CPU. At most `max_held` are
    held at once, so a flood of connections cannot pin unbounded memory; beyond that, refusals go out at once.
    """

    def __init__(self, delay_secs: float, max_held: int, sleep: Callable[[float], Awaitable[object]]) -> None:
        if delay_secs < 0:
            raise ValueError(f"the proxy's rejection delay cannot be negative, got {delay_secs}")
        self.delay_secs = delay_secs
        self.max_held = max_held
        self._sleep = sleep
        self.held = 0

    async def hold(self) -> float:
        """Waits out the delay if there is room to hold one more; returns how long it held (0 when not)."""
        if self.delay_secs <= 0 or self.held >= self.max_held:
            return 0.0
        self.held += 1
        try:
            await self._sleep(self.delay_secs)
        finally:
            self.held -= 1
        return self.delay_secs
