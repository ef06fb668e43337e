"""The 64-bit hash of a column value, for bloom filters: XXH64 (seed 0) of the value's Parquet PLAIN encoding.

i64 and timestamp (microseconds) as 8 bytes little-endian two's complement, u64 as 8 bytes little-endian, f64 as its
8 IEEE-754 bytes little-endian with -0.0 written as 0.0 and every NaN as the one quiet NaN 0x7ff8000000000000 (so a
probe for 0.0 finds -0.0 rows, and a NaN probe finds NaN rows whatever their payload bits), bool as one byte 0 or 1,
a string as its UTF-8 bytes without Parquet's length prefix, and a string_list as each of its elements. Values are
hashed in their declared Strata type whatever integer width the file stores them in, so the hash of a value never
depends on the writer.

`arrow_hashes` (the build side) and `probe_hash` (the query side) must agree on every value; tests check that.
"""

from __future__ import annotations

import math
import struct
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from strata_core.artifacts.xxh64 import xxh64_bytes, xxh64_offsets, xxh64_u64
from strata_core.domain.fields import FieldType

CANONICAL_NAN_BITS = 0x7FF8000000000000
_I64 = struct.Struct("<q")
_U64 = struct.Struct("<Q")
_MICROS = pa.timestamp("us", tz="UTC")
# Below this share of distinct values in a sample, a string chunk is deduplicated (one hash-table pass in Arrow)
# before hashing; above it, hashing every row is cheaper than building the hash table first.
_DEDUP_BELOW_DISTINCT_SHARE = 0.5
_SAMPLE_ROWS = 2048
_BOOL_HASHES = {False: xxh64_bytes(b"\x00"), True: xxh64_bytes(b"\x01")}


def _string_buffers(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The data buffer and the offsets (already shifted by the array's slice offset) of a string array."""
    if pa.types.is_string_view(array.type) or pa.types.is_binary_view(array.type):
        array = array.cast(pa.large_string())
    large = pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type)
    offset_type = np.dtype(np.int64 if large else np.int32)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(
        offsets_buffer, dtype=offset_type, count=len(array) + 1, offset=array.offset * offset_type.itemsize
    )
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, dtype=np.uint8)
    return data, offsets


def _valid(array: pa.Array) -> np.ndarray | None:
    """A boolean mask of the non-null slots, or None when there are no nulls."""
    if array.null_count == 0:
        return None
    return np.asarray(array.is_valid())


def _plain_string_hashes(array: pa.Array) -> np.ndarray:
    data, offsets = _string_buffers(array)
    hashes = xxh64_offsets(data, offsets)
    valid = _valid(array)
    return hashes if valid is None else hashes[valid]


def _mostly_repeated(array: pa.Array) -> bool:
    if len(array) <= _SAMPLE_ROWS:
        return True
    # Evenly spread rows: splits are sorted, so the first rows alone would look far more repetitive than the rest.
    sample = array.take(np.linspace(0, len(array) - 1, _SAMPLE_ROWS).astype(np.int64))
    return pc.count_distinct(sample).as_py() < _DEDUP_BELOW_DISTINCT_SHARE * _SAMPLE_ROWS


def _string_hashes(array: pa.Array) -> np.ndarray:
    if pa.types.is_dictionary(array.type):
        # The values of a dictionary-decoded Parquet chunk are already distinct: hash each once.
        return _plain_string_hashes(array.dictionary)
    if _mostly_repeated(array):
        array = pc.unique(array)
    return _plain_string_hashes(array)


def _float_words(values: np.ndarray) -> np.ndarray:
    """float64 values as the uint64 words that get hashed: -0.0 as 0.0, every NaN as the canonical NaN."""
    values = np.where(values == 0.0, 0.0, values)
    words = values.view(np.uint64).copy()
    words[np.isnan(values)] = CANONICAL_NAN_BITS
    return words


def arrow_hashes(array: pa.Array | pa.ChunkedArray, field_type: FieldType) -> np.ndarray:
    """Hashes of the non-null values of `array` (a column of `field_type`); each distinct value at least once,
    usually exactly once, in no particular order."""
    if isinstance(array, pa.ChunkedArray):
        parts = [arrow_hashes(chunk, field_type) for chunk in array.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    if len(array) == 0 or array.null_count == len(array):
        return np.zeros(0, dtype=np.uint64)
    if field_type is FieldType.STRING:
        return _string_hashes(array)
    if field_type is FieldType.STRING_LIST:
        return _string_hashes(pc.list_flatten(array))
    if pa.types.is_dictionary(array.type):
        array = array.dictionary
    distinct = pc.drop_null(pc.unique(array))
    if field_type is FieldType.BOOL:
        return np.array([_BOOL_HASHES[v] for v in distinct.to_pylist()], dtype=np.uint64)
    if field_type is FieldType.TIMESTAMP:
        micros = distinct.cast(pa.timestamp("us", tz=distinct.type.tz), safe=False).cast(pa.int64())
        return xxh64_u64(micros.to_numpy(zero_copy_only=False))
    if field_type is FieldType.I64:
        return xxh64_u64(distinct.cast(pa.int64()).to_numpy(zero_copy_only=False))
    if field_type is FieldType.U64:
        return xxh64_u64(distinct.cast(pa.uint64()).to_numpy(zero_copy_only=False))
    if field_type is FieldType.F64:
        return xxh64_u64(_float_words(distinct.cast(pa.float64()).to_numpy(zero_copy_only=False)))
    raise TypeError(f"no bloom hashing for field type {field_type}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def plain_bytes(value: object, field_type: FieldType) -> bytes | None:
    """The PLAIN encoding a value of the column is hashed from; None when `value` is not a value of that type
    (a probe then cannot rule anything out)."""
    if field_type in (FieldType.STRING, FieldType.STRING_LIST):
        if not isinstance(value, str):
            return None
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: no column value has them
            return None
    if field_type is FieldType.BOOL:
        return (b"\x01" if value else b"\x00") if isinstance(value, bool) else None
    if field_type is FieldType.TIMESTAMP and isinstance(value, datetime):
        if value.tzinfo is None:
            return None
        value = int(pa.scalar(value, type=_MICROS).cast(pa.int64()).as_py())
    if field_type in (FieldType.I64, FieldType.TIMESTAMP):
        return _I64.pack(value) if _is_int(value) and -(1 << 63) <= value < (1 << 63) else None
    if field_type is FieldType.U64:
        return _U64.pack(value) if _is_int(value) and 0 <= value < (1 << 64) else None
    if field_type is FieldType.F64:
        if _is_int(value):
            as_float = float(value) if abs(value) < (1 << 1024) else math.inf
            if as_float != value:
                return None
            value = as_float
        if not isinstance(value, float):
            return None
        if math.isnan(value):
            return _U64.pack(CANONICAL_NAN_BITS)
        return struct.pack("<d", 0.0 if value == 0.0 else value)
    return None


def probe_hash(value: object, field_type: FieldType) -> int | None:
    encoded = plain_bytes(value, field_type)
    return None if encoded is None else xxhash.xxh64_intdigest(encoded)
