"""Writing one split's table as Parquet bytes, with the index's writer settings and the split's kv metadata."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.domain.index_config import ParquetConfig
from strata_core.domain.split import RowGroupSpan, SplitMetadata
from strata_core.splitfile.footer import footer_stats_and_spans


def split_writer_options(schema: pa.Schema, settings: ParquetConfig) -> dict[str, Any]:
    """Keyword arguments of `pq.ParquetWriter` (and `pq.write_table`) for a split file of `schema`: the one
    definition of how Strata encodes splits, used by ingestion and the merge (both through `encode_split`).
    The row-group size is not among them: it is `settings.row_group_size`, given to `write_table`."""
    # Floats of metrics are high-entropy: a dictionary only costs bytes and time there (measured: +21% bytes,
    # twice the write time). Everything else keeps dictionaries. BYTE_STREAM_SPLIT would save ~6% more, but Spark
    # 4.1's vectorized Parquet reader rejects that encoding, and queries scan splits with Spark.
    floats = {f.name for f in schema if pa.types.is_floating(f.type)}
    # store_schema=False: the Arrow schema blob would pin reader-side types; the Parquet schema alone describes
    # the file.
    return {
        "compression": "zstd",
        "compression_level": settings.zstd_level,
        "write_statistics": settings.write_statistics,
        "store_schema": False,
        "use_dictionary": [f.name for f in schema if f.name not in floats],
    }


def encode_split(table: pa.Table, metadata: SplitMetadata | Callable[[], SplitMetadata], settings: ParquetConfig
                 ) -> tuple[bytes, pq.FileMetaData]:
    """Parquet bytes of `table` and their footer; `metadata.kv_metadata()` is stored in the footer. `metadata` may
    be a function giving it, called once the rows are encoded: its statistics can be computed meanwhile.

    The file is built in memory so its size and row-group byte ranges are known before anything is uploaded:
    the metastore row is staged with the exact values the file will have.
    """
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, table.schema, **split_writer_options(table.schema, settings))
    try:
        writer.write_table(table, row_group_size=settings.row_group_size)
        if callable(metadata):
            metadata = metadata()
        writer.add_key_value_metadata(metadata.kv_metadata())
    finally:
        writer.close()
    data = sink.getvalue().to_pybytes()
    return data, pq.read_metadata(pa.BufferReader(data))


def row_group_spans(footer: pq.FileMetaData) -> list[RowGroupSpan]:
    """Row offsets and byte ranges of every row group: what read shaping needs to fetch one row group."""
    return footer_stats_and_spans(footer, ())[1]
