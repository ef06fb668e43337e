"""Parquet's split-block bloom filter (SBBF), as the Apache Parquet specification (BloomFilter.md) defines it.

The filter is an array of 256-bit blocks, each eight 32-bit little-endian words. A 64-bit hash picks one block with
its upper 32 bits (`((h >> 32) * num_blocks) >> 32`) and, with its lower 32 bits multiplied by eight salt constants,
one bit in each of the block's eight words; inserting sets those bits, a probe checks them all. A filter built here
is byte-for-byte the filter Parquet writers build for the same hashes.

Many hashes are inserted at once, in numpy: sorted hashes map to non-decreasing block numbers (the block function
is monotonic in the hash), so the eight word masks of the hashes that share a block are OR-ed together with one
`reduceat`, and each touched block is then updated once; no Python loop runs per hash.
"""

from __future__ import annotations

import math
import sys

import numpy as np

if sys.byteorder != "little":  # pairs of little-endian words are handled as native uint64 below
    raise ImportError("strata_core.artifacts.sbbf supports little-endian hosts only")

SALT = np.array(
    [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint32
)
_SALT_INTS = [int(s) for s in SALT]
BYTES_PER_BLOCK = 32
MIN_BYTES = 32
MAX_BYTES = 128 * 1024 * 1024
_INSERT_BATCH = 1 << 16


def optimal_num_bytes(ndv: int, fpp: float) -> int:
    """The spec's sizing: m = -8 * ndv / ln(1 - fpp^(1/8)) bits, as bytes rounded up to a power of two, clamped to
    [32 bytes, 128 MiB]."""
    if not 0.0 < fpp < 1.0:
        raise ValueError(f"false-positive rate {fpp} is not in (0, 1)")
    if ndv <= 0:
        return MIN_BYTES
    num_bits = -8.0 * ndv / math.log1p(-(fpp ** (1.0 / 8.0)))
    num_bytes = math.ceil(num_bits / 8.0)
    if num_bytes >= MAX_BYTES:
        return MAX_BYTES
    return max(MIN_BYTES, 1 << (num_bytes - 1).bit_length())


_MASK_BATCH = 1 << 16
# The salts repeated for a batch of hashes: each key repeated eight times times this is two flat arrays, which numpy
# multiplies with SIMD, where broadcasting (n, 1) by (8,) runs an 8-element inner loop n times.
_TILED_SALTS = np.tile(SALT, _MASK_BATCH)


def block_masks(hashes: np.ndarray) -> np.ndarray:
    """For each hash, the bit it sets in each of the eight words of its block, as a `(n, 8)` uint32 array."""
    count = hashes.shape[0]
    masks = np.repeat(hashes.astype(np.uint32), 8)  # the lower 32 bits of each hash
    for begin in range(0, count * 8, _MASK_BATCH * 8):
        batch = masks[begin : begin + _MASK_BATCH * 8]
        np.multiply(batch, _TILED_SALTS[: batch.shape[0]], out=batch)
    np.right_shift(masks, np.uint32(27), out=masks)
    np.left_shift(np.uint32(1), masks, out=masks)
    return masks.reshape(count, 8)


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class SplitBlockBloomFilter:
    __slots__ = ("_flat", "_words")

    def __init__(self, data: bytes | bytearray | memoryview | np.ndarray) -> None:
        words = np.frombuffer(data, dtype="<u4") if not isinstance(data, np.ndarray) else data.view("<u4")
        if words.size == 0 or words.size % 8:
            raise ValueError(f"a split-block bloom filter is a positive multiple of {BYTES_PER_BLOCK} bytes")
        self._words = words.reshape(-1, 8)
        self._flat: memoryview | None = None

    @classmethod
    def empty(cls, num_bytes: int) -> SplitBlockBloomFilter:
        if num_bytes < BYTES_PER_BLOCK or num_bytes % BYTES_PER_BLOCK:
            raise ValueError(f"{num_bytes} bytes is not a positive multiple of {BYTES_PER_BLOCK}")
        return cls(np.zeros(num_bytes // 4, dtype="<u4"))

    @classmethod
    def for_ndv(cls, ndv: int, fpp: float) -> SplitBlockBloomFilter:
        return cls.empty(optimal_num_bytes(ndv, fpp))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> SplitBlockBloomFilter:
        return cls(data)

    def to_bytes(self) -> bytes:
        return self._words.tobytes()

    @property
    def num_bytes(self) -> int:
        return self._words.size * 4

    @property
    def num_blocks(self) -> int:
        return self._words.shape[0]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SplitBlockBloomFilter):
            return NotImplemented
        return self._words.shape == other._words.shape and bool(np.array_equal(self._words, other._words))

    def __repr__(self) -> str:
        return f"SplitBlockBloomFilter(num_bytes={self.num_bytes})"

    def block_of(self, hashes: np.ndarray) -> np.ndarray:
        return ((hashes >> np.uint64(32)) * np.uint64(self.num_blocks)) >> np.uint64(32)

    def _writable(self) -> None:
        self._flat = None
        if not self._words.flags.writeable:  # loaded from immutable bytes: copy on first write
            self._words = self._words.copy()

    def insert_hashes(self, hashes: np.ndarray) -> None:
        hashes = np.sort(np.asarray(hashes, dtype=np.uint64))
        for begin in range(0, hashes.shape[0], _INSERT_BATCH):
            batch = hashes[begin : begin + _INSERT_BATCH]
            self.insert_sorted(batch, block_masks(batch))

    def insert_sorted(self, sorted_hashes: np.ndarray, masks: np.ndarray) -> None:
        """Insert hashes given in ascending order, with their `block_masks`."""
        if sorted_hashes.shape[0] == 0:
            return
        self._writable()
        blocks = self.block_of(sorted_hashes)
        first = np.empty(blocks.shape[0], dtype=bool)
        first[0] = True
        np.not_equal(blocks[1:], blocks[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        # Pairs of 32-bit words as one uint64: half the elements to reduce, same bits.
        merged = np.bitwise_or.reduceat(masks.view(np.uint64), starts, axis=0)
        touched = blocks[starts].astype(np.intp)
        words = self._words.view(np.uint64)
        words[touched] |= merged

    def folded(self, num_bytes: int) -> SplitBlockBloomFilter:
        """This filter at a smaller power-of-two size, bit for bit the filter built at that size from the same hashes.

        With 2^a blocks a hash's block is its top `a` bits, so halving the filter merges blocks 2j and 2j + 1 into
        block j, while the bits set inside a block depend only on the hash's lower 32 bits and do not move."""
        blocks = num_bytes // BYTES_PER_BLOCK
        if blocks == self.num_blocks:
            return self
        if not (_is_power_of_two(self.num_blocks) and _is_power_of_two(blocks) and blocks < self.num_blocks):
            raise ValueError(f"cannot fold {self.num_bytes} bytes into {num_bytes}: powers of two, smaller only")
        grouped = self._words.view(np.uint64).reshape(blocks, self.num_blocks // blocks, 4)
        return SplitBlockBloomFilter(np.bitwise_or.reduce(grouped, axis=1).view("<u4").reshape(-1))

    def might_contain_hashes(self, hashes: np.ndarray) -> np.ndarray:
        hashes = np.asarray(hashes, dtype=np.uint64)
        masks = block_masks(hashes).view(np.uint64)
        words = self._words.view(np.uint64)[self.block_of(hashes).astype(np.intp)]
        return np.all((words & masks) == masks, axis=1)

    def might_contain_hash(self, hash_value: int) -> bool:
        """One probe without numpy's per-call overhead: what a query does for each literal."""
        if self._flat is None:
            # Indexing a memoryview from Python is ~20x cheaper than indexing a numpy array.
            self._flat = memoryview(np.ascontiguousarray(self._words, dtype="=u4")).cast("B").cast("I")
        flat = self._flat
        base = (((hash_value >> 32) * self.num_blocks) >> 32) * 8
        key = hash_value & 0xFFFFFFFF
        for lane, salt in enumerate(_SALT_INTS):
            if not flat[base + lane] >> (((key * salt) & 0xFFFFFFFF) >> 27) & 1:
                return False
        return True
