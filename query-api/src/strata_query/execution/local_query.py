"""Executing a planned query in query-api's own process on DuckDB: the shaped scan is an Arrow stream of exactly
the kept row groups and columns (from the RAM tier where hot), the query's SQL runs over it, and the result
streams batch by batch. Chosen over DataFusion by measurement (docs/benchmarks.md, "Query engines").

Two DuckDB databases, each query on its own cursor (DuckDB's own connection, with its own temporary views): scans
of at most `SMALL_SCAN_ROWS` rows run on a single-threaded one, the rest on one whose thread pool bounds the CPU
the larger local queries use together. A small scan runs wholly on the worker thread that opened it.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterator
from dataclasses import replace
from itertools import chain

import duckdb
import pyarrow as pa

from strata_core.config import Settings
from strata_core.domain.fields import FieldType
from strata_core.errors import StrataError
from strata_core.object_requests import Meter, counting_into, current_meter
from strata_jobs.pruned_scan import scan_arrow_schema, shape_row_group
from strata_query.execution.hot_tier import HotTier
from strata_query.execution.masked_tier import MaskedTier
from strata_query.execution.result_stream import ResultStream
from strata_query.execution.scan_request import ScanRequest
from strata_query.execution.text_rows import rows_that_may_match
from strata_query.planning.caches import StorageUnavailable

log = logging.getLogger("strata.query")
RESULT_BATCH_ROWS = 65_536
# A result of at most this many rows that the engine has finished is answered whole, not streamed.
INLINE_ROWS = 1_000
# A scan of at most this many rows is assembled before the query starts and handed to DuckDB as a table; a larger
# one streams row group by row group. Handed a stream from a Python generator, DuckDB takes the GIL back for every
# batch it pulls, from the event loop and from its own threads; handed a table, it reads Arrow memory directly,
# on both threads: 0.75-0.8x the time through query-api for scans of 130,000 to 3,000,000 rows
# (docs/benchmarks.md, "Interactive latency"). The rows are mostly the RAM tier's own arrays, so holding them at
# once costs little beyond what the tier holds.
TABLE_SCAN_MAX_ROWS = 4_000_000
# A scan of at most this many rows runs on one DuckDB thread, executed as a statement rather than built as a
# relation (which binds it twice): on such scans handing work to other threads costs more than it saves. Against
# the pool of 2 threads (the default `query_local_threads`) and a relation, it takes 0.72-0.80x the time over
# 16,384-150,000 rows, 0.77-0.89x over 300,000, and 0.98-1.27x over 1,000,000 (`bench.bench_small_scans`,
# docs/benchmarks.md "Small scans on one DuckDB thread"; with a larger pool the pool wins sooner). A statement's
# result is materialized before its first batch: here at most the scan's rows.
SMALL_SCAN_ROWS = 300_000
# DuckDB warns that a statement's Arrow output copies its result once: wanted, as said above.
warnings.filterwarnings("ignore", message="Arrow output on a DB-API result", category=UserWarning)
# The engine's working memory when built on its own (tests, benchmarks); query-api passes its setting. Nothing spills
# to disk (`temp_directory` empty): a query's disk use would be unbounded otherwise.
LOCAL_MEMORY_LIMIT_BYTES: int = Settings.model_fields["query_local_memory_limit_bytes"].default
def _locked_config(threads: int, memory_limit_bytes: int) -> dict[str, object]:
    """A database for users' SQL (validated, but the engine must not rely on it): it reaches nothing but the scans
    registered on it. No files (read_parquet, COPY, ATTACH), no extension loaded or installed on demand, and the
    configuration locked, so no statement can turn any of it back on (SET, RESET and PRAGMA fail)."""
    # In this order: DuckDB 2.0 refuses `temp_directory` placed before `enable_external_access` in the dict.
    return {"threads": threads, "enable_external_access": False, "autoload_known_extensions": False,
            "autoinstall_known_extensions": False, "memory_limit": f"{memory_limit_bytes}B", "temp_directory": "",
            "lock_configuration": True}


class QueryFailed(StrataError):
    """The query is valid but cannot be computed over this data (an overflow, a failed cast)."""

    status, slug, title = 422, "query-failed", "The query failed while running"


class QueryMemoryExceeded(StrataError):
    """422, not 503: the query's own shape (a self-join, a sort or aggregate over many distinct values) needs more
    than the limit, and asking again would fail again; a client told to retry would only repeat the blow-up."""

    status, slug, title = 422, "query-memory-exceeded", "The query needs more memory than a query may use"


class QueryInterrupted(Exception):
    """The query was interrupted (cancelled or timed out) while running."""


class LocalEngine:
    """The in-process engine (implements `engine.Engine`)."""

    name = "local"
    dialect = "duckdb"

    def __init__(self, hot: HotTier, threads: int, table_scan_max_rows: int = TABLE_SCAN_MAX_ROWS,
                 small_scan_rows: int = SMALL_SCAN_ROWS, memory_limit_bytes: int = LOCAL_MEMORY_LIMIT_BYTES) -> None:
        self.hot = hot
        self.masked = MaskedTier(hot)
        self.table_scan_max_rows = table_scan_max_rows
        self.small_scan_rows = small_scan_rows
        self.memory_limit_bytes = memory_limit_bytes
        self._db = duckdb.connect(config=_locked_config(threads, memory_limit_bytes))
        self._small_db = duckdb.connect(config=_locked_config(1, memory_limit_bytes))
        self._cursors: dict[str, tuple[duckdb.DuckDBPyConnection, threading.Event]] = {}
        self._lock = threading.Lock()

    def open(self, request: ScanRequest) -> ResultStream:
        """Blocking (call from a worker thread): starts the query and returns its stream once the first batch is
        computed, so errors are raised here, before any response is sent."""
        small = request.rows is not None and request.rows <= self.small_scan_rows
        cursor = (self._small_db if small else self._db).cursor()
        interrupted = threading.Event()
        with self._lock:
            self._cursors[request.query_id] = (cursor, interrupted)
        read_error: list[BaseException] = []
        schema = local_scan_schema(request.columns)
        batches = self._scan(request, schema, interrupted, read_error, current_meter())

        def close() -> None:
            with self._lock:
                self._cursors.pop(request.query_id, None)
            cursor.close()

        try:
            if request.rows is not None and request.rows <= self.table_scan_max_rows:
                scan = pa.Table.from_batches(list(batches), schema)
            else:
                scan = pa.RecordBatchReader.from_batches(schema, batches)
            if request.extra_filter:
                raw = f"{request.view}_raw"
                cursor.register(raw, scan)
                cursor.execute(f'CREATE TEMP VIEW "{request.view}" AS SELECT * FROM "{raw}" '
                               f"WHERE {request.extra_filter}")
            else:
                # No filter of the planner's: the scan itself is the view (a catalog write less per query).
                cursor.register(request.view, scan)
            if small:
                reader = cursor.execute(request.sql).to_arrow_reader(RESULT_BATCH_ROWS)
            else:
                reader = cursor.sql(request.sql).to_arrow_reader(RESULT_BATCH_ROWS)
            # The first batches, up to INLINE_ROWS rows: a small result (an aggregate, often in several small
            # batches) is then complete in hand, and the caller answers it at once instead of streaming it.
            batches: list[pa.RecordBatch] = []
            complete, rows = False, 0
            while rows <= INLINE_ROWS:
                if (batch := _next_batch(reader)) is None:
                    complete = True
                    break
                batches.append(batch)
                rows += batch.num_rows
        except OSError as exc:
            # Read while assembling the table, before DuckDB ran.
            close()
            raise StorageUnavailable(f"reading a split file failed: {exc}") from exc
        except duckdb.Error as exc:
            close()
            if interrupted.is_set():
                raise QueryInterrupted(f"query {request.query_id} was interrupted") from exc
            if read_error and isinstance(read_error[0], StorageUnavailable):
                raise read_error[0] from exc
            if read_error:
                raise StorageUnavailable(f"reading a split file failed: {read_error[0]}") from read_error[0]
            if isinstance(exc, duckdb.OutOfMemoryException):
                log.info("local query %s ran out of memory: %s", request.query_id, exc)
                raise QueryMemoryExceeded(
                    f"the query needs more than the {self.memory_limit_bytes / 1024**2:g} MiB of working memory "
                    "the local engine gives the queries running on it: join, sort or aggregate fewer rows (a "
                    "shorter time range, fewer groups)") from exc
            raise QueryFailed(str(exc).splitlines()[0]) from exc
        except BaseException:
            close()
            raise

        def rest() -> Iterator[pa.RecordBatch]:
            while (batch := _next_batch(reader)) is not None:
                yield batch

        return ResultStream(reader.schema, iter(batches) if complete else chain(batches, rest()), close,
                            request.row_cap, complete=complete)

    def interrupt(self, query_id: str) -> bool:
        """False when no query of that id is running here."""
        with self._lock:
            found = self._cursors.get(query_id)
        if found is None:
            return False
        cursor, interrupted = found
        interrupted.set()
        cursor.interrupt()
        return True

    def problem(self, exc: Exception) -> StrataError | None:
        """None: what this engine raises is a Strata problem already (QueryFailed, StorageUnavailable) or a
        defect."""
        return None

    def close(self) -> None:
        self._db.close()
        self._small_db.close()

    def _scan(self, request: ScanRequest, schema: pa.Schema, interrupted: threading.Event,
              errors: list[BaseException], meter: Meter | None) -> Iterator[pa.RecordBatch]:
        if request.scan_delay_secs and interrupted.wait(request.scan_delay_secs):
            raise QueryInterrupted(f"query {request.query_id} was interrupted")
        for task in request.tasks:
            data_columns = [name for name in schema.names if name not in (task.constants or {})]
            if self.masked.serves(task, data_columns):
                # Its pending deletes' rows come hidden already.
                reading = self.masked.read_row_groups(task, data_columns)
                task = replace(task, drop=None)
            else:
                reading = self.hot.read_row_groups(task.uri, task.row_groups, data_columns)
            while True:
                try:
                    # DuckDB may pull this generator from its own threads: the reads count into the query's meter.
                    with counting_into(meter):
                        table = next(reading, None)
                except (OSError, StorageUnavailable) as exc:
                    # DuckDB reports a failing Arrow stream as its own error; keep the cause to name it.
                    errors.append(exc)
                    raise
                if table is None:
                    break
                shaped = shape_row_group(table, task, schema)
                keep = rows_that_may_match(request.predicate, shaped)
                if keep is not None and not keep.all():
                    shaped = shaped.filter(pa.array(keep))
                yield from shaped.to_batches(max_chunksize=RESULT_BATCH_ROWS)


def local_scan_schema(columns: list[tuple[str, FieldType]]) -> pa.Schema:
    """The scan's schema with strings as dictionaries, as the RAM tier holds them: DuckDB reads them as its own
    dictionary vectors, results are plain strings either way."""
    schema = scan_arrow_schema(columns)
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if pa.types.is_string(f.type) else f
                      for f in schema])


def _next_batch(reader: pa.RecordBatchReader) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None
