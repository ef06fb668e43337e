"""Executing a planned query on Spark through Spark Connect: the shaped scan (`strata_jobs.pruned_scan`) as a
temporary view, the query's own SQL on top of it, tagged so it can be interrupted, and its result streamed batch
by batch as Spark Connect sends it (never collected whole). The executors' object-store requests arrive with the
end of the result and count into the query's meter."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from itertools import chain

import pyarrow as pa

from strata_core.errors import StrataError
from strata_core.object_requests import current_meter
from strata_frame.spark.errors import query_error_cause, spark_problem
from strata_frame.spark.session import SparkSessionFactory
from strata_jobs.pruned_scan import requests_of, scan_frame
from strata_query.execution.local_query import QueryFailed
from strata_query.execution.result_stream import ResultStream
from strata_query.execution.scan_request import ScanRequest

log = logging.getLogger("strata.query")


class SparkEngine:
    """Spark through Spark Connect (implements `engine.Engine`)."""

    name = "spark"
    dialect = "spark"

    def __init__(self, spark: SparkSessionFactory) -> None:
        self.spark = spark

    def open(self, scan: ScanRequest) -> ResultStream:
        return open_spark_query(self.spark, scan)

    def interrupt(self, query_id: str) -> bool:
        return bool(interrupt_spark_query(self.spark, query_id))

    def problem(self, exc: Exception) -> StrataError | None:
        """422 `query-failed` when Spark refused the query's data or SQL (an overflow, a bad cast: what the local
        engine answers the same way), 503 when Spark Connect is unreachable, 502 for any other failed job; None
        for a failure not from Spark."""
        cause = query_error_cause(exc)
        if cause is not None:
            log.info("query refused by spark: %s", exc)
            return QueryFailed(cause)
        return spark_problem(exc)


def open_spark_query(spark: SparkSessionFactory, request: ScanRequest) -> ResultStream:
    """Blocking (call from a worker thread): starts the query and returns its result stream once the first batch
    has arrived, so a failure to run is raised here, before any response is sent.

    A server that restarted since the session was opened has forgotten it (and its job bundle): the client then
    reports the session stopped, and the query starts once more on a new session, which ships the bundle again.
    A query only reads, so starting it twice is safe.
    """
    spark.require_reachable()
    session = spark.query_session()
    try:
        return _open_on(session, request)
    except Exception:
        if not session.is_stopped:
            raise
        log.info("spark session of query %s was closed by the server; retrying on a new session", request.query_id)
    return _open_on(spark.query_session(), request)


def _open_on(session, request: ScanRequest) -> ResultStream:
    # Imported here, not with the module: pyspark's Connect client brings pandas, ~2 s of CPU that a query-api
    # process pays at start (every replica, every rolling restart) before it has a query for Spark.
    from pyspark.sql.connect.observation import Observation
    from pyspark.sql.pandas.types import to_arrow_schema

    # Opened on a thread that copied the query's context; the rest of the stream is read on others.
    meter = current_meter()
    requests_name = f"strata_scan_requests_{request.query_id.lower()}"
    requests = Observation(requests_name)
    frame = scan_frame(session, request.tasks, request.columns, request.scan_delay_secs, requests)
    if request.extra_filter:
        frame = frame.where(request.extra_filter)
    frame.createOrReplaceTempView(request.view)
    finished = False

    def close() -> None:
        if not finished:
            # The client went away or the cap was reached: stop the rest of the Spark work.
            session.interruptTag(request.tag)
        try:
            session.catalog.dropTempView(request.view)
        except Exception:  # noqa: BLE001 - a view left behind is harmless and per session
            log.debug("dropping view %s failed", request.view)

    try:
        result = session.sql(request.sql)
        schema = to_arrow_schema(result.schema, error_on_duplicated_field_names_in_struct=True)
        # Tags are per thread and sent with the request, which the first next() sends.
        session.addTag(request.tag)
        try:
            # DataFrame.toArrow() collects every batch first; the client's iterator yields them as they arrive.
            # The scan's observation is under the view, not on the SQL's own plan: the client fills it in only
            # when handed it.
            observations = {**result._plan.observations, requests_name: requests}
            tables = session.client.to_table_as_iterator(result._plan.to_proto(session.client), observations)
            batches = _batches(tables, schema)
            first = next(batches, None)
        finally:
            session.removeTag(request.tag)
    except BaseException:
        finished = True
        close()
        raise

    def rest() -> Iterator[pa.RecordBatch]:
        nonlocal finished
        yield from batches
        finished = True
        if meter is not None and request.tasks:
            meter.add_requests(requests_of(requests.get))

    return ResultStream(schema, chain([] if first is None else [first], rest()), close, request.row_cap)


def _batches(tables, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for item in tables:
        if isinstance(item, pa.Table):
            yield from item.cast(schema).to_batches()


def interrupt_spark_query(spark: SparkSessionFactory, query_id: str) -> list[str]:
    """The ids of the operations interrupted (none when the query has not started one yet)."""
    return spark.session().interruptTag(f"strata-query-{query_id}")
