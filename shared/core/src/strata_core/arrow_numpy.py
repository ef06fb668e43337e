"""Zero-copy moves between Arrow arrays and numpy, through buffers.

pyarrow's own conversions (pa.array, pa.scalar, pc.fill_null with a Python value, to_numpy on some types)
import pandas on first use: about a second in a fresh Spark Python worker, paid by every task of a new worker.
The merge kernel (strata_jobs) and the sort keys (strata_core.domain.sort_key) go through these helpers
instead, so a merge never imports pandas.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def to_arrow(values: np.ndarray, arrow_type: pa.DataType | None = None, valid: np.ndarray | None = None
             ) -> pa.Array:
    """An Arrow array over a numpy array (zero-copy for the values), null where `valid` is False."""
    values = np.ascontiguousarray(values)
    if arrow_type is None:
        arrow_type = pa.from_numpy_dtype(values.dtype)
    length = len(values)
    validity = None
    null_count = 0
    if valid is not None:
        null_count = length - int(np.count_nonzero(valid))
        if null_count:
            validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if values.dtype == np.dtype(bool):
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
    else:
        data = pa.py_buffer(values)
    return pa.Array.from_buffers(arrow_type, length, [validity, data], null_count=null_count)


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    first = offset // 8
    last = (offset + length + 7) // 8
    raw = np.frombuffer(buffer, dtype=np.uint8, count=last)[first:]
    return np.unpackbits(raw, bitorder="little")[offset - 8 * first:offset - 8 * first + length].view(bool)


def validity(array: pa.Array) -> np.ndarray | None:
    """True where the slot holds a value; None when no slot is null."""
    if array.null_count == 0:
        return None
    if pa.types.is_null(array.type):
        return np.zeros(len(array), dtype=bool)
    buffer = array.buffers()[0]
    if buffer is None:  # e.g. a dictionary array whose nulls live in the dictionary only
        return np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return _bits(buffer, array.offset, len(array))


def primitive_values(array: pa.Array, dtype: np.dtype) -> np.ndarray:
    """The values buffer of a fixed-width array as numpy (a read-only view; garbage under nulls)."""
    if dtype == np.dtype(bool):
        return _bits(array.buffers()[1], array.offset, len(array))
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=array.offset + len(array))[array.offset:]


def int_values(array: pa.Array, null_as: int) -> np.ndarray:
    """An integer array's values as int64, `null_as` where null."""
    width = array.type.bit_width // 8
    kind = "i" if pa.types.is_signed_integer(array.type) else "u"
    values = primitive_values(array, np.dtype(f"<{kind}{width}")).astype(np.int64)
    valid = validity(array)
    if valid is not None:
        values[~valid] = null_as
    return values


def numpy_dtype(arrow_type: pa.DataType) -> np.dtype | None:
    """The numpy dtype holding this Arrow type's fixed-width values, or None when it is not fixed-width."""
    if pa.types.is_boolean(arrow_type):
        return np.dtype(bool)
    if pa.types.is_floating(arrow_type):
        return np.dtype(f"<f{arrow_type.bit_width // 8}")
    if pa.types.is_integer(arrow_type):
        kind = "i" if pa.types.is_signed_integer(arrow_type) else "u"
        return np.dtype(f"<{kind}{arrow_type.bit_width // 8}")
    temporal = pa.types.is_temporal(arrow_type) and not pa.types.is_interval(arrow_type)
    if temporal and arrow_type.bit_width in (32, 64):
        return np.dtype(f"<i{arrow_type.bit_width // 8}")
    return None
