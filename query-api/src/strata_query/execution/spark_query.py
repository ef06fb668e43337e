"""Executing a planned query on Spark through Spark Connect: the shaped scan (`strata_jobs.pruned_scan`) as a
temporary view, the query's own SQL (transpiled to Spark SQL) on top of it, tagged so it can be interrupted."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pyarrow as pa

from strata_jobs.pruned_scan import ScanTask, scan_frame
from strata_shared.domain.fields import FieldType
from strata_shared.spark.session import SparkSessionFactory

log = logging.getLogger("strata.query")


@dataclass(frozen=True, slots=True)
class ScanRequest:
    query_id: str
    tasks: list[ScanTask]
    columns: list[tuple[str, FieldType]]
    # Spark SQL over the view name: the user's query, its WHERE clause as the residual filter.
    sql_template: str
    # A filter the planner adds (the default lookback), as a Spark SQL condition over the view's columns.
    extra_filter: str | None = None
    # Fault injection for tests: scan tasks wait this long, so a query can be caught running.
    scan_delay_secs: float = 0.0

    @property
    def tag(self) -> str:
        return f"strata-query-{self.query_id}"


def run_query(spark: SparkSessionFactory, request: ScanRequest) -> pa.Table:
    """Blocking: runs the query and returns its result as Arrow (call from a worker thread).

    A server that restarted since the session was opened has forgotten it (and its job bundle): the client then
    reports the session stopped, and the query runs once more on a new session, which ships the bundle again.
    A query only reads, so running it twice is safe.
    """
    spark.require_reachable()
    session = spark.session()
    try:
        return _run_on(session, request)
    except Exception:
        if not session.is_stopped:
            raise
        log.info("spark session of query %s was closed by the server; retrying on a new session", request.query_id)
    return _run_on(spark.session(), request)


def _run_on(session, request: ScanRequest) -> pa.Table:
    view = f"strata_scan_{request.query_id.lower()}"
    frame = scan_frame(session, request.tasks, request.columns, request.scan_delay_secs)
    if request.extra_filter:
        frame = frame.where(request.extra_filter)
    frame.createOrReplaceTempView(view)
    session.addTag(request.tag)
    try:
        return session.sql(request.sql_template.replace("{view}", view)).toArrow()
    finally:
        session.removeTag(request.tag)
        try:
            session.catalog.dropTempView(view)
        except Exception:  # noqa: BLE001 - a view left behind is harmless and per session
            log.debug("dropping view %s failed", view)


def interrupt_query(spark: SparkSessionFactory, query_id: str) -> None:
    spark.session().interruptTag(f"strata-query-{query_id}")
