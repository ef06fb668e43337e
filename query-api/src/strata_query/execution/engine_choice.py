"""Which engine runs a plan: query-api's in-process engine for plans small enough to answer in milliseconds,
Spark for the rest. The plan already knows exactly what a scan reads, so the choice is made from it before any
byte is read, and the reason is reported with the result."""

from __future__ import annotations

from dataclasses import dataclass

from strata_core.sql.errors import QueryValidationError
from strata_query.execution.engine import Engine

# What a request naming an engine that is not configured here is told.
_NOT_CONFIGURED = {"spark": "the query asks for Spark, but query-api has no Spark Connect server configured"}


@dataclass(frozen=True, slots=True)
class LocalLimits:
    """The largest plan the in-process engine takes: bytes of column chunks read, rows in the kept row groups,
    files."""

    max_bytes: int
    max_rows: int
    max_files: int


@dataclass(frozen=True, slots=True)
class Engines:
    """The engines of this query-api: the in-process one, always, and Spark when one is configured."""

    in_process: Engine
    distributed: Engine | None

    def named(self, name: str) -> Engine | None:
        return next((e for e in (self.in_process, self.distributed) if e is not None and e.name == name), None)


@dataclass(frozen=True, slots=True)
class EngineChoice:
    # None: no engine here can run the plan, and `reason` says why.
    engine: Engine | None
    reason: str


class EngineUnavailable(Exception):
    """The engine a plan needs is not configured here."""


def choose_engine(*, files: int, rows: int, bytes_read: int, limits: LocalLimits, requested: str | None,
                  engines: Engines, local_only: str | None = None) -> EngineChoice:
    """The engine for a plan reading `files` files, `rows` rows and `bytes_read` bytes. A request may name one;
    naming one that is not configured raises EngineUnavailable, and so does a plan over the local limits where
    there is no Spark. `local_only`: why only the in-process engine can run the query (a regular expression that
    Spark's Java engine would read otherwise); such a query never goes to Spark."""
    if local_only is not None and requested not in (None, engines.in_process.name):
        raise QueryValidationError(f"the query asks for {requested}, but it runs only on the local engine: "
                                   f"{local_only}", "engine")
    if requested is not None:
        engine = engines.named(requested)
        if engine is None:
            raise EngineUnavailable(_NOT_CONFIGURED.get(
                requested, f"the query asks for the engine {requested!r}, which query-api does not have"))
        return EngineChoice(engine, "requested by the query")
    over = [f"{name} {value:,} > {limit:,}" for name, value, limit in (
        ("bytes", bytes_read, limits.max_bytes), ("rows", rows, limits.max_rows), ("files", files, limits.max_files))
        if value > limit]
    if local_only is not None:
        if over:
            raise QueryValidationError(f"the plan is over the local engine's limits ({', '.join(over)}) and the "
                                       f"query runs only there: {local_only}; narrow the query", "sql")
        return EngineChoice(engines.in_process, f"the query runs only on the local engine: {local_only}")
    if not over:
        return EngineChoice(engines.in_process, f"plan within local limits ({bytes_read:,} bytes, {rows:,} rows, "
                                                f"{files:,} files)")
    if engines.distributed is None:
        raise EngineUnavailable(f"the plan is over the local engine's limits ({', '.join(over)}) and query-api has "
                                "no Spark Connect server configured; narrow the query or force \"engine\": \"local\"")
    return EngineChoice(engines.distributed, f"plan over local limits: {', '.join(over)}")
