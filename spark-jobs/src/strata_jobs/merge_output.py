"""Output side of a merge: column statistics, encoding with the index's writer settings, and uploads that
never leave a partial file under a final name."""

from __future__ import annotations

import dataclasses
import posixpath
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from strata_jobs.merge_columns import dictionary_codes
from strata_shared.arrow_numpy import to_arrow
from strata_shared.domain.column_stats import ColumnStats, compute_column_stats
from strata_shared.domain.index_config import ParquetConfig
from strata_shared.domain.split import SplitMetadata
from strata_shared.object_requests import MeteredFileSystem
from strata_shared.splitfile.writer import encode_split

_FILESYSTEMS: dict[tuple[str, str, str], MeteredFileSystem] = {}
_FS_LOCK = threading.Lock()


def filesystem_for(uri: str) -> tuple[MeteredFileSystem, str]:
    """pyarrow filesystem (metered: its requests count into the worker's open meter) and path of a URI (file://,
    s3://, or a plain local path). An S3 filesystem object is built once per bucket and options and reused:
    building one per file costs a round of configuration."""
    parsed = urlparse(uri)
    if not parsed.scheme:
        return MeteredFileSystem(pafs.LocalFileSystem()), uri
    if parsed.scheme != "s3":
        fs, path = pafs.FileSystem.from_uri(uri)
        return MeteredFileSystem(fs), path
    cache_key = (parsed.scheme, parsed.netloc, parsed.query)
    with _FS_LOCK:
        fs = _FILESYSTEMS.get(cache_key)
    if fs is not None:
        return fs, parsed.netloc + unquote(parsed.path)
    inner, path = pafs.FileSystem.from_uri(uri)
    fs = MeteredFileSystem(inner)
    with _FS_LOCK:
        _FILESYSTEMS[cache_key] = fs
    return fs, path


def _used_values(column: pa.ChunkedArray) -> pa.Array:
    """The distinct-or-repeated values a dictionary column actually references (never an unused entry)."""
    parts = []
    for chunk in column.chunks:
        if len(chunk) == 0:
            continue
        codes = dictionary_codes(chunk)
        used = np.zeros(len(chunk.dictionary) + 1, dtype=bool)
        used[codes] = True
        parts.append(chunk.dictionary.filter(to_arrow(used[:-1])))
    if not parts:
        return pa.nulls(0, column.type.value_type)
    return pa.concat_arrays(parts).drop_null()


def output_column_stats(table: pa.Table, regex_columns: frozenset[str],
                        pool: Executor | None = None) -> dict[str, ColumnStats]:
    """compute_column_stats of `table`, on dictionary columns too (min_max has no dictionary kernel): those
    are computed on the values their rows use, with the column's real null count. Columns in parallel on
    `pool` when given."""
    names = table.column_names
    if pool is None:
        found = [_one_column_stats(name, table.column(name), regex_columns) for name in names]
    else:
        found = list(pool.map(lambda n: _one_column_stats(n, table.column(n), regex_columns), names))
    return {name: stats for name, stats in zip(names, found, strict=True) if stats is not None}


def _one_column_stats(name: str, column: pa.ChunkedArray, regex_columns: frozenset[str]
                      ) -> ColumnStats | None:
    if pa.types.is_dictionary(column.type):
        proxy = _used_values(column)
        if column.null_count:
            proxy = pa.concat_arrays([proxy, pa.nulls(1, proxy.type)])
        found = compute_column_stats(pa.table({name: proxy}), regex_columns).get(name)
        return None if found is None else dataclasses.replace(found, null_count=column.null_count)
    return compute_column_stats(pa.table({name: column}), regex_columns).get(name)


def time_range(stats: dict[str, ColumnStats], timestamp_field: str, arrow_type: pa.DataType | None
               ) -> tuple[int | None, int | None]:
    """Inclusive epoch-second bounds of the timestamp column; None when it is absent or all null."""
    found = stats.get(timestamp_field)
    if found is None or found.value_type == "null" or found.min_value is None:
        return None, None
    low, high = int(found.min_value), int(found.max_value)
    if arrow_type is not None and pa.types.is_timestamp(arrow_type):
        # compute_column_stats reports timestamps in microseconds; floor to seconds like ingestion does.
        return low // 1_000_000, high // 1_000_000
    return low, high


def encode(table: pa.Table, metadata: SplitMetadata | Callable[[], SplitMetadata], settings: ParquetConfig
           ) -> tuple[bytes, pq.FileMetaData]:
    return encode_split(table, metadata, settings)


def upload(uri: str, data: bytes) -> None:
    """Write under a unique temporary name, then move: a retried or duplicated task never leaves a partial
    file under the final name, and two attempts never share a temporary."""
    fs, path = filesystem_for(uri)
    parent = posixpath.dirname(path)
    if parent:
        fs.create_dir(parent, recursive=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        with fs.open_output_stream(tmp) as out:
            out.write(data)
        fs.move(tmp, path)
    except BaseException:
        _delete_path(fs, tmp)
        raise


def delete(uri: str) -> None:
    fs, path = filesystem_for(uri)
    _delete_path(fs, path)


def _delete_path(fs: MeteredFileSystem, path: str) -> None:
    try:
        fs.delete_file(path)
    except (FileNotFoundError, OSError):
        pass
