"""The shaped scan, run inside Spark: each task reads exactly the row groups and columns the planner kept for
its files (pyarrow, one Parquet footer per file), and yields Arrow batches in the index's schema. The rest of the
SQL (the full WHERE as the residual filter, grouping, ordering, limit) runs in Spark on top of it.

A file written before a column existed yields nulls for it (MC-4's union of columns, at read time).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from strata_jobs.merge_output import filesystem_for
from strata_shared.arrow_numpy import to_arrow
from strata_shared.domain.fields import FieldType
from strata_shared.query.predicate import Predicate
from strata_shared.query.predicate_json import predicate_from_json
from strata_shared.query.row_filter import matching_rows


@dataclass(frozen=True, slots=True)
class ScanTask:
    uri: str
    row_groups: list[int]
    # Columns that are split metadata rather than file data (partition_id), one value for the whole file.
    constants: dict[str, str] | None = None
    # Deletes in force on the file (accepted, not yet rewritten): the rows where this predicate (JSON,
    # `strata_shared.query.predicate_json`) is TRUE are hidden.
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
        matched = matching_rows(_drop_predicate(task.drop), table, task.constants)
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


@functools.lru_cache(maxsize=256)
def _drop_predicate(text: str) -> Predicate:
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
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if delay_secs:
            time.sleep(delay_secs)
        for batch in batches:
            for spec in batch.column("task").to_pylist():
                yield from read_task(ScanTask(**json.loads(spec)), schema)
    return run


def scan_frame(spark, tasks: list[ScanTask], columns: list[tuple[str, FieldType]], delay_secs: float = 0.0):
    """A DataFrame over the shaped scan: one Spark task per file. An empty plan is an empty frame of the
    schema, so the SQL on top still runs (and answers e.g. count(*) = 0). `delay_secs` is fault injection for
    tests: each task waits that long before reading."""
    schema = scan_arrow_schema(columns)
    ddl = scan_ddl(columns)
    if not tasks:
        return spark.createDataFrame([], ddl)
    specs = [(i, json.dumps(asdict(t))) for i, t in enumerate(tasks)]
    frame = spark.createDataFrame(specs, "task_id int, task string")
    return frame.repartitionByRange(len(specs), "task_id").mapInArrow(scan_worker(schema, delay_secs), ddl)
