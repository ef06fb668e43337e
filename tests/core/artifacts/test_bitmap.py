"""Bitmap artifacts are exact: every answer equals a brute-force scan of the rows."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from strata_core.artifacts import (
    ArtifactType,
    BitmapArtifact,
    TooManyDistinctValues,
    decode_artifact,
    encode_artifact,
)
from strata_core.artifacts.bitmap import BitmapBuilder
from strata_core.domain.fields import FieldType
from tests.helpers import examples

VALUES = {
    FieldType.STRING: st.sampled_from(["a", "b", "ü", "", "long " * 10]),
    FieldType.I64: st.integers(-3, 3) | st.just(-(1 << 63)),
    FieldType.U64: st.integers(0, 3) | st.just((1 << 64) - 1),
    FieldType.F64: st.sampled_from([0.0, -0.0, 1.5, math.nan, math.inf]),
    FieldType.BOOL: st.booleans(),
    FieldType.TIMESTAMP: st.integers(0, 3) | st.just(1_700_000_000_000_000),
    FieldType.STRING_LIST: st.lists(st.sampled_from(["x", "y", "z"]) | st.none(), max_size=3),
}


def arrow_column(values: list, field_type: FieldType, dictionary: bool = False) -> pa.Array:
    if field_type is FieldType.TIMESTAMP:
        array = pa.array(values, pa.int64()).cast(field_type.arrow_type)
    else:
        array = pa.array(values, field_type.arrow_type)
    return array.dictionary_encode() if dictionary and field_type is FieldType.STRING else array


def build(row_groups: list[list], field_type: FieldType, limit: int = 1_000, dictionary: bool = False):
    builder = BitmapBuilder("col", field_type, limit)
    for values in row_groups:
        builder.add_row_group(arrow_column(values, field_type, dictionary))
    return builder.finish()


def equal(a, b) -> bool:
    """SQL equality with NaN equal to itself (what a bitmap lookup promises)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def row_matches(row, probe, field_type: FieldType) -> bool:
    if row is None:
        return False
    if field_type is FieldType.STRING_LIST:
        return any(e is not None and equal(e, probe) for e in row)
    return equal(row, probe)


@st.composite
def cases(draw):
    field_type = draw(st.sampled_from(list(VALUES)))
    values = VALUES[field_type] | st.none()
    # Long runs (sorted splits) and scattered values take different paths in the builder.
    groups = draw(st.lists(st.lists(values, max_size=40), min_size=1, max_size=4))
    if draw(st.booleans()):
        groups = [sorted(g, key=repr) for g in groups]
        groups = [[v for v in g for _ in range(20)] for g in groups]
    probes = draw(st.lists(VALUES[field_type] if field_type is not FieldType.STRING_LIST else st.sampled_from("xyzw"),
                           min_size=1, max_size=3))
    return field_type, groups, probes, draw(st.booleans())


@settings(max_examples=examples(300), deadline=None)
@given(cases())
def test_answers_equal_brute_force(case) -> None:
    field_type, groups, probes, dictionary = case
    artifact = build(groups, field_type, dictionary=dictionary)
    rows = [row for group in groups for row in group]
    starts = [sum(len(g) for g in groups[:i]) for i in range(len(groups))]
    expected_rows = {i for i, row in enumerate(rows) if any(row_matches(row, p, field_type) for p in probes)}
    assert set(artifact.rows_matching(probes)) == expected_rows
    expected_groups = {
        g for g, group in enumerate(groups) if any(row_matches(r, p, field_type) for r in group for p in probes)
    }
    assert artifact.row_groups_containing(probes) == expected_groups
    assert artifact.null_row_groups() == {g for g, group in enumerate(groups) if any(r is None for r in group)}
    assert artifact.row_group_offsets == [*starts, len(rows)]
    loaded = BitmapArtifact.from_payload(artifact.to_payload())
    assert loaded == artifact
    assert loaded.row_groups_containing(probes) == expected_groups


def test_over_the_limit_is_refused_early() -> None:
    builder = BitmapBuilder("trace", FieldType.STRING, 5)
    builder.add_row_group(pa.array(["a", "b", "c"]))
    with pytest.raises(TooManyDistinctValues, match="more than 5 distinct values"):
        builder.add_row_group(pa.array(["d", "e", "f", "a"]))


def test_values_repeated_across_row_groups_count_once() -> None:
    groups = [["a", "b"] * 50, ["b", "a", "c"] * 50]
    artifact = build(groups, FieldType.STRING, limit=3)
    assert artifact.dictionary.to_pylist() == ["a", "b", "c"]
    assert artifact.row_groups_containing(["c"]) == {1}


def test_probes_of_the_wrong_type_match_everything() -> None:
    artifact = build([[1, 2], [3]], FieldType.I64)
    for probe in ("1", 1.0, True, None):
        assert artifact.row_groups_containing([probe]) == {0, 1}
        assert artifact.rows_matching([probe]) == BitMap(range(3))
    assert artifact.row_groups_containing([4]) == set()
    floats = build([[1.0], [2.0]], FieldType.F64)
    assert floats.row_groups_containing([2]) == {1}  # an int probe equal to a stored float


def test_zero_finds_negative_zero_and_nan_finds_nan() -> None:
    artifact = build([[-0.0, 1.0], [math.nan], [0.0]], FieldType.F64)
    assert artifact.row_groups_containing([0.0]) == {0, 2}
    assert artifact.row_groups_containing([-0.0]) == {0, 2}
    assert artifact.row_groups_containing([math.nan]) == {1}


def test_empty_row_groups_and_empty_file() -> None:
    artifact = build([[], ["a"], []], FieldType.STRING)
    assert artifact.row_groups_containing(["a"]) == {1}
    assert artifact.row_group_offsets == [0, 0, 1, 1]
    empty = BitmapBuilder("col", FieldType.STRING, 10).finish()
    assert empty.row_groups_containing(["a"]) == set() and empty.num_row_groups == 0


def test_envelope_round_trip() -> None:
    artifact = build([["a", None], ["b"]], FieldType.STRING)
    _, payload = decode_artifact(encode_artifact("s", ArtifactType.BITMAP, "col", artifact.to_payload()))
    assert BitmapArtifact.from_payload(payload) == artifact
