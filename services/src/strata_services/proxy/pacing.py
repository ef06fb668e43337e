"""The pacing of the proxy's 429s. The per-tenant limits that decide them are shared with the Flight SQL door
(`strata_frame.web.tenant_limits`); holding a refusal is the proxy's own, since it protects its one event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable


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
