"""The RAM tier: decoded column chunks of hot files kept as Arrow, so repeated dashboard queries skip reading
and decoding Parquet. Split files never change once written, so an entry keyed by (file, row group, column) is
never stale; the bound is on decoded bytes, the least recently used chunks leaving first.

String columns are kept dictionary-encoded, as the files store them: smaller in memory, and DuckDB filters and
groups a dictionary column in about half the time of the same strings decoded (docs/benchmarks.md, "Query
engines"), a cost every query over the chunk would pay again."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from strata_query.planning.caches import ByteLru, FooterCache
from strata_shared.storage import ObjectStore


class HotTier:
    def __init__(self, storage: ObjectStore, footers: FooterCache, capacity_bytes: int) -> None:
        self.storage = storage
        self.footers = footers
        self.lru = ByteLru(capacity_bytes)

    def read_row_group(self, uri: str, group: int, columns: list[str]) -> pa.Table:
        """The row group's `columns` that the file has, strings as dictionaries (a column added to the index later
        is absent from older files; the caller fills it with nulls), from memory where cached, else from the file,
        then cached."""
        footer = self.footers.get(uri)
        file_schema = footer.schema.to_arrow_schema()
        present = set(file_schema.names)
        wanted = [c for c in columns if c in present]
        found: dict[str, pa.ChunkedArray] = {}
        missing = []
        for column in wanted:
            chunk = self.lru.get((uri, group, column))
            if chunk is None:
                missing.append(column)
            else:
                found[column] = chunk
        if missing or not wanted:
            # With no column to read (only split constants or columns added later), this reads the row count.
            with self.storage.open_input(uri) as source:
                strings = [c for c in missing if pa.types.is_string(file_schema.field(c).type)]
                read = pq.ParquetFile(source, metadata=footer, read_dictionary=strings).read_row_group(
                    group, columns=missing)
            if not wanted:
                return read
            for column in missing:
                chunk = read.column(column)
                found[column] = chunk
                self.lru.put((uri, group, column), chunk, max(1, chunk.nbytes))
        return pa.table({column: found[column] for column in wanted})
