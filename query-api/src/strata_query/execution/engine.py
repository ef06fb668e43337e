"""What query-api needs of an engine that runs planned queries: its name (as the API says it), the SQL dialect its
scans are rendered in, opening a scan with the query's SQL on top, interrupting a query, and the Strata problem
each of its failures answers with. The in-process engine (`local_query.LocalEngine`, DuckDB) and Spark
(`spark_query.SparkEngine`) implement it; `engine_choice` picks one per plan."""

from __future__ import annotations

from typing import Protocol

from strata_core.errors import StrataError
from strata_query.execution.result_stream import ResultStream
from strata_query.execution.scan_request import ScanRequest


class Engine(Protocol):
    # On the wire (the request's `engine`, the `x-strata-engine` header, summaries, metrics).
    name: str
    # The sqlglot dialect a scan's SQL and filter are rendered in for this engine.
    dialect: str

    def open(self, scan: ScanRequest) -> ResultStream:
        """Blocking (call from a worker thread): starts the query and returns its stream once the first batch is
        in, so a failure to run is raised here, before any response is sent."""
        ...

    def interrupt(self, query_id: str) -> bool:
        """Blocking: interrupts the query; False when the engine had nothing of it running (yet)."""
        ...

    def problem(self, exc: Exception) -> StrataError | None:
        """The problem a failure of this engine answers with; None when it is not the engine's (it is raised as
        it is)."""
        ...
