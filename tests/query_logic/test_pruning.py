"""Pruning never drops a matching row (random tables cut into random row groups), and it does prune."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.domain.column_stats import ColumnStats
from strata_core.query.predicate import (
    And,
    Compare,
    InList,
    IsNull,
    Like,
    Not,
    Or,
    TextMatch,
    Unknown,
    describe,
    evaluate_row,
    to_nnf,
)
from strata_core.query.pruning import (
    ColumnRange,
    CombinedOracle,
    MembershipOracle,
    RangeOracle,
    TextOracle,
    may_match,
)
from tests.helpers import examples
from tests.query_logic.strategies import ATOMS, PREDICATES, ROWS, value_key

ORDERED = ("i", "f", "s", "ts")


def _column_range(values: list, exact_nan_count: bool, exact_null_count: bool) -> ColumnRange:
    # Like a Parquet writer: min/max leave out nulls and NaN.
    plain = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    nan_count = sum(1 for v in values if isinstance(v, float) and math.isnan(v))
    null_count = sum(1 for v in values if v is None)
    return ColumnRange(
        min(plain) if plain else None,
        max(plain) if plain else None,
        null_count if exact_null_count else None,
        len(values),
        nan_count if exact_nan_count else None,
    )


def _tokens(text: str) -> set[str]:
    return {t.lower() for t in re.findall(r"[A-Za-z0-9]+", text)}


@st.composite
def row_groups(draw):
    rows = draw(st.lists(ROWS, min_size=1, max_size=24))
    cuts = sorted(draw(st.sets(st.integers(1, len(rows)), max_size=4)) | {len(rows)})
    groups, start = [], 0
    for cut in cuts:
        groups.append(rows[start:cut])
        start = cut
    return groups


@st.composite
def range_oracles(draw, group):
    stats, absent = {}, set()
    for column in ORDERED:
        values = [row[column] for row in group]
        if all(v is None for v in values) and draw(st.booleans()):
            absent.add(column)  # the column is missing from this unit's file
        elif draw(st.integers(0, 5)):  # now and then nothing is known of a column
            stats[column] = _column_range(values, draw(st.booleans()), draw(st.integers(0, 3)) > 0)
    if all(row["t"] is None for row in group) and draw(st.booleans()):
        absent.add("t")
    return RangeOracle(stats, frozenset(absent))


def _membership_oracle(group) -> MembershipOracle:
    def probe_for(column):
        present = {value_key(row[column]) for row in group if row[column] is not None}
        return lambda values: any(value_key(v) in present for v in values)

    return MembershipOracle({column: probe_for(column) for column in ORDERED})


def _text_oracle(group) -> TextOracle:
    token_sets = [_tokens(row["t"]) for row in group if row["t"] is not None]

    def probe(column, terms):
        if column != "t":
            return None
        return any(set(terms) <= tokens for tokens in token_sets)

    return TextOracle(probe)


@settings(max_examples=examples(400))
@given(PREDICATES, row_groups(), st.data())
def test_no_row_group_with_a_matching_row_is_pruned(pred, groups, data):
    nnf = to_nnf(pred)
    for group in groups:
        if not any(evaluate_row(pred, row) for row in group):
            continue
        ranges = data.draw(range_oracles(group))
        membership, text = _membership_oracle(group), _text_oracle(group)
        assert may_match(nnf, ranges), (describe(nnf), group, ranges)
        assert may_match(nnf, membership), (describe(nnf), group)
        assert may_match(nnf, text), (describe(nnf), group)
        assert may_match(nnf, CombinedOracle((ranges, membership, text))), (describe(nnf), group)


@given(ATOMS, ROWS)
def test_one_row_ranges_answer_comparisons_exactly(atom, row):
    # With exact statistics of a single row, comparisons, IN and IS NULL prune exactly the non-matching row
    # (NaN is left out: min/max cannot describe it).
    atom = to_nnf(atom)
    if not isinstance(atom, Compare | InList | IsNull) or atom.column not in ORDERED:
        return
    if isinstance(row[atom.column], float) and math.isnan(row[atom.column]):
        return
    oracle = RangeOracle({c: _column_range([row[c]], True, True) for c in ORDERED})
    assert may_match(atom, oracle) == evaluate_row(atom, row), (describe(atom), row)


# --- pruning happens --------------------------------------------------------------------------------------------

RG = RangeOracle({
    "i": ColumnRange(10, 20, 0, 100),
    "f": ColumnRange(-1.5, 2.5, 3, 100, 0),
    "g": ColumnRange(0.0, 1.0, 0, 100),  # NaN count unknown
    "s": ColumnRange("apple", "apricot", 0, 100),
    "one": ColumnRange("x", "x", 5, 100),
    "nulls": ColumnRange(None, None, 100, 100),
    "dense": ColumnRange(1, 9, 0, 100),
}, frozenset({"gone"}))


@pytest.mark.parametrize(("pred", "expected"), [
    (Compare("i", "=", 5), False),
    (Compare("i", "=", 15), True),
    (Compare("i", ">", 20), False),
    (Compare("i", ">=", 20), True),
    (Compare("i", "<", 10), False),
    (Compare("i", "<=", 10), True),
    (Compare("i", "!=", 15), True),
    (Compare("one", "!=", "x"), False),
    (Compare("one", "!=", "y"), True),
    (InList("i", (1, 2, 30)), False),
    (InList("i", (1, 12)), True),
    (InList("one", ("x", "y"), True), False),
    (InList("i", (10, 11), True), True),
    (Compare("f", ">", 2.5), False),
    (Compare("f", "=", math.nan), False),
    # NaN may be present: it is above every number and equal to NaN.
    (Compare("g", ">", 5.0), True),
    (Compare("g", "=", math.nan), True),
    (Compare("g", "<", -1.0), False),
    (Compare("s", "<", "apple"), False),
    (Compare("s", ">", "apricot"), False),
    (Compare("s", "=", "apricoa"), True),
    (Like("s", "ap%"), True),
    (Like("s", "apz%"), False),
    (Like("s", "b%"), False),
    (Like("s", "a%"), True),
    (Like("s", "aa%"), False),
    (Like("s", "appl_"), True),
    (Like("s", "banana"), False),
    (Like("s", "%z"), True),
    (Like("s", "ap%", True), False),
    (Like("s", "app%", True), True),
    (Like("one", "x", True), False),
    (IsNull("i"), False),
    (IsNull("one"), True),
    (IsNull("nulls", True), False),
    (IsNull("nulls"), True),
    (Compare("nulls", "=", 1), False),
    (TextMatch("nulls", ("a",)), False),
    (IsNull("gone"), True),
    (IsNull("gone", True), False),
    (Compare("gone", "!=", 1), False),
    (Compare("unknown_column", "=", 1), True),
    (Compare("i", "=", "text"), True),
    (Compare("i", "=", None), False),
    (And((Compare("i", ">", 15), Compare("s", "=", "banana"))), False),
    (Or((Compare("i", ">", 25), Compare("s", "=", "banana"))), False),
    (Or((Compare("i", ">", 25), Compare("s", "=", "apple"))), True),
    (Unknown("a + b > 3"), True),
    (Not(Compare("i", "=", 5)), True),
])
def test_range_oracle(pred, expected):
    assert may_match(pred, RG) is expected


def test_row_group_outside_the_range_is_pruned():
    groups = [ColumnRange(0, 99, 0, 100), ColumnRange(100, 199, 0, 100), ColumnRange(200, 299, 0, 100)]
    pred = to_nnf(And((Compare("ts", ">=", 120), Compare("ts", "<", 150))))
    assert [may_match(pred, RangeOracle({"ts": g})) for g in groups] == [False, True, False]


def test_split_statistics_become_ranges():
    stats = ColumnStats("ts", "i64", 1_000, 2_000, 0)
    oracle = RangeOracle({"ts": ColumnRange.from_column_stats(stats, 10)})
    assert not may_match(Compare("ts", ">", 2_000), oracle)
    assert may_match(Compare("ts", "=", 1_500), oracle)
    empty = ColumnRange.from_column_stats(ColumnStats("m", "null", None, None, 10), 10)
    assert not may_match(IsNull("m", True), RangeOracle({"m": empty}))
    # A boolean column's stats are 0/1.
    flags = ColumnRange.from_column_stats(ColumnStats("b", "i64", 0, 0, 0), 10)
    assert not may_match(Compare("b", "=", True), RangeOracle({"b": flags}))


def test_membership_oracle():
    oracle = MembershipOracle({"host": lambda values: "a" in values})
    assert may_match(Compare("host", "=", "a"), oracle)
    assert not may_match(Compare("host", "=", "b"), oracle)
    assert not may_match(InList("host", ("b", "c")), oracle)
    assert may_match(InList("host", ("b", "a")), oracle)
    # Only = and IN: anything else, or a column without a probe, may match.
    assert may_match(InList("host", ("b",), True), oracle)
    assert may_match(Compare("host", "!=", "a"), oracle)
    assert may_match(Compare("other", "=", "b"), oracle)
    assert not may_match(And((Compare("other", "=", 1), Compare("host", "=", "z"))), oracle)


def test_text_oracle():
    oracle = TextOracle(lambda column, terms: None if column != "msg" else set(terms) <= {"disk", "full"})
    assert may_match(TextMatch("msg", ("disk",)), oracle)
    assert not may_match(TextMatch("msg", ("disk", "error")), oracle)
    assert may_match(TextMatch("other", ("error",)), oracle)
    assert may_match(to_nnf(Not(TextMatch("msg", ("disk", "full")))), oracle)


def test_combined_oracle_prunes_when_any_oracle_rules_an_atom_out():
    ranges = RangeOracle({"i": ColumnRange(0, 10, 0, 5)})
    membership = MembershipOracle({"i": lambda values: 3 in values})
    both = CombinedOracle((ranges, membership))
    assert not may_match(Compare("i", "=", 4), both)
    assert not may_match(Compare("i", "=", 40), both)
    assert may_match(Compare("i", "=", 3), both)
