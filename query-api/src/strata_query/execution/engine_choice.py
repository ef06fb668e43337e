"""Which engine runs a plan: query-api's in-process engine for plans small enough to answer in milliseconds,
Spark for the rest. The plan already knows exactly what a scan reads, so the choice is made from it before any
byte is read, and the reason is reported with the result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Engine = Literal["local", "spark"]


@dataclass(frozen=True, slots=True)
class LocalLimits:
    """The largest plan the in-process engine takes: bytes of column chunks read, rows in the kept row groups,
    files."""

    max_bytes: int
    max_rows: int
    max_files: int


@dataclass(frozen=True, slots=True)
class EngineChoice:
    engine: Engine
    reason: str


class EngineUnavailable(Exception):
    """The engine a plan needs is not configured here."""


def choose_engine(*, files: int, rows: int, bytes_read: int, limits: LocalLimits, requested: Engine | None,
                  spark_available: bool) -> EngineChoice:
    """The engine for a plan reading `files` files, `rows` rows and `bytes_read` bytes. A request may force one;
    forcing Spark where none is configured raises EngineUnavailable, and so does a plan over the local limits."""
    if requested == "local":
        return EngineChoice("local", "requested by the query")
    if requested == "spark":
        if not spark_available:
            raise EngineUnavailable("the query asks for Spark, but query-api has no Spark Connect server configured")
        return EngineChoice("spark", "requested by the query")
    over = [f"{name} {value:,} > {limit:,}" for name, value, limit in (
        ("bytes", bytes_read, limits.max_bytes), ("rows", rows, limits.max_rows), ("files", files, limits.max_files))
        if value > limit]
    if not over:
        return EngineChoice("local", f"plan within local limits ({bytes_read:,} bytes, {rows:,} rows, "
                                     f"{files:,} files)")
    if not spark_available:
        raise EngineUnavailable(f"the plan is over the local engine's limits ({', '.join(over)}) and query-api has "
                                "no Spark Connect server configured; narrow the query or force \"engine\": \"local\"")
    return EngineChoice("spark", f"plan over local limits: {', '.join(over)}")
