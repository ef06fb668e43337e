"""An order-independent checksum of every row of a table (MC-1/MC-2 of a merge).

    row_hash(row) = splitmix64( sum over columns c of K_c * h(row[c]) )      (all arithmetic mod 2^64)
    checksum(table) = sum over rows of row_hash(row)                         (mod 2^64)

- K_c is an odd constant derived from the column *name*, so the checksum does not depend on column order and a
  value moved to another column changes it.
- h(value) is the value's bit pattern for fixed-width types (a column is hashed after it was cast to the
  merge's output type, so both sides see the same bits), a hash of the bytes for strings and binaries
  (dictionaries are hashed once and gathered by index), a position-aware hash for lists, and NULL_HASH for a
  null. A column a table lacks counts as all-null, consistently with MC-4 (missing columns become nulls in the
  output).
- The final splitmix64 per row binds a row's columns together: swapping two values of one column between rows
  changes the sum even though each column's multiset is unchanged. The sum over rows makes the order
  irrelevant.

This detects lost, duplicated and altered rows with overwhelming probability (it is not a cryptographic
digest). Cost: a few numpy passes over the rows per column, no per-row Python.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from strata_core.arrow_numpy import int_values, primitive_values, validity

U64 = np.uint64
NULL_HASH = U64(0x6A09E667F3BCC909)
_GOLDEN = U64(0x9E3779B97F4A7C15)
_M1 = U64(0xBF58476D1CE4E5B9)
_M2 = U64(0x94D049BB133111EB)
_LENGTH_SALT = U64(0xD6E8FEB86659FD93)


def splitmix64(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The splitmix64 finalizer, vectorized; `out` may be `x` itself to work in place."""
    z = np.add(x, _GOLDEN, out=out)
    z ^= z >> U64(30)
    z *= _M1
    z ^= z >> U64(27)
    z *= _M2
    z ^= z >> U64(31)
    return z


def column_constant(name: str) -> np.uint64:
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest()
    return U64(int.from_bytes(digest, "little") | 1)


def _validity(chunk: pa.Array) -> np.ndarray | None:
    return validity(chunk)


def _fixed_width_bits(chunk: pa.Array) -> np.ndarray | None:
    """The values of a fixed-width primitive chunk as uint64 bit patterns (garbage under nulls)."""
    t = chunk.type
    if pa.types.is_boolean(t):
        return primitive_values(chunk, np.dtype(bool)).astype(U64)
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)):
        return None
    width = t.bit_width // 8
    if width not in (1, 2, 4, 8):
        return None
    buffer = chunk.buffers()[1]
    kind = "f" if pa.types.is_floating(t) else ("u" if pa.types.is_unsigned_integer(t) else "i")
    if kind == "f" and width == 2:
        kind = "u"  # float16: its bit pattern is all we need
    raw = np.frombuffer(buffer, dtype=np.dtype(f"<{kind}{width}"),
                        count=chunk.offset + len(chunk))[chunk.offset:]
    if kind == "f":
        raw = raw.view(np.dtype(f"<u{width}"))
    if width == 8:
        return raw.view(U64)
    # Sign-extend signed ints so an int32 value and the same int64 value hash alike (outputs are cast anyway).
    return raw.astype(np.int64).view(U64) if kind == "i" else raw.astype(U64)


def _segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum (mod 2^64) of values[offsets[i]:offsets[i+1]] for every i; empty segments sum to 0."""
    cumulative = np.zeros(len(values) + 1, dtype=U64)
    np.cumsum(values, dtype=U64, out=cumulative[1:])
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]


def _binary_hashes(chunk: pa.Array) -> np.ndarray:
    """Per-value hash of a string/binary chunk: every byte mixed with its position, summed, mixed with the
    length."""
    t = chunk.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    buffers = chunk.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int64 if large else np.int32,
                            count=chunk.offset + len(chunk) + 1)[chunk.offset:].astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    lengths = np.diff(offsets)
    if last > first:
        data = np.frombuffer(buffers[2], dtype=np.uint8, count=last)[first:]
        starts = np.repeat(offsets[:-1] - first, lengths)
        position = np.arange(last - first, dtype=np.int64) - starts
        mixed = position.view(U64) << U64(8)
        mixed |= data
        splitmix64(mixed, out=mixed)
        sums = _segment_sums(mixed, offsets - first)
    else:
        sums = np.zeros(len(chunk), dtype=U64)
    sums += lengths.view(U64) * _LENGTH_SALT
    return splitmix64(sums, out=sums)


def _dictionary_indices(chunk: pa.DictionaryArray) -> np.ndarray:
    """Indices of a dictionary chunk (their own integer width when no slot is null), -1 where null."""
    indices = chunk.indices
    index_type = indices.type
    kind = "i" if pa.types.is_signed_integer(index_type) else "u"
    raw = primitive_values(indices, np.dtype(f"<{kind}{index_type.bit_width // 8}"))
    if chunk.null_count == 0 and kind == "i":
        return raw
    raw = raw.astype(np.int64)
    if chunk.null_count:
        raw[~validity(chunk)] = -1
    return raw


def _python_hash(value) -> int:
    return int.from_bytes(hashlib.blake2b(repr(value).encode(), digest_size=8).digest(), "little")


_ONE = U64(1)


def _identity(array: pa.Array) -> tuple:
    """Where an array's data lives: equal for slices of one dictionary object, cheap to compute."""
    return (tuple(b.address if b is not None else 0 for b in array.buffers()), array.offset, len(array))


def value_hashes(chunk: pa.Array, scale: np.uint64 = _ONE, memo: dict | None = None) -> np.ndarray:
    """scale * h(value) for every slot of one Arrow array (h = NULL_HASH where null), as a new array. `memo`
    keeps dictionary hashes between calls, for slices that share a dictionary."""
    t = chunk.type
    if len(chunk) == 0:
        return np.zeros(0, dtype=U64)
    if pa.types.is_dictionary(t):
        # Hash the dictionary once; -1 (null) picks the NULL_HASH appended at the end.
        dictionary = chunk.dictionary
        memo_key = (_identity(dictionary), int(scale))
        table = None if memo is None else memo.get(memo_key)
        if table is None:
            table = np.append(value_hashes(dictionary), NULL_HASH)
            table *= scale
            if memo is not None:
                memo[memo_key] = table
        return table[_dictionary_indices(chunk)]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        hashes = _binary_hashes(chunk)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        flat_offsets = int_values(chunk.offsets, 0)
        first = int(flat_offsets[0])
        child = chunk.values.slice(first, int(flat_offsets[-1]) - first)
        child_hashes = value_hashes(child)
        relative = flat_offsets - first
        lengths = np.diff(relative)
        position = np.arange(len(child), dtype=np.int64) - np.repeat(relative[:-1], lengths)
        child_hashes = child_hashes + position.view(U64) * _GOLDEN
        splitmix64(child_hashes, out=child_hashes)
        hashes = _segment_sums(child_hashes, relative)
        hashes += lengths.view(U64) * _LENGTH_SALT
        splitmix64(hashes, out=hashes)
    else:
        bits = _fixed_width_bits(chunk)
        if bits is None:  # any other type: slow but exact, through Python values
            hashes = np.array([_python_hash(v) for v in chunk.to_pylist()], dtype=U64)
        else:
            hashes = bits if bits.flags.owndata and bits.flags.writeable else bits.copy()
    valid = _validity(chunk)
    if valid is not None:
        hashes = np.where(valid, hashes, NULL_HASH)
    hashes *= scale
    return hashes


def _add_hashes(acc: np.ndarray, chunk: pa.Array, scale: np.uint64, memo: dict) -> None:
    """acc += scale * h(value), slot by slot, in as few passes as the type allows."""
    t = chunk.type
    if pa.types.is_dictionary(t):
        dictionary = chunk.dictionary
        memo_key = (_identity(dictionary), int(scale))
        table = memo.get(memo_key)
        if table is None:
            table = np.append(value_hashes(dictionary), NULL_HASH)  # -1 (null) reads the appended NULL_HASH
            table *= scale
            memo[memo_key] = table
        acc += table[_dictionary_indices(chunk)]
        return
    bits = None
    if not pa.types.is_boolean(t):
        bits = _fixed_width_bits(chunk)
    if bits is not None and chunk.null_count == 0:
        acc += bits * scale
        return
    acc += value_hashes(chunk, scale)


# Rows hashed per block: the accumulators stay small (cache-resident) whatever the table size.
BLOCK_ROWS = 1 << 18


def table_checksum(table: pa.Table, columns: list[str] | None = None) -> int:
    """Order-independent checksum of `table`'s rows over `columns` (default: its own); a listed column the
    table lacks counts as null in every row. Works through the rows in blocks of BLOCK_ROWS."""
    total = 0
    for hashes in _row_hash_blocks(table, columns):
        total = (total + int(hashes.sum(dtype=U64))) % (1 << 64)
    return total


def row_hashes(table: pa.Table, columns: list[str] | None = None) -> np.ndarray:
    """row_hash of every row of `table`, in its order (the terms `table_checksum` sums): comparing two tables'
    sequences checks their rows and their order at once."""
    blocks = list(_row_hash_blocks(table, columns))
    return np.concatenate(blocks) if blocks else np.zeros(0, dtype=U64)


def _row_hash_blocks(table: pa.Table, columns: list[str] | None):
    names = table.column_names if columns is None else columns
    present = [(name, column_constant(name)) for name in names if name in table.column_names]
    missing = 0
    for name in names:
        if name not in table.column_names:
            missing = (missing + int(column_constant(name)) * int(NULL_HASH)) % (1 << 64)
    memo: dict = {}
    for begin in range(0, table.num_rows, BLOCK_ROWS):
        block = table.slice(begin, BLOCK_ROWS)
        acc = np.full(block.num_rows, missing, dtype=U64)
        for name, constant in present:
            start = 0
            for chunk in block.column(name).chunks:
                n = len(chunk)
                if n:
                    _add_hashes(acc[start:start + n], chunk, constant, memo)
                start += n
        yield splitmix64(acc, out=acc)


def combine(*checksums: int) -> int:
    """Checksum of the union of row sets whose checksums are given."""
    return sum(checksums) % (1 << 64)
