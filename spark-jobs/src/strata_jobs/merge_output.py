"""Output side of a merge, and of a delete's rewrite (`rewrite.py`), which writes its outputs the same way: the
outputs' row ranges, the staged split each becomes, column statistics, encoding with the index's writer settings,
uploads that never leave a partial file under a final name, and an output read back for verification."""

from __future__ import annotations

import dataclasses
import posixpath
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from ulid import ULID

from strata_core.arrow_numpy import to_arrow
from strata_core.domain.column_stats import ColumnStats, compute_column_stats
from strata_core.domain.index_config import ParquetConfig
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import SplitMetadata, SplitState
from strata_core.object_requests import MeteredFileSystem
from strata_core.splitfile.writer import encode_split
from strata_jobs.merge_columns import dictionary_codes, is_dict_type
from strata_jobs.merge_spec import MergeSpec

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


def plan_outputs(total_rows: int, total_bytes: int, spec: MergeSpec) -> list[tuple[int, int]]:
    """Balanced [begin, end) row ranges, each within the row and (estimated) byte targets."""
    if total_rows == 0:
        return []
    per_row = total_bytes / total_rows if total_bytes else 0.0
    cap = spec.target_split_num_rows
    if per_row > 0:
        cap = min(cap, max(1, int(spec.target_split_size_bytes // per_row)))
    count = -(-total_rows // cap)
    size = -(-total_rows // count)
    return [(b, min(b + size, total_rows)) for b in range(0, total_rows, size)]


def output_metadata(spec: MergeSpec, schema: SortSchema, table: pa.Table, column_stats: dict,
                    ts_type: pa.DataType | None) -> SplitMetadata:
    """The staged split an output table becomes, under a new id."""
    low, high = time_range(column_stats, spec.timestamp_field, ts_type)
    split_id = str(ULID())
    return SplitMetadata(
        split_id=split_id, index_uid=spec.index_uid, source_id=spec.source_id, partition_id=spec.partition_id,
        doc_mapping_uid=spec.doc_mapping_uid, sort_schema=str(schema), window_start=spec.window_start,
        window_duration_secs=spec.window_duration_secs, time_range_start=low, time_range_end=high,
        num_rows=table.num_rows, uri=f"{spec.output_uri_prefix.rstrip('/')}/{split_id}.parquet",
        column_stats=column_stats, num_merge_ops=spec.num_merge_ops, generation=spec.generation,
        root_split_ids=list(spec.root_split_ids), state=SplitState.STAGED,
    )


def encode_and_upload(table: pa.Table, metadata: SplitMetadata, spec: MergeSpec, uploaded: list[str],
                      complete: Callable[[SplitMetadata], None] | None = None):
    """`complete`, when given, fills `metadata` in once the rows are encoded (its statistics computed meanwhile)."""
    def completed() -> SplitMetadata:
        complete(metadata)
        return metadata

    started = time.perf_counter()
    data, footer = encode(table, metadata if complete is None else completed, spec.parquet)
    encoded = time.perf_counter()
    uploaded.append(metadata.uri)  # before the upload: a failed upload may still have left a file to delete
    upload(metadata.uri, data)
    done = time.perf_counter()
    return len(data), footer, {"encode": encoded - started, "upload": done - encoded}


def read_back(uri: str, union: pa.Schema) -> pa.Table:
    fs, path = filesystem_for(uri)
    strings = [f.name for f in union if is_dict_type(f.type)]
    with fs.open_input_file(path) as source:
        return pq.ParquetFile(source, read_dictionary=strings).read(use_threads=True)
