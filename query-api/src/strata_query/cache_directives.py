"""What a caller asks of the result cache, read from its Cache-Control: an HTTP header (`router.py`) or a Flight
SQL call header (`flight/`) alike."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResultCacheDirectives:
    # Answer from a cached result when one holds.
    reuse: bool = True
    # Cache this run's result.
    keep: bool = True

    @classmethod
    def from_cache_control(cls, cache_control: str | None) -> ResultCacheDirectives:
        """A request's Cache-Control (RFC 9111: `no-cache` asks for an answer checked at the origin, here a run;
        `no-store` asks that nothing of it be kept), an HTTP header or a Flight call header alike."""
        directives = {part.split("=", 1)[0].strip().lower() for part in (cache_control or "").split(",")}
        if "no-store" in directives:
            return cls(reuse=False, keep=False)
        return cls(reuse="no-cache" not in directives, keep=True)
