"""The vectorized evaluation a delete removes rows with (`strata_core.query.row_filter`) agrees with the
reference semantics (`evaluate_row`) on random tables and predicates, NaN, NULL, LIKE escapes and text tokens
included; and a predicate survives its JSON form unchanged (it is stored, then shipped to scans and rewrites)."""

from __future__ import annotations

import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.query.predicate import Compare, InList, evaluate_row, to_nnf
from strata_core.query.predicate_json import predicate_from_json, predicate_to_json
from strata_core.query.row_filter import matching_rows
from tests.helpers import examples
from tests.query_logic.strategies import PREDICATES, ROWS

SCHEMA = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()), ("t", pa.string()),
                    ("ts", pa.int64())])


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(ROWS, max_size=12), PREDICATES)
def test_dl2_matching_rows_agree_with_the_reference(rows, predicate):
    table = _table(rows)
    expected = [evaluate_row(predicate, row) for row in rows]
    assert matching_rows(predicate, table).tolist() == expected
    assert matching_rows(to_nnf(predicate), table).tolist() == expected


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(ROWS, max_size=6), PREDICATES)
def test_dl2_dictionary_strings_and_missing_columns_read_as_plain_and_null(rows, predicate):
    table = _table(rows)
    encoded = table.set_column(2, "s", table.column("s").dictionary_encode()).drop_columns(["t"])
    expected = [evaluate_row(predicate, {k: v for k, v in row.items() if k != "t"}) for row in rows]
    assert matching_rows(predicate, encoded).tolist() == expected


@settings(max_examples=examples(300), deadline=None)
@given(PREDICATES)
def test_predicate_json_round_trip(predicate):
    assert repr(predicate_from_json(predicate_to_json(predicate))) == repr(predicate)


def test_constants_stand_for_a_split_column():
    table = _table([{"i": 1}, {"i": 2}])
    assert matching_rows(Compare("partition_id", "=", "t1"), table, {"partition_id": "t1"}).tolist() == [True, True]
    assert matching_rows(Compare("partition_id", "=", "t1"), table, {"partition_id": "t2"}).tolist() == [False, False]


def test_nan_equals_nan_and_null_never_matches():
    table = _table([{"f": math.nan}, {"f": 1.0}, {"f": None}])
    assert matching_rows(Compare("f", "=", math.nan), table).tolist() == [True, False, False]
    assert matching_rows(InList("f", (math.nan,), True), table).tolist() == [False, True, False]


def test_integer_literals_beyond_the_column_type_and_timestamps_in_micros():
    table = pa.table({"u": pa.array([0, 2**64 - 1, None], pa.uint64()),
                      "t": pa.array([1_000_000, 2_000_000, None], pa.timestamp("us", tz="UTC"))})
    assert matching_rows(Compare("u", ">", -1), table).tolist() == [True, True, False]
    assert matching_rows(Compare("u", "<", 2**64), table).tolist() == [True, True, False]
    assert matching_rows(Compare("u", "=", 2**64 - 1), table).tolist() == [False, True, False]
    assert matching_rows(Compare("t", ">=", 2_000_000), table).tolist() == [False, True, False]
    assert matching_rows(InList("u", (0, -5)), table).tolist() == [True, False, False]


def test_long_in_lists_agree_with_the_reference_value_by_value():
    # Plain numbers are decided in one membership pass; NaN, booleans and integers outside the column's type one
    # by one: every kind mixed in one long list gives the reference's answer.
    rows = [{"i": n - 5, "f": math.nan if n == 3 else n * 0.5, "ts": 2**62 if n == 4 else n} for n in range(12)]
    rows.append({"i": None, "f": None, "ts": None})
    table = _table(rows)
    lists = [tuple(range(-3, 2000)), (*range(2000), math.nan, 2**70, -(2**70), 2.5, True),
             (*(k * 0.5 for k in range(2000)), math.nan, 2**62, None), (2**62, 2**53 + 1, *range(5, 3000))]
    for column in ("i", "f", "ts"):
        for values in lists:
            for negated in (False, True):
                predicate = InList(column, values, negated)
                assert matching_rows(predicate, table).tolist() == [evaluate_row(predicate, r) for r in rows], (
                    column, values[-4:], negated)
