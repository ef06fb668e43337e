"""Checking a split file written elsewhere against its index, from the Parquet footer (and, only when the footer
has no timestamp statistics, the timestamp column)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.fields import FieldType, field_type_of
from strata_core.domain.index_config import IndexSettings
from strata_core.domain.ingest_batch import timestamp_seconds
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import SplitMetadata, SplitState, read_kv_metadata
from strata_core.domain.windows import NULL_TIMESTAMP_WINDOW_START, validate_window_duration, window_start
from strata_core.splitfile.footer import (
    FOOTER_READ_BYTES,
    StatsColumn,
    footer_stats_and_spans,
    read_footer,
    stats_columns,
)
from strata_core.storage import ObjectStore, PathOutsideRoot
from strata_indexer.splits.schemas import SplitToRegister


class SplitRejected(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class IndexIdentity:
    index_uid: str
    doc_mapping_uid: str
    settings: IndexSettings


class SchemaChecks:
    """The checks of a footer's schema against the index, and the columns its statistics are read from, per
    distinct schema of a batch: the files of a batch mostly share one, so each is worked out once, not per file.
    Keyed by the Parquet schema and the Arrow schema read from it (the Arrow types can differ for one Parquet
    schema, by the footer's `ARROW:schema`)."""

    _LIMIT = 16

    def __init__(self, index: IndexIdentity) -> None:
        self.declared = index.settings.field_types()
        self._known: list[tuple[pq.ParquetSchema, pa.Schema, str | None, tuple[StatsColumn, ...]]] = []

    def of(self, footer: pq.FileMetaData, arrow_schema: pa.Schema) -> tuple[str | None, tuple[StatsColumn, ...]]:
        """(why the schema is refused or None, the statistics' columns)."""
        parquet_schema = footer.schema
        for known_parquet, known_arrow, problem, columns in self._known:
            if known_parquet.equals(parquet_schema) and known_arrow.equals(arrow_schema):
                return problem, columns
        problem = self._problem(arrow_schema)
        columns = () if problem is not None else stats_columns(footer, arrow_schema)
        if len(self._known) < self._LIMIT:
            self._known.append((parquet_schema, arrow_schema, problem, columns))
        return problem, columns

    def _problem(self, arrow_schema: pa.Schema) -> str | None:
        for field in arrow_schema:
            expected = self.declared.get(field.name)
            if expected is None:
                return f"column {field.name!r} is not declared in the index"
            if field_type_of(field.type) is not expected:
                return f"column {field.name!r} has type {field.type}, the index declares {expected}"
        return None


def inspect_split(item: SplitToRegister, index: IndexIdentity, storage: ObjectStore,
                  schemas: SchemaChecks | None = None) -> SplitMetadata:
    """The metadata the split will be registered with; SplitRejected names the field that fails a check.
    `schemas`: the batch's schema checks (a batch passes one to all its files)."""
    if schemas is None:
        schemas = SchemaChecks(index)
    try:
        located = storage.locate(item.uri)
    except PathOutsideRoot as exc:
        raise SplitRejected("uri", str(exc)) from exc
    except FileNotFoundError:
        raise SplitRejected("uri", f"file {item.uri!r} does not exist") from None
    uri = located.uri
    try:
        # A small file (a split of a few thousand rows) is read whole, as pyarrow's first read of its footer
        # would read it, and the footer parsed from memory.
        if located.size <= FOOTER_READ_BYTES:
            footer = read_footer(storage.read_located(located))
        else:
            with storage.open_located(located) as handle:
                footer = read_footer(handle)
    except Exception as exc:  # noqa: BLE001 - any unreadable footer is the caller's bad file
        raise SplitRejected("uri", f"file {item.uri!r} is not a readable parquet file: {exc}") from exc

    num_rows = footer.num_rows
    if num_rows != item.num_rows:
        raise SplitRejected("num_rows", f"footer has {num_rows} rows, request says {item.num_rows}")

    kv = read_kv_metadata(footer.metadata)
    if kv.get("split_id") and kv["split_id"] != item.split_id:
        raise SplitRejected("split_id", f"file says it is split {kv['split_id']}, request says {item.split_id}")

    arrow_schema = footer.schema.to_arrow_schema()
    problem, columns = schemas.of(footer, arrow_schema)
    if problem is not None:
        raise SplitRejected("uri", problem)

    duration = int(kv.get("window_duration_secs") or index.settings.window_duration_secs)
    try:
        validate_window_duration(duration)
    except ValueError as exc:
        raise SplitRejected("uri", str(exc)) from exc

    sort_schema = _sort_schema(item, kv)
    ts_field = index.settings.timestamp_field
    stats, spans = footer_stats_and_spans(footer, columns)
    low, high = _time_bounds(storage, uri, ts_field, schemas.declared.get(ts_field), stats)
    start = _check_one_window(low, high, duration)
    for claimed, source in ((item.window_start, "window_start"), (kv.get("window_start") or None, "uri")):
        if claimed is not None and int(claimed) != start:
            raise SplitRejected(source, f"file rows lie in window {start}, but {int(claimed)} was claimed")

    regexes = _kv_regexes(kv)
    if regexes:
        stats = {name: ColumnStats(s.name, s.value_type, s.min_value, s.max_value, s.null_count, regexes.get(name))
                 for name, s in stats.items()}
    return SplitMetadata(
        split_id=item.split_id,
        index_uid=index.index_uid,
        source_id=item.source_id,
        partition_id=item.partition_id,
        doc_mapping_uid=kv.get("doc_mapping_uid") or index.doc_mapping_uid,
        sort_schema=sort_schema,
        window_start=start,
        window_duration_secs=duration,
        time_range_start=low,
        time_range_end=high,
        num_rows=num_rows,
        uri=uri,
        size_bytes=located.size,
        row_groups=spans,
        column_stats=stats,
        num_merge_ops=int(kv.get("num_merge_ops") or 0),
        generation=int(kv.get("generation") or 0),
        root_split_ids=[item.split_id],
        state=SplitState.PUBLISHED,
    )


def _sort_schema(item: SplitToRegister, kv: dict[str, str]) -> str:
    """The writer's sort order, canonical; empty (the file is never compacted) when nobody claims one."""
    claims = [c for c in (item.sort_schema, kv.get("sort_schema")) if c]
    try:
        parsed = {_canonical_sort_schema(c) for c in claims}
    except ValueError as exc:
        raise SplitRejected("sort_schema", str(exc)) from exc
    if len(parsed) > 1:
        raise SplitRejected("sort_schema", f"request and file disagree on the sort schema: {sorted(parsed)}")
    return parsed.pop() if parsed else ""


@functools.lru_cache(maxsize=256)
def _canonical_sort_schema(claim: str) -> str:
    # The files of a batch claim one or a few orders: each is parsed once, not once per file.
    return str(SortSchema.parse(claim))


def _time_bounds(storage: ObjectStore, uri: str, ts_field: str, ts_type: FieldType | None,
                 stats: dict[str, ColumnStats]) -> tuple[int | None, int | None]:
    ts_stats = stats.get(ts_field)
    if ts_stats is not None:
        if ts_stats.value_type == "null":
            return None, None
        if ts_stats.min_value is not None and ts_stats.max_value is not None:
            if ts_type is FieldType.TIMESTAMP:
                return ts_stats.min_value // 1_000_000, ts_stats.max_value // 1_000_000
            return int(ts_stats.min_value), int(ts_stats.max_value)
    # No usable statistics: read the one column rather than trust a claim.
    with storage.open_input(uri) as handle:
        schema_names = pq.read_schema(handle).names
    if ts_field not in schema_names:
        return None, None
    with storage.open_input(uri) as handle:
        column = pq.read_table(handle, columns=[ts_field]).column(ts_field)
    secs = timestamp_seconds(column)
    bounds = pc.min_max(secs)
    return bounds["min"].as_py(), bounds["max"].as_py()


def _check_one_window(low: int | None, high: int | None, duration: int) -> int:
    """TW-1: every timestamp of the file lies in one window; all-null files belong to window 0."""
    if low is None or high is None:
        return NULL_TIMESTAMP_WINDOW_START
    start = window_start(low, duration)
    if window_start(high, duration) != start:
        raise SplitRejected("uri", f"rows span windows {start} and {window_start(high, duration)} "
                                   f"(window duration {duration}s): a split must lie in one window (TW-1)")
    return start


def _kv_regexes(kv: dict[str, str]) -> dict[str, str]:
    text = kv.get("column_stats")
    if not text:
        return {}
    # Strata's writer gives every column a "regex" entry, null unless one was built: when every "regex" in the
    # text is followed by :null (a key spelled with \u escapes aside), there is none, and parsing the statistics
    # (a third of the footer check's Python after pyarrow's) would find none.
    if "\\u" not in text and text.count('"regex"') == text.count('"regex":null'):
        return {}
    try:
        raw = json.loads(text)
        return {name: v["regex"] for name, v in raw.items() if isinstance(v, dict) and v.get("regex")}
    except (ValueError, TypeError, AttributeError):
        return {}
