"""Checking a split file written elsewhere against its index, from the Parquet footer (and, only when the footer
has no timestamp statistics, the timestamp column)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pyarrow.compute as pc
import pyarrow.parquet as pq

from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.fields import FieldType, field_type_of
from strata_core.domain.index_config import IndexSettings
from strata_core.domain.ingest_batch import timestamp_seconds
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import SplitMetadata, SplitState, read_kv_metadata
from strata_core.domain.windows import NULL_TIMESTAMP_WINDOW_START, validate_window_duration, window_start
from strata_core.splitfile.footer import footer_column_stats
from strata_core.splitfile.writer import row_group_spans
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


def inspect_split(item: SplitToRegister, index: IndexIdentity, storage: ObjectStore) -> SplitMetadata:
    """The metadata the split will be registered with; SplitRejected names the field that fails a check."""
    try:
        uri = storage.canonical_uri(item.uri)
    except PathOutsideRoot as exc:
        raise SplitRejected("uri", str(exc)) from exc
    try:
        size_bytes = storage.size(uri)
    except FileNotFoundError:
        raise SplitRejected("uri", f"file {item.uri!r} does not exist") from None
    try:
        with storage.open_input(uri) as handle:
            footer = pq.read_metadata(handle)
    except Exception as exc:  # noqa: BLE001 - any unreadable footer is the caller's bad file
        raise SplitRejected("uri", f"file {item.uri!r} is not a readable parquet file: {exc}") from exc

    if footer.num_rows != item.num_rows:
        raise SplitRejected("num_rows", f"footer has {footer.num_rows} rows, request says {item.num_rows}")

    kv = read_kv_metadata(footer.metadata)
    if kv.get("split_id") and kv["split_id"] != item.split_id:
        raise SplitRejected("split_id", f"file says it is split {kv['split_id']}, request says {item.split_id}")

    arrow_schema = footer.schema.to_arrow_schema()
    declared = index.settings.field_types()
    for field in arrow_schema:
        expected = declared.get(field.name)
        if expected is None:
            raise SplitRejected("uri", f"column {field.name!r} is not declared in the index")
        if field_type_of(field.type) is not expected:
            raise SplitRejected("uri", f"column {field.name!r} has type {field.type}, the index declares {expected}")

    duration = int(kv.get("window_duration_secs") or index.settings.window_duration_secs)
    try:
        validate_window_duration(duration)
    except ValueError as exc:
        raise SplitRejected("uri", str(exc)) from exc

    sort_schema = _sort_schema(item, kv)
    ts_field = index.settings.timestamp_field
    stats = footer_column_stats(footer, arrow_schema)
    low, high = _time_bounds(storage, uri, ts_field, declared.get(ts_field), stats)
    start = _check_one_window(low, high, duration)
    for claimed, source in ((item.window_start, "window_start"), (kv.get("window_start") or None, "uri")):
        if claimed is not None and int(claimed) != start:
            raise SplitRejected(source, f"file rows lie in window {start}, but {int(claimed)} was claimed")

    regexes = _kv_regexes(kv)
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
        num_rows=footer.num_rows,
        uri=uri,
        size_bytes=size_bytes,
        row_groups=row_group_spans(footer),
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
    import json

    try:
        raw = json.loads(kv.get("column_stats") or "{}")
        return {name: v["regex"] for name, v in raw.items() if isinstance(v, dict) and v.get("regex")}
    except (ValueError, TypeError):
        return {}
