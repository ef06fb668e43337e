"""A query the service has started: its result stream and what a door reports of it (headers, a summary at the
end). The door sends the stream inside `serving()`, which tells the service how the sending ended."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from opentelemetry import trace

from strata_core.object_requests import Meter, ObjectRequests
from strata_query.execution.engine import Engine
from strata_query.execution.result_stream import ResultStream
from strata_query.planning.plan import QueryPlan

tracer = trace.get_tracer("strata.query")
ResultCacheOutcome = Literal["hit", "miss", "bypass"]


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a finished (or cut) run reports after its last row."""

    rows: int
    truncated: bool
    row_cap: int
    engine: str
    files_scanned: int
    row_groups_scanned: int
    bytes_scanned: int
    planning_ms: float
    elapsed_ms: float
    object_requests: ObjectRequests
    result_cache: ResultCacheOutcome


class QueryRun:
    def __init__(self, *, query_id: str, plan: QueryPlan, engine: Engine, engine_reason: str, row_cap: int,
                 result_cache: ResultCacheOutcome, result: ResultStream, started: float, meter: Meter,
                 on_served: Callable[[QueryRun, bool], None]) -> None:
        self.query_id = query_id
        self.plan = plan
        self.engine = engine
        self.engine_reason = engine_reason
        self.row_cap = row_cap
        # `hit`: answered from the result cache; `miss`: run now; `bypass`: run now, the caller asked for it.
        self.result_cache = result_cache
        self.result = result
        self._started = started
        # The run's object-store requests: planning's, then the engine's as it reads.
        self.meter = meter
        self._on_served = on_served

    def summary(self) -> RunSummary:
        plan = self.plan
        return RunSummary(
            rows=self.result.rows, truncated=self.result.truncated, row_cap=self.row_cap, engine=self.engine.name,
            files_scanned=plan.total_files, row_groups_scanned=plan.total_row_groups,
            bytes_scanned=plan.total_bytes, planning_ms=plan.planning_ms,
            elapsed_ms=round((time.perf_counter() - self._started) * 1000, 3),
            object_requests=self.meter.snapshot(), result_cache=self.result_cache)

    def abandon(self) -> None:
        """The door gives the result up unsent (a Flight SQL ticket never redeemed, or cancelled before it was):
        the run is over, as a send that failed."""
        self._on_served(self, False)

    @contextmanager
    def serving(self) -> Iterator[ResultStream]:
        """Send the result inside this: on leaving, the run is over, sent whole or not (an error, a client gone).
        Safe on any thread: a streamed body is sent from worker threads."""
        # Not attached as the current span: the sending may cross threads and contexts.
        span = tracer.start_span("serialize_result", attributes={"strata.engine": self.engine.name,
                                                                  "strata.result_cache": self.result_cache})
        sent = False
        try:
            yield self.result
            sent = True
        finally:
            self._on_served(self, sent)
            span.set_attribute("strata.rows", self.result.rows)
            for kind, count in self.meter.snapshot().as_dict().items():
                span.set_attribute(f"strata.object_store.{kind}", count)
            span.end()
