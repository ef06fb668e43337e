"""Bloom artifacts: no false negatives ever, false positives near the target, Parquet's exact bit layout."""

from __future__ import annotations

import io
import math
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.artifacts import ArtifactType, BloomArtifact, SplitBlockBloomFilter, decode_artifact, encode_artifact
from strata_core.artifacts import bloom as bloom_module
from strata_core.artifacts.bloom import BloomBuilder, estimate_distinct, sorted_unique
from strata_core.artifacts.sbbf import MAX_BYTES, MIN_BYTES, optimal_num_bytes
from strata_core.artifacts.value_hashing import arrow_hashes
from strata_core.domain.fields import FieldType
from tests.helpers import examples

I64 = st.integers(-(1 << 63), (1 << 63) - 1)
# Arrow's microsecond timestamps span what datetime can show and far more; any int64 is a valid value.
VALUES = {
    FieldType.STRING: st.text(max_size=30),
    FieldType.I64: I64,
    FieldType.U64: st.integers(0, (1 << 64) - 1),
    FieldType.F64: st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, math.nan]),
    FieldType.BOOL: st.booleans(),
    FieldType.TIMESTAMP: I64,
    FieldType.STRING_LIST: st.lists(st.text(max_size=10), max_size=4),
}


def arrow_column(values: list, field_type: FieldType) -> pa.Array:
    if field_type is FieldType.TIMESTAMP:
        return pa.array(values, pa.int64()).cast(field_type.arrow_type)
    return pa.array(values, field_type.arrow_type)


def build(row_groups: list[list], field_type: FieldType, fpp: float = 0.01, **kwargs) -> BloomArtifact:
    builder = BloomBuilder("col", field_type, fpp, **kwargs)
    for values in row_groups:
        builder.add_row_group(arrow_column(values, field_type))
    return builder.finish()


def probes_of(values: list, field_type: FieldType) -> list:
    """The probe values a row holds: the row's value, or each element of a list."""
    if field_type is FieldType.STRING_LIST:
        return [e for v in values if v is not None for e in v if e is not None]
    return [v for v in values if v is not None]


@st.composite
def typed_row_groups(draw):
    field_type = draw(st.sampled_from(list(VALUES)))
    values = VALUES[field_type] | st.none()
    row_groups = draw(st.lists(st.lists(values, max_size=20), min_size=1, max_size=4))
    return field_type, row_groups


@settings(max_examples=examples(300), deadline=None)
@given(typed_row_groups(), st.booleans())
def test_no_false_negatives(case, streaming: bool) -> None:
    field_type, row_groups = case
    # max_values makes the builder fill the file filter early and fold it; the answers must not change.
    bound = sum(len(probes_of(g, field_type)) for g in row_groups) if streaming else None
    artifact = build(row_groups, field_type, max_values=bound)
    for index, values in enumerate(row_groups):
        for value in probes_of(values, field_type):
            assert artifact.might_contain([value]), (field_type, value)
            assert index in artifact.row_groups_maybe_containing([value]), (field_type, value)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=40))
def test_dictionary_and_plain_columns_hash_alike(values: list[str]) -> None:
    plain = pa.array(values, pa.string())
    expected = set(arrow_hashes(plain, FieldType.STRING).tolist())
    for variant in (plain.dictionary_encode(), plain.cast(pa.large_string()), pa.chunked_array([plain[:1], plain[1:]])):
        assert set(arrow_hashes(variant, FieldType.STRING).tolist()) == expected


def test_repetitive_and_unique_string_chunks_take_either_path_with_the_same_hashes() -> None:
    repetitive = pa.array([f"host-{i % 7}" for i in range(10_000)])
    unique = pa.array([f"trace-{i:08d}" for i in range(10_000)])
    for array in (repetitive, unique):
        expected = {int(h) for h in arrow_hashes(pa.array(sorted(set(array.to_pylist()))), FieldType.STRING)}
        assert set(sorted_unique(arrow_hashes(array, FieldType.STRING)).tolist()) == expected


def test_numbers_of_a_narrower_stored_width_hash_as_their_declared_type() -> None:
    artifact = BloomBuilder("n", FieldType.I64, 0.01)
    artifact.add_row_group(pa.array([1, -2, 300], pa.int16()))
    bloom = artifact.finish()
    assert bloom.might_contain([-2]) and bloom.might_contain([300])


def test_float_zero_and_nan_normalization() -> None:
    bloom = build([[-0.0, float("nan")]], FieldType.F64)
    assert bloom.might_contain([0.0]) and bloom.might_contain([-0.0])
    nan_with_payload = np.frombuffer(np.uint64(0x7FF8_0000_0000_0001).tobytes(), dtype=np.float64)[0]
    assert bloom.might_contain([float("nan")]) and bloom.might_contain([float(nan_with_payload)])
    assert bloom.might_contain([0])  # an int probe equal to a stored float


def test_wrong_typed_probes_answer_maybe() -> None:
    bloom = build([[1, 2, 3], [4]], FieldType.I64)
    for value in ("1", 1.5, True, None, b"1", [1], 1 << 70):
        assert bloom.might_contain([value])
        assert bloom.row_groups_maybe_containing([value]) == {0, 1}
    stamps = build([[1_700_000_000_000_000]], FieldType.TIMESTAMP)
    assert stamps.might_contain([datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)])
    assert stamps.might_contain([datetime(2023, 11, 14)])  # naive: cannot be placed in time, so maybe


def test_absent_values_are_mostly_ruled_out_per_row_group() -> None:
    row_groups = [[f"value-{g}-{i}" for i in range(2_000)] for g in range(4)]
    bloom = build(row_groups, FieldType.STRING)
    assert bloom.row_groups_maybe_containing(["value-2-17"]) >= {2}
    misses = sum(bool(bloom.row_groups_maybe_containing([f"absent-{i}"])) for i in range(2_000))
    assert misses < 2_000 * 4 * 0.01 * 2


@pytest.mark.parametrize("fpp", [0.01, 0.05])
def test_measured_false_positive_rate_within_twice_the_target(fpp: float) -> None:
    rng = np.random.default_rng(11)
    ndv = 50_000
    inserted = rng.integers(0, np.iinfo(np.uint64).max, size=ndv, dtype=np.uint64, endpoint=True)
    bloom = SplitBlockBloomFilter.for_ndv(ndv, fpp)
    bloom.insert_hashes(inserted)
    assert bloom.might_contain_hashes(inserted).all()
    absent = rng.integers(0, np.iinfo(np.uint64).max, size=200_000, dtype=np.uint64, endpoint=True)
    absent = absent[~np.isin(absent, inserted)]
    rate = float(bloom.might_contain_hashes(absent).mean())
    assert rate <= 2 * fpp, rate
    # Single probes answer like the vectorized ones.
    sample = absent[:2_000]
    assert [bloom.might_contain_hash(int(h)) for h in sample] == bloom.might_contain_hashes(sample).tolist()


def test_measured_false_positive_rate_of_a_built_artifact() -> None:
    values = [f"user-{i}" for i in range(20_000)]
    bloom = build([values[:10_000], values[10_000:]], FieldType.STRING, fpp=0.05)
    absent = np.array(arrow_hashes(pa.array([f"other-{i}" for i in range(100_000)]), FieldType.STRING))
    assert float(bloom.file_filter.might_contain_hashes(absent).mean()) <= 0.1
    assert float(bloom.row_group_filters[0].might_contain_hashes(absent).mean()) <= 0.1


def test_sizing_follows_the_spec_formula() -> None:
    assert optimal_num_bytes(0, 0.01) == MIN_BYTES
    assert optimal_num_bytes(1, 0.01) == MIN_BYTES
    bits = -8 * 1_000_000 / math.log(1 - 0.01 ** (1 / 8))
    expected = 1 << math.ceil(math.log2(bits / 8))
    assert optimal_num_bytes(1_000_000, 0.01) == expected
    assert optimal_num_bytes(10**12, 0.01) == MAX_BYTES
    for ndv in (10, 1_000, 123_456):
        size = optimal_num_bytes(ndv, 0.05)
        assert size & (size - 1) == 0


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), max_size=300), st.integers(0, 6))
def test_folding_equals_building_small(hashes: list[int], halvings: int) -> None:
    values = np.array(hashes, dtype=np.uint64)
    large = SplitBlockBloomFilter.empty(MIN_BYTES << 6)
    large.insert_hashes(values)
    small = SplitBlockBloomFilter.empty(MIN_BYTES << (6 - halvings))
    small.insert_hashes(values)
    assert large.folded(small.num_bytes) == small


@pytest.mark.parametrize("batch", [7, 64, 1 << 20])
@pytest.mark.parametrize("max_values", [None, 2_000, 100_000])
def test_file_filter_equals_one_built_from_all_hashes(monkeypatch, batch: int, max_values: int | None) -> None:
    """However the file filter's insertion is batched (in the background, into a larger filter folded at the end, or
    all at once at the end), it holds exactly the bits of a filter built from all hashes at once."""
    monkeypatch.setattr(bloom_module, "_FILE_INSERT_BATCH", batch)
    rng = np.random.default_rng(9)
    groups = [[int(v) for v in rng.integers(-(10**6), 10**6, 400)] for _ in range(5)]
    bloom = build(groups, FieldType.I64, max_values=max_values)
    expected = SplitBlockBloomFilter.empty(bloom.file_filter.num_bytes)
    expected.insert_hashes(arrow_hashes(pa.array([v for g in groups for v in g]), FieldType.I64))
    assert bloom.file_filter == expected


def test_distinct_estimate_exact_when_small_and_close_when_large() -> None:
    rng = np.random.default_rng(5)
    few = [sorted_unique(rng.integers(0, 1000, 500).astype(np.uint64)) for _ in range(3)]
    exact = len(sorted_unique(np.concatenate(few)))
    assert estimate_distinct([g[:4096] for g in few], sum(len(g) for g in few)) == exact
    shared = rng.integers(0, np.iinfo(np.uint64).max, 200_000, dtype=np.uint64, endpoint=True)
    groups = [sorted_unique(shared[i * 50_000 : i * 50_000 + 100_000]) for i in range(3)]  # overlapping halves
    estimate = estimate_distinct([g[:4096] for g in groups], sum(len(g) for g in groups))
    assert 200_000 <= estimate <= 200_000 * 1.15


def test_matches_the_filters_parquet_writes() -> None:
    """Same hashes into a filter of the same size give the same bytes as Arrow C++'s Parquet writer."""
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "s": [f"name-{i}" for i in rng.integers(0, 500, 3_000)],
            "i": rng.integers(-(10**12), 10**12, 3_000),
            "f": rng.normal(size=3_000),
        }
    )
    sink = io.BytesIO()
    options = {name: {"ndv": 3_000, "fpp": 0.01} for name in table.column_names}
    pq.write_table(table, sink, row_group_size=1_000, bloom_filter_options=options)
    data = sink.getvalue()
    footer = pq.ParquetFile(io.BytesIO(data)).metadata
    types = {"s": FieldType.STRING, "i": FieldType.I64, "f": FieldType.F64}
    for group in range(footer.num_row_groups):
        for position, name in enumerate(table.column_names):
            chunk = footer.row_group(group).column(position)
            region = data[chunk.bloom_filter_offset : chunk.bloom_filter_offset + chunk.bloom_filter_length]
            size = 1 << (len(region) - 1).bit_length() - 1  # the bitset follows a short thrift header
            ours = SplitBlockBloomFilter.empty(size)
            ours.insert_hashes(arrow_hashes(table[name].slice(group * 1_000, 1_000), types[name]))
            assert region.endswith(ours.to_bytes()), (group, name)


def test_payload_round_trip() -> None:
    bloom = build([["a", "b"], [], ["c"]], FieldType.STRING)
    _, payload = decode_artifact(encode_artifact("s", ArtifactType.BLOOM, "col", bloom.to_payload()))
    loaded = BloomArtifact.from_payload(payload)
    assert loaded == bloom
    assert loaded.row_groups_maybe_containing(["c"]) >= {2}
    assert loaded.row_group_ndv == [2, 0, 1]
