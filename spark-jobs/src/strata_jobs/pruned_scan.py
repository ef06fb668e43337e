"""The shaped scan, run inside Spark: each task reads exactly the row groups and columns the planner kept for
its files (pyarrow, one Parquet footer per file), and yields Arrow batches in the index's schema. The rest of the
SQL (the full WHERE as the residual filter, grouping, ordering, limit) runs in Spark on top of it.

A file written before a column existed yields nulls for it (MC-4's union of columns, at read time).

Each Spark task counts its object-store requests (`strata_core.object_requests`) and hands them to the driver
in the scan itself: one extra row per task whose request columns are set and whose data columns are null. An
observation on the scan sums those rows and the rows are dropped before any SQL sees them; Spark Connect sends the
sums with the end of the result (`requests_of`). A result the caller stops reading early (a LIMIT reached, a
cancel) reports no counts from Spark.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.arrow_numpy import to_arrow
from strata_core.domain.fields import FieldType
from strata_core.object_requests import Meter, ObjectRequests, counting_into
from strata_core.query.predicate import Predicate
from strata_core.query.predicate_json import predicate_from_json
from strata_core.query.row_filter import matching_rows
from strata_jobs.merge_output import filesystem_for

# The request columns of the scan's per-task counts row, dropped before the query's SQL.
REQUEST_COLUMNS = {f"__strata_requests_{name}": name for name in ObjectRequests().as_dict()}


@dataclass(frozen=True, slots=True)
class ScanTask:
    uri: str
    row_groups: list[int]
    # Columns that are split metadata rather than file data (partition_id), one value for the whole file.
    constants: dict[str, str] | None = None
    # Deletes in force on the file (accepted, not yet rewritten): the rows where this predicate (JSON,
    # `strata_core.query.predicate_json`) is TRUE are hidden.
    drop: str | None = None


def spark_type(field_type: FieldType) -> str:
    """Spark SQL type of a field: u64 becomes decimal(20,0), the only Spark type that holds all of it."""
    return {
        FieldType.STRING: "string", FieldType.I64: "bigint", FieldType.U64: "decimal(20,0)",
        FieldType.F64: "double", FieldType.BOOL: "boolean", FieldType.TIMESTAMP: "timestamp",
        FieldType.STRING_LIST: "array<string>",
    }[field_type]


def scan_arrow_schema(columns: list[tuple[str, FieldType]]) -> pa.Schema:
    def arrow_type(t: FieldType) -> pa.DataType:
        return pa.decimal128(20, 0) if t is FieldType.U64 else t.arrow_type
    return pa.schema([pa.field(name, arrow_type(t)) for name, t in columns])


def scan_ddl(columns: list[tuple[str, FieldType]]) -> str:
    return ", ".join(f"`{name}` {spark_type(t)}" for name, t in columns)


def shape_row_group(table: pa.Table, task: ScanTask, schema: pa.Schema) -> pa.Table:
    """One row group's columns in the scan's schema: the rows pending deletes match hidden, split constants
    filled in, missing columns as nulls, types cast to the schema's (u64 to decimal). Both engines read through
    this, so they see the same rows."""
    if task.drop is not None:
        matched = hidden_rows(task, table)
        if matched.any():
            table = table.filter(to_arrow(~matched))
    arrays = []
    for field in schema:
        if task.constants and field.name in task.constants:
            arrays.append(pa.array([task.constants[field.name]] * table.num_rows, field.type))
        elif field.name in table.column_names:
            arrays.append(table.column(field.name).cast(field.type))
        else:
            arrays.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def hidden_rows(task: ScanTask, table: pa.Table) -> np.ndarray:
    """A boolean per row of one of the task's row groups: True where a delete in force on its file matches it
    (the task has a `drop`). What both engines hide, and what the local engine's masked tier keeps hidden."""
    return matching_rows(drop_predicate(task.drop), table, task.constants)


@functools.lru_cache(maxsize=256)
def drop_predicate(text: str) -> Predicate:
    """A task's `drop`, parsed once per process."""
    return predicate_from_json(text)


def read_task(task: ScanTask, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    fs, path = filesystem_for(task.uri)
    with fs.open_input_file(path) as source:
        parquet = pq.ParquetFile(source)
        present = set(parquet.schema_arrow.names)
        wanted = [name for name in schema.names if name in present]
        for group in task.row_groups:
            table = parquet.read_row_group(group, columns=wanted)
            yield from shape_row_group(table, task, schema).to_batches(max_chunksize=65_536)


def scan_worker(schema: pa.Schema, delay_secs: float = 0.0
                ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The Python worker of the scan: the tasks' rows in `counted_schema(schema)`, then one row of the requests
    they made. The closure names only this module's functions, so an executor without the job bundle fails
    naming `strata_jobs`, the package to ship."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if delay_secs:
            time.sleep(delay_secs)
        yield from read_counted(batches, schema)
    return run


def read_counted(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The scan tasks of `batches` (JSON specs in their `task` column) read, each row group's batches with null
    request columns, then the one row of what they cost the object store."""
    counted = counted_schema(schema)
    meter = Meter()
    for batch in batches:
        for spec in batch.column("task").to_pylist():
            reading = read_task(ScanTask(**json.loads(spec)), schema)
            while True:
                # Counted into this task's meter only while reading: the rows yielded are Spark's.
                with counting_into(meter):
                    shaped = next(reading, None)
                if shaped is None:
                    break
                nulls = [pa.nulls(shaped.num_rows, pa.int64())] * len(REQUEST_COLUMNS)
                yield pa.RecordBatch.from_arrays(shaped.columns + nulls, schema=counted)
    requests = meter.snapshot().as_dict()
    yield pa.RecordBatch.from_arrays(
        [pa.nulls(1, field.type) for field in schema] + [pa.array([requests[name]], pa.int64())
                                                         for name in REQUEST_COLUMNS.values()],
        schema=counted)


def counted_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema(list(schema) + [pa.field(column, pa.int64()) for column in REQUEST_COLUMNS])


def requests_of(observed: dict[str, int | None]) -> ObjectRequests:
    """The scan's requests from its observation's values (None where no task reported)."""
    return ObjectRequests.from_dict({name: observed.get(name) or 0 for name in REQUEST_COLUMNS.values()})


def scan_frame(spark, tasks: list[ScanTask], columns: list[tuple[str, FieldType]], delay_secs: float = 0.0,
               requests=None):
    """A DataFrame over the shaped scan: one Spark task per file. An empty plan is an empty frame of the
    schema, so the SQL on top still runs (and answers e.g. count(*) = 0). `requests`, an observation (what
    `DataFrame.observe` takes), receives the tasks' object-store requests summed, keyed as `requests_of` reads
    them. `delay_secs` is fault injection for tests: each task waits that long before reading."""
    # Strata drives Spark only through Spark Connect; the generic module would look for a classic session.
    from pyspark.sql.connect import functions as F

    schema = scan_arrow_schema(columns)
    ddl = scan_ddl(columns)
    if not tasks:
        return spark.createDataFrame([], ddl)
    specs = [(i, json.dumps(asdict(t))) for i, t in enumerate(tasks)]
    frame = spark.createDataFrame(specs, "task_id int, task string")
    counted_ddl = ddl + "".join(f", `{column}` bigint" for column in REQUEST_COLUMNS)
    frame = frame.repartitionByRange(len(specs), "task_id").mapInArrow(scan_worker(schema, delay_secs), counted_ddl)
    if requests is not None:
        frame = frame.observe(requests, *(F.sum(column).alias(name) for column, name in REQUEST_COLUMNS.items()))
    marker = next(iter(REQUEST_COLUMNS))
    return frame.where(F.col(marker).isNull()).select(*(F.col(f"`{name}`") for name, _ in columns))
