"""Time-range extraction: a table of WHERE shapes, and the property that no matching row falls outside."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.query.predicate import (
    FALSE,
    TRUE,
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
)
from strata_core.query.time_range import Interval, TimeRanges, extract_time_range, intersect_all, union_all
from tests.helpers import examples
from tests.query_logic.strategies import PREDICATES, ROWS

N = None
ALL = [(N, N)]


def ts(op, value):
    return Compare("ts", op, value)


def between(lo, hi):
    # BETWEEN arrives lowered to two comparisons.
    return And((ts(">=", lo), ts("<=", hi)))


OTHER = Compare("host", "=", "a")

CASES = [
    # (name, predicate, intervals, includes_null)
    ("no predicate", TRUE, ALL, True),
    ("false", FALSE, [], False),
    ("other column only", OTHER, ALL, True),
    ("unknown only", Unknown("a + b > 3"), ALL, True),
    ("ge", ts(">=", 10), [(10, N)], False),
    ("gt", ts(">", 10), [(11, N)], False),
    ("le", ts("<=", 10), [(N, 10)], False),
    ("lt", ts("<", 10), [(N, 9)], False),
    ("eq", ts("=", 10), [(10, 10)], False),
    ("ne", ts("!=", 10), [(N, 9), (11, N)], False),
    ("between", between(10, 20), [(10, 20)], False),
    ("half open", And((ts(">=", 10), ts("<", 20))), [(10, 19)], False),
    ("empty between", between(20, 10), [], False),
    ("contradiction", And((ts("<", 5), ts(">", 5))), [], False),
    ("in", InList("ts", (30, 10, 20)), [(10, 10), (20, 20), (30, 30)], False),
    ("in adjacent points merge", InList("ts", (3, 1, 2)), [(1, 3)], False),
    ("in with null", InList("ts", (5, None)), [(5, 5)], False),
    ("not in", InList("ts", (5, 7), True), [(N, 4), (6, 6), (8, N)], False),
    ("not in with null", InList("ts", (5, None), True), [], False),
    ("eq null", ts("=", None), [], False),
    ("is null", IsNull("ts"), [], True),
    ("is not null", IsNull("ts", True), ALL, False),
    ("and other column", And((between(10, 20), OTHER)), [(10, 20)], False),
    ("and unknown", And((Unknown("x"), ts(">", 0))), [(1, N)], False),
    ("nested and", And((ts(">=", 0), And((ts("<", 100), And((ts(">", 10), OTHER)))))), [(11, 99)], False),
    ("or of ranges", Or((between(0, 10), between(20, 30))), [(0, 10), (20, 30)], False),
    ("or overlapping", Or((between(0, 10), between(5, 30))), [(0, 30)], False),
    ("or adjacent", Or((between(0, 10), between(11, 30))), [(0, 30)], False),
    ("or with unbounded branch", Or((between(0, 10), OTHER)), ALL, True),
    ("or with unknown branch", Or((between(0, 10), Unknown("f(x)"))), ALL, True),
    ("or with is null", Or((between(0, 10), IsNull("ts"))), [(0, 10)], True),
    ("and of ors", And((Or((between(0, 10), between(20, 30))), Or((between(5, 25), ts("=", 40))))),
     [(5, 10), (20, 25)], False),
    ("or of ands with other column", Or((And((between(0, 10), OTHER)), And((between(20, 30), OTHER)))),
     [(0, 10), (20, 30)], False),
    ("not between", Not(between(10, 20)), [(N, 9), (21, N)], False),
    ("not ge", Not(ts(">=", 10)), [(N, 9)], False),
    ("not or", Not(Or((ts("<", 10), ts(">", 20)))), [(10, 20)], False),
    ("not and with other", Not(And((ts(">=", 10), OTHER))), ALL, True),
    ("not is null", Not(IsNull("ts")), ALL, False),
    ("not in via not", Not(InList("ts", (1,))), [(N, 0), (2, N)], False),
    ("like on timestamp", Like("ts", "1%"), ALL, False),
    ("text match elsewhere", And((TextMatch("msg", ("disk",)), between(1, 2))), [(1, 2)], False),
    ("fractional gt", ts(">", 1.5), [(2, N)], False),
    ("fractional le", ts("<=", 1.5), [(N, 1)], False),
    ("fractional eq", ts("=", 1.5), [], False),
    ("fractional ne", ts("!=", 1.5), ALL, False),
    ("integral float", ts("=", 4.0), [(4, 4)], False),
    ("plus infinity", ts("<", math.inf), ALL, False),
    ("minus infinity", ts("<", -math.inf), [], False),
    ("nan", ts(">", math.nan), ALL, False),
    ("negative range", between(-20, -10), [(-20, -10)], False),
    ("microseconds", between(1_767_225_600_000_000, 1_767_229_199_999_999),
     [(1_767_225_600_000_000, 1_767_229_199_999_999)], False),
]


@pytest.mark.parametrize(("pred", "intervals", "includes_null"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_time_range_table(pred, intervals, includes_null):
    ranges = extract_time_range(pred, "ts")
    assert ranges == TimeRanges(tuple(Interval(lo, hi) for lo, hi in intervals), includes_null), describe(pred)


def test_bounded_and_bounds():
    assert not extract_time_range(OTHER, "ts").bounded
    assert not extract_time_range(IsNull("ts", True), "ts").bounded
    window = extract_time_range(Or((between(0, 10), between(20, 30))), "ts")
    assert window.bounded and (window.lower, window.upper) == (0, 30)
    assert extract_time_range(ts(">=", 5), "ts").upper is None
    assert extract_time_range(FALSE, "ts").is_empty


def test_overlaps_and_coarsen():
    micros = extract_time_range(between(1_500_000, 2_000_001), "ts")
    assert micros.coarsen(1_000_000).intervals == (Interval(1, 2),)
    assert micros.overlaps(2_000_001, 9_000_000)
    assert not micros.overlaps(2_000_002, None)
    assert micros.overlaps(None, 1_500_000)
    assert not micros.overlaps(None, 1_499_999)


@settings(max_examples=examples(400))
@given(PREDICATES, st.lists(ROWS, min_size=1, max_size=10))
def test_every_matching_row_lies_inside_the_ranges(pred, rows):
    ranges = extract_time_range(pred, "ts")
    for row in rows:
        if evaluate_row(pred, row):
            assert ranges.contains(row["ts"]), (describe(pred), row, ranges)


def test_a_long_chain_of_exclusions_is_every_gap():
    # Intersected all at once (complement of the union of complements), not two at a time.
    pred = And(tuple(ts("!=", 10 * i) for i in range(2000)))
    expected = [Interval(None, -1), *(Interval(10 * i + 1, 10 * i + 9) for i in range(1999)), Interval(19991, None)]
    assert extract_time_range(pred, "ts") == TimeRanges(tuple(expected), False)
    assert extract_time_range(InList("ts", tuple(range(0, 20000, 10)), True), "ts") == TimeRanges(tuple(expected))
    points = extract_time_range(Or(tuple(ts("=", 10 * i) for i in range(2000))), "ts")
    assert points == TimeRanges(tuple(Interval(10 * i, 10 * i) for i in range(2000)))


_SMALL = st.one_of(st.none(), st.integers(-6, 6))
_RANGES = st.builds(TimeRanges.of, st.lists(st.builds(Interval, _SMALL, _SMALL), max_size=4), st.booleans())


@settings(max_examples=examples(300))
@given(st.lists(_RANGES, max_size=4))
def test_intersect_and_union_of_many_are_the_set_operations(many):
    both = intersect_all(many)
    either = union_all(many)
    for value in [None, *range(-9, 10)]:
        assert both.contains(value) == all(r.contains(value) for r in many)
        assert either.contains(value) == any(r.contains(value) for r in many)
    # Normalized: sorted, disjoint and not adjacent, so equal sets are equal values.
    for ranges in (both, either):
        assert TimeRanges.of(ranges.intervals, ranges.includes_null) == ranges
