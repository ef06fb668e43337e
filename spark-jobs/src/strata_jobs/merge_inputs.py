"""Input side of a merge: footers, the column union (MC-4) and its timestamp column checked against the spec, and
the read pipeline that turns the inputs into the merge's column form while hashing every input row (MC-1/MC-2,
input side)."""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.arrow_numpy import to_arrow
from strata_core.domain.fields import field_type_of
from strata_core.query.predicate import Predicate
from strata_core.query.row_filter import matching_rows
from strata_jobs import merge_output
from strata_jobs.merge_columns import ColumnBuilder, SourceColumn, is_dict_type
from strata_jobs.merge_spec import MergeInput, MergeSpec, MergeTypeConflict, MergeVerificationError
from strata_jobs.row_checksum import combine, table_checksum
from strata_jobs.worker_threads import worker_threads

# Threads finishing the columns (dictionary unification) once every input is read.
FINISH_THREADS = 2


@dataclass
class InputSplit:
    spec: MergeInput
    source: pa.NativeFile
    parquet: pq.ParquetFile
    schema: pa.Schema
    rows: int
    size_bytes: int


class Clock:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        self.timings[stage] = round(self.timings.get(stage, 0.0) + seconds, 4)

    def add_all(self, timings: dict[str, float]) -> None:
        for stage, seconds in timings.items():
            self.add(stage, seconds)


def open_inputs(inputs: list[MergeInput]) -> list[InputSplit]:
    """Every input's footer (and an open file to read it from later); string columns will read as
    dictionaries."""
    opened: list[InputSplit] = []
    try:
        for item in inputs:
            fs, path = merge_output.filesystem_for(item.uri)
            size = fs.get_file_info(path).size
            source = fs.open_input_file(path)
            try:
                metadata = pq.read_metadata(source)
                schema = pq.ParquetFile(source, metadata=metadata).schema_arrow
                strings = [f.name for f in schema if is_dict_type(f.type)]
                parquet = pq.ParquetFile(source, metadata=metadata, read_dictionary=strings, pre_buffer=True)
            except BaseException:
                source.close()
                raise
            opened.append(InputSplit(item, source, parquet, parquet.schema_arrow, metadata.num_rows,
                                 int(size or 0)))
    except BaseException:
        close_inputs(opened)
        raise
    return opened


def close_inputs(inputs: list[InputSplit]) -> None:
    for item in inputs:
        item.source.close()


def logical_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    found = field_type_of(arrow_type)
    return str(found) if found is not None else str(arrow_type)


def union_schema(inputs: list[tuple[str, pa.Schema]]) -> pa.Schema:
    """MC-4: every column of every input, first appearance first; MergeTypeConflict on a logical type
    conflict. A column keeps its Arrow type when every input agrees, else takes its declared type's canonical
    Arrow type."""
    seen: dict[str, tuple[str, str, pa.DataType]] = {}
    order: list[str] = []
    types: dict[str, set[pa.DataType]] = {}
    for split_id, schema in inputs:
        for field in schema:
            plain = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
            logical = logical_type(plain)
            if field.name not in seen:
                seen[field.name] = (logical, split_id, plain)
                order.append(field.name)
                types[field.name] = {plain}
            elif seen[field.name][0] != logical:
                first_logical, first_split, _ = seen[field.name]
                raise MergeTypeConflict(field.name, first_logical, first_split, logical, split_id)
            else:
                types[field.name].add(plain)
    fields = []
    for name in order:
        variants = types[name]
        if len(variants) == 1:
            out_type = next(iter(variants))
        else:
            declared = field_type_of(next(iter(variants)))
            out_type = declared.arrow_type
        if pa.types.is_large_string(out_type):
            out_type = pa.string()
        fields.append(pa.field(name, out_type, nullable=True))
    return pa.schema(fields)


def check_timestamp(union: pa.Schema, spec: MergeSpec) -> pa.DataType | None:
    if spec.timestamp_field not in union.names:
        return None
    ts_type = union.field(spec.timestamp_field).type
    if spec.timestamp_is_seconds and not pa.types.is_integer(ts_type):
        raise ValueError(f"timestamp field {spec.timestamp_field!r} is {ts_type}, not epoch seconds (i64)")
    if not spec.timestamp_is_seconds and not pa.types.is_timestamp(ts_type):
        raise ValueError(f"timestamp field {spec.timestamp_field!r} is {ts_type}, not a timestamp")
    return ts_type


def normalize(table: pa.Table, union: pa.Schema, split_id: str) -> dict[str, pa.ChunkedArray]:
    """The input's columns cast to the union's types (string columns stay dictionaries)."""
    out = {}
    for field in union:
        if field.name not in table.column_names:
            continue
        column = table.column(field.name)
        dictionary = pa.types.is_dictionary(column.type)
        current = column.type.value_type if dictionary else column.type
        if dictionary and not is_dict_type(field.type):
            column, dictionary = column.cast(current), False  # e.g. dictionary<int64> from a stored schema
        if current != field.type:
            target = pa.dictionary(column.type.index_type, field.type) if dictionary else field.type
            try:
                column = column.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise MergeTypeConflict(field.name, str(current), split_id, str(field.type),
                                        "<union> (values do not convert)") from exc
        out[field.name] = column
    return out


def read_all(inputs: list[InputSplit], union: pa.Schema, clock: Clock, stats: dict, *, inline: bool = False
             ) -> tuple[dict[str, SourceColumn], int]:
    """Every input into the merge's column form, and the inputs' row checksum, as a pipeline: a reader thread
    reads (and casts) input i+1 while a hasher thread hashes input i and this thread copies it; at most three
    inputs' tables are alive at once."""
    total = sum(i.rows for i in inputs)
    builders = {f.name: ColumnBuilder(f.name, f.type, total) for f in union}
    checksum = 0
    largest_tables = [0, 0, 0]
    hashing: deque[Future] = deque()
    with worker_threads(1, "merge-read", inline=inline) as reader, \
            worker_threads(1, "merge-hash", inline=inline) as hasher:
        pending = reader.submit(_read_one, inputs[0], union) if inputs else None
        for position, item in enumerate(inputs):
            started = time.perf_counter()
            columns, rows, nbytes, seconds = pending.result()
            clock.add("read_wait", time.perf_counter() - started)
            clock.add("read", seconds)
            if position + 1 < len(inputs):
                pending = reader.submit(_read_one, inputs[position + 1], union)
            if rows != item.rows:
                raise MergeVerificationError(f"split {item.spec.split_id}: read {rows} rows, its footer says "
                                             f"{item.rows}")
            largest_tables = sorted([*largest_tables, nbytes])[-3:]
            hashing.append(hasher.submit(_hash_input, columns, rows, union.names))
            started = time.perf_counter()
            for name, builder in builders.items():
                builder.add(columns.get(name), rows)
            del columns
            while len(hashing) > 1 or (hashing and hashing[0].done()):
                part, seconds = hashing.popleft().result()
                checksum = combine(checksum, part)
                clock.add("checksum_inputs", seconds)
            clock.add("copy_inputs", time.perf_counter() - started)
        for job in hashing:
            part, seconds = job.result()
            checksum = combine(checksum, part)
            clock.add("checksum_inputs", seconds)
    started = time.perf_counter()
    with worker_threads(FINISH_THREADS, "merge-finish", inline=inline) as pool:
        built = dict(zip(builders, pool.map(ColumnBuilder.finish, builders.values()), strict=True))
    clock.add("copy_inputs", time.perf_counter() - started)
    stats["input_tables_bytes_max3"] = sum(largest_tables)
    return built, checksum


@dataclass(frozen=True)
class RowDrop:
    """What a rewrite leaves out: the rows where `predicate` is TRUE (`strata_core.query.row_filter`), with
    the split's own columns (`partition_id`) as constants."""

    predicate: Predicate
    constants: dict[str, object]

    def matching(self, table: pa.Table) -> np.ndarray:
        return matching_rows(self.predicate, table, self.constants)

    def keep(self, table: pa.Table, matched: np.ndarray) -> pa.Table:
        """`table` without the rows `matched` marks (their order kept)."""
        return table.filter(to_arrow(~matched)) if matched.any() else table


def _read_one(item: InputSplit, union: pa.Schema):
    """Read one input and cast it to the union's types."""
    started = time.perf_counter()
    table = item.parquet.read(use_threads=True)
    columns = normalize(table, union, item.spec.split_id)
    return columns, table.num_rows, table.nbytes, time.perf_counter() - started


def _hash_input(columns: dict[str, pa.ChunkedArray], rows: int, names: list[str]) -> tuple[int, float]:
    """The row checksum of one input (MC-1/MC-2, input side); columns it lacks count as null."""
    started = time.perf_counter()
    table = pa.table(columns) if columns else pa.table({"_": pa.nulls(rows)})
    return table_checksum(table, names), time.perf_counter() - started
