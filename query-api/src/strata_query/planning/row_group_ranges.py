"""Per row group column ranges for the zone-map stage while a file's artifacts are not published yet: from the
Parquet footer's statistics (bounds that may be loose but are never wrong). A published zone map's ranges are
`strata_core.query.artifact_pruning.ranges_from_zone_map`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import pyarrow.parquet as pq

from strata_core.query.pruning import ColumnRange


def _scalar(value):
    if isinstance(value, datetime):
        # Timestamp columns are compared in integer microseconds, like the split statistics.
        return int(value.timestamp()) * 1_000_000 + value.microsecond
    if isinstance(value, bytes):
        return None
    return value


def ranges_from_footer(metadata: pq.FileMetaData, columns: set[str]) -> list[dict[str, ColumnRange]]:
    positions = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    out = []
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        ranges = {}
        for name in columns:
            i = positions.get(name)
            if i is None:
                continue
            stats = group.column(i).statistics
            if stats is None:
                continue
            null_count = stats.null_count if stats.has_null_count else None
            if stats.has_min_max:
                low, high = _scalar(stats.min), _scalar(stats.max)
                if low is None or high is None:
                    low = high = None
                ranges[name] = ColumnRange(low, high, null_count, group.num_rows)
            elif null_count is not None:
                ranges[name] = ColumnRange(None, None, null_count, group.num_rows)
        out.append(ranges)
    return out


def absent_columns(metadata: pq.FileMetaData, columns: set[str]) -> frozenset[str]:
    """Columns the file does not have at all: they read as nulls (MC-4). A column is absent only when no leaf path
    is it or lies under it: a nested column (a string list is stored as `<name>.list.element`) has no leaf of its
    own name, and taking it for absent would prune every row group where it is not null."""
    present: set[str] = set()
    for i in range(metadata.num_columns):
        path = metadata.schema.column(i).path
        # Every dotted prefix of a leaf path names a column the file has (or a group holding one).
        start = 0
        while (dot := path.find(".", start)) != -1:
            present.add(path[:dot])
            start = dot + 1
        present.add(path)
    return frozenset(c for c in columns if c not in present)


def _stored_as(path: str, columns: set[str]) -> bool:
    """Whether a Parquet leaf column holds one of `columns`: itself, or a string list's elements (Strata's one
    nested type, stored as `<name>.list.element`)."""
    return path in columns or (path.endswith(".list.element") and path[:-len(".list.element")] in columns)


def column_bytes(metadata: pq.FileMetaData, row_groups: list[int], columns: set[str]) -> int:
    """Compressed bytes of exactly these columns in these row groups: what a reader fetches."""
    positions = [i for i in range(metadata.num_columns) if _stored_as(metadata.schema.column(i).path, columns)]
    return sum(metadata.row_group(g).column(i).total_compressed_size for g in row_groups for i in positions)


def column_byte_ranges(metadata: pq.FileMetaData, group: int, columns: set[str]) -> list[tuple[int, int]]:
    """(offset, length) of each needed column chunk of a row group, dictionary page included."""
    return chunk_byte_ranges(metadata, group, leaf_positions(metadata, columns))


def leaf_positions(metadata: pq.FileMetaData, columns: set[str]) -> list[int]:
    """The positions of the Parquet leaf columns holding `columns`: what `chunk_byte_ranges` takes, found once
    per file by a caller that reads several row groups (looking the leaves up costs more than the ranges)."""
    return [i for i in range(metadata.num_columns) if _stored_as(metadata.schema.column(i).path, columns)]


def chunk_byte_ranges(metadata: pq.FileMetaData, group: int, positions: list[int]) -> list[tuple[int, int]]:
    """(offset, length) of the column chunks at these leaf positions in a row group, dictionary page included."""
    out = []
    row_group = metadata.row_group(group)
    for i in positions:
        chunk = row_group.column(i)
        start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
        out.append((start, chunk.total_compressed_size))
    return out


# Arrow's read coalescing (io::CacheOptions::LazyDefaults), which a Parquet reader with pre_buffer on (pyarrow's
# default) applies to the column chunks of each read: ranges closer than the hole limit are fetched as one, up to
# the range limit.
COALESCE_HOLE_BYTES = 8192
COALESCE_RANGE_BYTES = 32 * 1024 * 1024


def coalesced_reads(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """(offset, length) of each ranged GET a pre-buffered read of `ranges` makes: Arrow's CoalesceReadRanges."""
    ordered = sorted((offset, length) for offset, length in ranges if length > 0)
    if not ordered:
        return []
    reads = []
    start, end = ordered[0][0], ordered[0][0] + ordered[0][1]
    for offset, length in ordered[1:]:
        if offset + length <= end:
            continue
        if offset + length - start > COALESCE_RANGE_BYTES or offset - end > COALESCE_HOLE_BYTES:
            reads.append((start, end - start))
            start = offset
        end = offset + length
    reads.append((start, end - start))
    return reads
