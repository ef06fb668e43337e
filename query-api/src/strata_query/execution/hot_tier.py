"""The RAM tier: decoded column chunks of hot files kept as Arrow, so repeated dashboard queries skip reading
and decoding Parquet. Split files never change once written, so an entry keyed by (file, row group, column) is
never stale; the bound is on decoded bytes, the least recently used chunks leaving first.

String columns are kept dictionary-encoded, as the files store them: smaller in memory, and DuckDB filters and
groups a dictionary column in about half the time of the same strings decoded (docs/benchmarks.md, "Query
engines"), a cost every query over the chunk would pay again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.object_requests import current_meter
from strata_core.storage import ObjectStore
from strata_query.planning.caches import ByteLru, FooterCache
from strata_query.planning.row_group_ranges import chunk_byte_ranges, coalesced_reads, leaf_positions


def columns_in(file_schema: pa.Schema, columns: list[str]) -> list[str]:
    """Those of `columns` a file has, in order: a column added to the index later is absent from older files."""
    present = set(file_schema.names)
    return [c for c in columns if c in present]


class HotTier:
    def __init__(self, storage: ObjectStore, footers: FooterCache, capacity_bytes: int) -> None:
        self.storage = storage
        self.footers = footers
        self.lru = ByteLru(capacity_bytes)

    def cached_chunk(self, uri: str, group: int, column: str) -> pa.ChunkedArray | None:
        """One column chunk of a row group, if it is in memory."""
        return self.lru.get((uri, group, column))

    def read_row_groups(self, uri: str, groups: list[int], columns: list[str]) -> Iterator[pa.Table]:
        """Each of the file's `groups`, in order: its `columns` that the file has, strings as dictionaries (a
        column added to the index later is absent from older files; the caller fills it with nulls), from memory
        where cached, else from the file, then cached.

        The file is opened once, at the first row group not wholly in memory, and read through that one handle
        with the cached footer: one HEAD per file on S3 (Arrow's Python API opens by path only, and S3 learns the
        size from a HEAD), never one per row group.

        Its requests are counted from the footer rather than read by read: the open's HEAD, and per row group the
        ranged GETs its missing column chunks make as the reader coalesces them, the very computation EXPLAIN
        predicts with (`tests/query/test_local_engine.py` checks it against an S3 server's log)."""
        footer = self.footers.get(uri)
        file_schema = footer.schema.to_arrow_schema()
        wanted = columns_in(file_schema, columns)
        positions: dict[tuple[str, ...], list[int]] = {}
        with ExitStack() as opened:
            parquet: pq.ParquetFile | None = None
            for group in groups:
                found: dict[str, pa.ChunkedArray] = {}
                missing = []
                for column in wanted:
                    chunk = self.cached_chunk(uri, group, column)
                    if chunk is None:
                        missing.append(column)
                    else:
                        found[column] = chunk
                if not missing and wanted:
                    yield pa.table({column: found[column] for column in wanted})
                    continue
                meter = current_meter()
                if parquet is None:
                    source = opened.enter_context(self.storage.open_input_uncounted(uri))
                    if meter is not None:
                        meter.add(heads=1)
                    strings = [c for c in wanted if pa.types.is_string(file_schema.field(c).type)]
                    parquet = pq.ParquetFile(source, metadata=footer, read_dictionary=strings)
                # With no column to read (only split constants or columns added later), this reads the row count.
                read = parquet.read_row_group(group, columns=missing)
                if meter is not None:
                    leaves = positions.get(key := tuple(missing))
                    if leaves is None:
                        leaves = positions[key] = leaf_positions(footer, set(missing))
                    reads = coalesced_reads(chunk_byte_ranges(footer, group, leaves))
                    meter.add(gets=len(reads), bytes_read=sum(length for _, length in reads))
                if not wanted:
                    yield read
                    continue
                for column in missing:
                    chunk = read.column(column)
                    found[column] = chunk
                    self.lru.put((uri, group, column), chunk, max(1, chunk.nbytes))
                yield pa.table({column: found[column] for column in wanted})
