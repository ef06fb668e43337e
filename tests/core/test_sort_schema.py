"""Sort schemas: parsing, and the one comparator ingestion and merges share (nulls sort as the largest value)."""

from __future__ import annotations

import functools

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.domain.sort_key import is_sorted, sort_indices
from strata_core.domain.sort_schema import SortColumn, SortSchema
from tests.helpers import examples


def test_parse_and_render_round_trip():
    schema = SortSchema.parse(" metric_name , -host, timestamp_secs @v2")
    assert schema.columns == (SortColumn("metric_name"), SortColumn("host", True), SortColumn("timestamp_secs"))
    assert schema.version == "v2"
    assert str(schema) == "metric_name,-host,timestamp_secs@v2"
    assert str(SortSchema.parse("a,b")) == "a,b@v1"


@pytest.mark.parametrize("text", ["", "@v1", "a,,b", "a,a", "1abc", "a@version1", "a b"])
def test_bad_sort_schemas_are_refused(text):
    with pytest.raises(ValueError):
        SortSchema.parse(text)


def _reference_key(schema: SortSchema):
    """Python reference comparator: null greater than every value, per-column direction."""

    def compare(left, right):
        for column in schema.columns:
            a, b = left[column.name], right[column.name]
            if a == b:
                continue
            if a is None:
                result = 1
            elif b is None:
                result = -1
            else:
                result = -1 if a < b else 1
            return -result if column.descending else result
        return 0

    return functools.cmp_to_key(compare)


rows_strategy = st.lists(
    st.fixed_dictionaries({
        "a": st.one_of(st.none(), st.sampled_from(["x", "y", "z", ""])),
        "b": st.one_of(st.none(), st.integers(-3, 3)),
        "c": st.one_of(st.none(), st.floats(-10, 10, allow_nan=False)),
    }),
    max_size=60,
)


@settings(max_examples=examples(200), deadline=None)
@given(rows_strategy, st.permutations(["a", "b", "c"]), st.lists(st.booleans(), min_size=3, max_size=3))
def test_mc3_sort_matches_reference_comparator_and_is_stable(rows, order, descending):
    schema = SortSchema(tuple(SortColumn(n, d) for n, d in zip(order, descending, strict=True)))
    table = pa.Table.from_pylist(rows, schema=pa.schema([("a", pa.string()), ("b", pa.int64()), ("c", pa.float64())]))
    indices = sort_indices(table, schema).to_pylist()
    expected = sorted(range(len(rows)), key=lambda i: _reference_key(schema)(rows[i]))  # sorted() is stable
    assert indices == expected
    assert is_sorted(table.take(pa.array(indices, pa.int64())), schema)


def test_is_sorted_detects_disorder():
    schema = SortSchema.parse("a")
    assert is_sorted(pa.table({"a": [1, 2, 2, None]}), schema)
    assert not is_sorted(pa.table({"a": [2, 1]}), schema)
    assert not is_sorted(pa.table({"a": [None, 1]}), schema)
