"""Cutting an ingested batch into per-window, sorted parts (docs/architecture.md, "Write path").

Pure: takes an Arrow table already conforming to the index schema and returns what to write. One stable sort by
(window, sort schema) puts every window's rows together and in order, so each part is a zero-copy slice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strata_shared.domain.sort_schema import SortSchema, sort_indices
from strata_shared.domain.windows import window_starts


@dataclass(frozen=True, slots=True)
class WindowPart:
    window_start: int
    table: pa.Table
    # Inclusive bounds in epoch seconds of the non-null timestamps; None when all are null.
    time_range_start: int | None
    time_range_end: int | None


@dataclass(frozen=True, slots=True)
class CutBatch:
    parts: list[WindowPart]
    rows_received: int
    rows_dropped_late: int
    rows_null_timestamp: int


def timestamp_seconds(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Epoch seconds (floor) of a timestamp column: i64 columns already count seconds."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_timestamp(column.type):
        micros = pc.fill_null(column.cast(pa.timestamp("us", tz=column.type.tz)).cast(pa.int64()), 0)
        secs = np.floor_divide(micros.to_numpy(zero_copy_only=False), 1_000_000)
        return pa.array(secs, type=pa.int64(), mask=pc.is_null(column).to_numpy(zero_copy_only=False))
    return column.cast(pa.int64())


def cut_batch(
    table: pa.Table,
    timestamp_field: str,
    sort_schema: SortSchema,
    window_duration_secs: int,
    late_data_acceptance_secs: int,
    now_secs: int,
) -> CutBatch:
    """Drop rows older than the late-data window, then cut the rest into sorted per-window parts."""
    rows_received = table.num_rows
    if timestamp_field in table.column_names:
        ts_secs = timestamp_seconds(table.column(timestamp_field))
    else:
        ts_secs = pa.nulls(rows_received, pa.int64())

    cutoff = now_secs - late_data_acceptance_secs
    too_late = pc.fill_null(pc.less(ts_secs, cutoff), False)
    rows_dropped_late = pc.sum(too_late).as_py() or 0
    if rows_dropped_late:
        keep = pc.invert(too_late)
        table = table.filter(keep)
        ts_secs = ts_secs.filter(keep)

    rows_null_timestamp = ts_secs.null_count
    if table.num_rows == 0:
        return CutBatch([], rows_received, rows_dropped_late, rows_null_timestamp)

    starts = window_starts(ts_secs, window_duration_secs)
    order = sort_indices(table, sort_schema, leading=starts)
    table = table.take(order)
    ts_secs = ts_secs.take(order)
    starts = starts[order.to_numpy()]

    parts: list[WindowPart] = []
    boundaries = np.flatnonzero(np.diff(starts)) + 1
    offsets = [0, *boundaries.tolist(), len(starts)]
    for begin, end in zip(offsets[:-1], offsets[1:], strict=True):
        part_ts = ts_secs.slice(begin, end - begin)
        bounds = pc.min_max(part_ts)
        parts.append(WindowPart(int(starts[begin]), table.slice(begin, end - begin),
                                bounds["min"].as_py(), bounds["max"].as_py()))
    return CutBatch(parts, rows_received, rows_dropped_late, rows_null_timestamp)
