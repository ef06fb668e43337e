"""XXH64 (seed 0) over many inputs at once, in numpy: the hash Parquet's split-block bloom filters use.

Hashing one value at a time from Python costs ~100x the hash itself, so inputs of one length are hashed as the
rows of a `(n, length)` byte matrix, one numpy operation per step of the algorithm for all rows together; inputs of
different lengths are grouped by length first. All arithmetic is on uint64 arrays, which wrap around modulo 2^64
exactly as the reference implementation does. Rows go through in batches small enough for the temporaries to stay
in the CPU cache, and every step writes into preallocated buffers: allocation and memory traffic, not arithmetic,
are what cost time here.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_MASK64 = (1 << 64) - 1
_BATCH_ROWS = 1 << 14
_SHIFTS = {r: (np.uint64(r), np.uint64(64 - r)) for r in (1, 7, 11, 12, 18, 23, 27, 29, 31, 32, 33)}


class _Batch:
    """Scratch buffers for one batch of rows; every operation writes in place."""

    def __init__(self, rows: int) -> None:
        self.tmp = np.empty(rows, dtype=np.uint64)
        self.tmp2 = np.empty(rows, dtype=np.uint64)

    def rotl(self, x: np.ndarray, r: int) -> None:
        left, right = _SHIFTS[r]
        np.right_shift(x, right, out=self.tmp)
        np.left_shift(x, left, out=x)
        np.bitwise_or(x, self.tmp, out=x)

    def round(self, acc: np.ndarray, lane: np.ndarray) -> None:
        """acc = rotl(acc + lane * P2, 31) * P1"""
        np.multiply(lane, _P2, out=self.tmp2)
        np.add(acc, self.tmp2, out=acc)
        self.rotl(acc, 31)
        np.multiply(acc, _P1, out=acc)

    def round_of(self, lane: np.ndarray, out: np.ndarray) -> None:
        """out = round(0, lane)"""
        np.multiply(lane, _P2, out=out)
        self.rotl(out, 31)
        np.multiply(out, _P1, out=out)

    def avalanche(self, h: np.ndarray) -> None:
        for shift, prime in ((33, _P2), (29, _P3)):
            np.right_shift(h, _SHIFTS[shift][0], out=self.tmp)
            np.bitwise_xor(h, self.tmp, out=h)
            np.multiply(h, prime, out=h)
        np.right_shift(h, _SHIFTS[32][0], out=self.tmp)
        np.bitwise_xor(h, self.tmp, out=h)


def _lanes(matrix: np.ndarray, start: int, width: int, dtype: str) -> np.ndarray:
    """Bytes [start, start + width) of every row read as little-endian words, one row per input."""
    block = matrix[:, start : start + width]
    if not block.flags.c_contiguous:
        block = np.ascontiguousarray(block)
    return block.view(dtype)


def _hash_batch(matrix: np.ndarray, out: np.ndarray) -> None:
    rows, length = matrix.shape
    work = _Batch(rows)
    h = out
    position = 0
    if length >= 32:
        accs = [np.full(rows, seed, dtype=np.uint64)
                for seed in ((int(_P1) + int(_P2)) & _MASK64, int(_P2), 0, (-int(_P1)) & _MASK64)]
        while position + 32 <= length:
            lanes = _lanes(matrix, position, 32, "<u8")
            for lane, acc in enumerate(accs):
                work.round(acc, lanes[:, lane])
            position += 32
        h[:] = 0
        for acc, r in zip(accs, (1, 7, 12, 18), strict=True):
            np.copyto(work.tmp2, acc)
            work.rotl(work.tmp2, r)
            np.add(h, work.tmp2, out=h)
        merged = np.empty(rows, dtype=np.uint64)
        for acc in accs:
            work.round_of(acc, merged)
            np.bitwise_xor(h, merged, out=h)
            np.multiply(h, _P1, out=h)
            np.add(h, _P4, out=h)
    else:
        h[:] = _P5
    np.add(h, np.uint64(length), out=h)
    k1 = np.empty(rows, dtype=np.uint64)
    while position + 8 <= length:
        work.round_of(_lanes(matrix, position, 8, "<u8")[:, 0], k1)
        np.bitwise_xor(h, k1, out=h)
        work.rotl(h, 27)
        np.multiply(h, _P1, out=h)
        np.add(h, _P4, out=h)
        position += 8
    if position + 4 <= length:
        np.multiply(_lanes(matrix, position, 4, "<u4")[:, 0], _P1, out=k1)
        np.bitwise_xor(h, k1, out=h)
        work.rotl(h, 23)
        np.multiply(h, _P2, out=h)
        np.add(h, _P3, out=h)
        position += 4
    while position < length:
        np.multiply(matrix[:, position], _P5, out=k1)
        np.bitwise_xor(h, k1, out=h)
        work.rotl(h, 11)
        np.multiply(h, _P1, out=h)
        position += 1
    work.avalanche(h)


def xxh64_matrix(matrix: np.ndarray) -> np.ndarray:
    """XXH64 of every row of a `(n, length)` uint8 matrix."""
    if matrix.dtype != np.uint8 or matrix.ndim != 2:
        raise TypeError("expected a 2-D uint8 matrix")
    rows = matrix.shape[0]
    out = np.empty(rows, dtype=np.uint64)
    for begin in range(0, rows, _BATCH_ROWS):
        _hash_batch(matrix[begin : begin + _BATCH_ROWS], out[begin : begin + _BATCH_ROWS])
    return out


def xxh64_u64(values: np.ndarray) -> np.ndarray:
    """XXH64 of each 64-bit value's 8 little-endian bytes (Parquet's PLAIN encoding of INT64/DOUBLE)."""
    words = np.ascontiguousarray(values).view("<u8")
    out = np.empty(words.shape[0], dtype=np.uint64)
    for begin in range(0, words.shape[0], _BATCH_ROWS):
        batch = words[begin : begin + _BATCH_ROWS]
        h = out[begin : begin + _BATCH_ROWS]
        work = _Batch(batch.shape[0])
        work.round_of(batch, h)
        np.bitwise_xor(h, np.uint64((int(_P5) + 8) & _MASK64), out=h)
        work.rotl(h, 27)
        np.multiply(h, _P1, out=h)
        np.add(h, _P4, out=h)
        work.avalanche(h)
    return out


def xxh64_offsets(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """XXH64 of the byte strings `data[offsets[i]:offsets[i + 1]]` (the buffers of an Arrow string array)."""
    offsets = offsets.astype(np.int64, copy=False)
    count = offsets.shape[0] - 1
    out = np.empty(max(count, 0), dtype=np.uint64)
    if count <= 0:
        return out
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    first_length = int(lengths[0])
    if np.all(lengths == first_length):
        # Equal lengths (ids, hashes, fixed-format codes): the buffer already is the matrix, nothing to copy.
        begin = int(starts[0])
        return xxh64_matrix(data[begin : begin + first_length * count].reshape(count, first_length))
    max_length = int(lengths.max())
    order = np.argsort(lengths.astype(np.uint16) if max_length < 1 << 16 else lengths, kind="stable")
    sorted_lengths = lengths[order]
    boundaries = np.flatnonzero(sorted_lengths[1:] != sorted_lengths[:-1]) + 1
    for group in np.split(order, boundaries):
        length = int(lengths[group[0]])
        if length == 0:
            out[group] = xxh64_matrix(np.empty((group.shape[0], 0), dtype=np.uint8))
            continue
        # Every window of `length` bytes of the buffer, as a view; taking rows of it copies just those strings.
        windows = as_strided(data, shape=(data.shape[0] - length + 1, length), strides=(1, 1), writeable=False)
        out[group] = xxh64_matrix(windows[starts[group]])
    return out


def xxh64_bytes(value: bytes) -> int:
    """One input, through the same vectorized code: what tests compare against the reference implementation."""
    matrix = np.frombuffer(value, dtype=np.uint8).reshape(1, len(value))
    return int(xxh64_matrix(matrix)[0])
