"""The numpy XXH64 against the reference implementation (the xxhash package)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from strata_core.artifacts.value_hashing import arrow_hashes, probe_hash
from strata_core.artifacts.xxh64 import xxh64_bytes, xxh64_matrix, xxh64_offsets, xxh64_u64
from strata_core.domain.fields import FieldType


def test_every_length_from_0_to_100() -> None:
    rng = np.random.default_rng(7)
    for length in range(101):
        matrix = rng.integers(0, 256, size=(20, length), dtype=np.uint8)
        expected = [xxhash.xxh64_intdigest(row.tobytes()) for row in matrix]
        assert xxh64_matrix(matrix).tolist() == expected, length


def test_batches_larger_than_one_pass() -> None:
    rng = np.random.default_rng(8)
    matrix = rng.integers(0, 256, size=(40_000, 37), dtype=np.uint8)
    hashes = xxh64_matrix(matrix)
    for row in (0, 16_383, 16_384, 39_999):
        assert int(hashes[row]) == xxhash.xxh64_intdigest(matrix[row].tobytes())


@given(st.lists(st.binary(max_size=100), max_size=50))
def test_variable_length_strings(values: list[bytes]) -> None:
    offsets = np.concatenate(([0], np.cumsum([len(v) for v in values]))).astype(np.int64)
    data = np.frombuffer(b"".join(values), dtype=np.uint8)
    assert xxh64_offsets(data, offsets).tolist() == [xxhash.xxh64_intdigest(v) for v in values]


@given(st.binary(max_size=300))
def test_single_values(value: bytes) -> None:
    assert xxh64_bytes(value) == xxhash.xxh64_intdigest(value)


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=50))
def test_64_bit_words(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    expected = [xxhash.xxh64_intdigest(v.to_bytes(8, "little", signed=True)) for v in values]
    assert xxh64_u64(array).tolist() == expected


def test_sliced_and_large_string_arrays_hash_their_own_values() -> None:
    values = ["", "a", "héllo", "x" * 40, None, "tail"]
    expected = {probe_hash(v, FieldType.STRING) for v in values[1:] if v is not None}
    for array in (pa.array(values).slice(1), pa.array(values, pa.large_string()).slice(1)):
        assert set(arrow_hashes(array, FieldType.STRING).tolist()) == expected
