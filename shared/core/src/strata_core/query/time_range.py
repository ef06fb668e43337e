"""The time range a predicate allows on the index's timestamp column.

Ranges are in the column's own unit (seconds for an i64 epoch-seconds column, microseconds for a `timestamp`
column) and, both units being integers, are sorted disjoint intervals with inclusive bounds. The extraction is
conservative: every row the predicate matches has its timestamp inside the ranges (or a null timestamp, when
`includes_null`), never the other way round.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from strata_core.query.predicate import (
    Atom,
    Compare,
    InList,
    IsNull,
    Predicate,
    PredicateVisitor,
    Unknown,
    Value,
    to_nnf,
    visit,
)


@dataclass(frozen=True, slots=True)
class Interval:
    """[lo, hi], both inclusive; None is unbounded on that side."""

    lo: int | None
    hi: int | None

    def contains(self, value: int) -> bool:
        return (self.lo is None or self.lo <= value) and (self.hi is None or value <= self.hi)

    def overlaps(self, lo: int | None, hi: int | None) -> bool:
        return (self.lo is None or hi is None or self.lo <= hi) and (self.hi is None or lo is None or lo <= self.hi)


_EVERYTHING = (Interval(None, None),)


@dataclass(frozen=True, slots=True)
class TimeRanges:
    """A union of intervals (sorted, disjoint, not adjacent). No interval: provably no row with a non-null
    timestamp matches. `includes_null`: a row whose timestamp is null may match (such rows live in window 0)."""

    intervals: tuple[Interval, ...]
    includes_null: bool = False

    @classmethod
    def everything(cls) -> TimeRanges:
        return cls(_EVERYTHING, True)

    @classmethod
    def nothing(cls) -> TimeRanges:
        return cls((), False)

    @classmethod
    def of(cls, intervals: Iterable[Interval], includes_null: bool = False) -> TimeRanges:
        return cls(_normalize(intervals), includes_null)

    @property
    def bounded(self) -> bool:
        """Whether the predicate restricts the timestamp at all (False: apply the default lookback)."""
        return self.intervals != _EVERYTHING

    @property
    def lower(self) -> int | None:
        """The smallest timestamp allowed; None when unbounded below or when nothing is allowed."""
        return self.intervals[0].lo if self.intervals else None

    @property
    def upper(self) -> int | None:
        """The largest timestamp allowed; None when unbounded above or when nothing is allowed."""
        return self.intervals[-1].hi if self.intervals else None

    @property
    def is_empty(self) -> bool:
        return not self.intervals and not self.includes_null

    def contains(self, value: int | None) -> bool:
        if value is None:
            return self.includes_null
        return any(interval.contains(value) for interval in self.intervals)

    def overlaps(self, lo: int | None, hi: int | None) -> bool:
        """Whether any allowed timestamp lies in [lo, hi] (e.g. a split's time range)."""
        return any(interval.overlaps(lo, hi) for interval in self.intervals)

    def intersect(self, other: TimeRanges) -> TimeRanges:
        return intersect_all((self, other))

    def union(self, other: TimeRanges) -> TimeRanges:
        return union_all((self, other))

    def coarsen(self, divisor: int) -> TimeRanges:
        """The ranges in a unit `divisor` times coarser (e.g. 1_000_000 turns microseconds into seconds), each
        bound rounded outward so that nothing allowed is lost."""
        return TimeRanges.of(
            (Interval(None if i.lo is None else i.lo // divisor, None if i.hi is None else i.hi // divisor)
             for i in self.intervals),
            self.includes_null,
        )


def union_all(ranges: Iterable[TimeRanges]) -> TimeRanges:
    """The union of any number of ranges, with one sort (folding them two at a time would sort n times)."""
    intervals: list[Interval] = []
    includes_null = False
    for each in ranges:
        intervals.extend(each.intervals)
        includes_null = includes_null or each.includes_null
    return TimeRanges.of(intervals, includes_null)


def intersect_all(ranges: Iterable[TimeRanges]) -> TimeRanges:
    """The intersection of any number of ranges, as the complement of the union of their complements: one sort
    however many there are (intersecting two at a time made `ts != 1 AND ... AND ts != n` quadratic)."""
    excluded: list[Interval] = []
    includes_null = True
    for each in ranges:
        excluded.extend(_complement(each.intervals))
        includes_null = includes_null and each.includes_null
    return TimeRanges(_complement(_normalize(excluded)), includes_null)


def _complement(intervals: tuple[Interval, ...]) -> tuple[Interval, ...]:
    """The integers outside normalized intervals, normalized (the gaps are never empty, for the intervals are
    neither overlapping nor adjacent)."""
    gaps: list[Interval] = []
    start: int | None = None  # where the next gap begins; None: unbounded below
    for interval in intervals:
        if interval.lo is not None:
            gaps.append(Interval(start, interval.lo - 1))
        if interval.hi is None:
            return tuple(gaps)
        start = interval.hi + 1
    gaps.append(Interval(start, None))
    return tuple(gaps)


def _normalize(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    ordered = sorted(intervals, key=lambda i: (i.lo is not None, i.lo if i.lo is not None else 0))
    merged: list[Interval] = []
    for interval in ordered:
        if interval.lo is not None and interval.hi is not None and interval.lo > interval.hi:
            continue
        if merged:
            last = merged[-1]
            # Integers: [1, 3] and [4, 9] already cover [1, 9].
            if last.hi is None or interval.lo is None or interval.lo <= last.hi + 1:
                hi = None if last.hi is None or interval.hi is None else max(last.hi, interval.hi)
                merged[-1] = Interval(last.lo, hi)
                continue
        merged.append(interval)
    return tuple(merged)


def extract_time_range(pred: Predicate, timestamp_column: str) -> TimeRanges:
    """The timestamps (in the column's unit) a row matching `pred` can have."""
    return visit(to_nnf(pred), _TimeRangesOf(timestamp_column))


class _TimeRangesOf(PredicateVisitor[TimeRanges]):
    def __init__(self, column: str) -> None:
        self.column = column

    def visit_const(self, value: bool) -> TimeRanges:
        return TimeRanges.everything() if value else TimeRanges.nothing()

    def visit_and(self, results: Iterator[TimeRanges]) -> TimeRanges:
        return intersect_all(results)

    def visit_or(self, results: Iterator[TimeRanges]) -> TimeRanges:
        return union_all(results)

    def visit_unknown(self, pred: Unknown) -> TimeRanges:
        return TimeRanges.everything()

    def visit_atom(self, atom: Atom) -> TimeRanges:
        if atom.column != self.column:
            # A condition on another column says nothing about the timestamp, nor about it being null.
            return TimeRanges.everything()
        match atom:
            case IsNull(_, negated):
                return TimeRanges(_EVERYTHING, False) if negated else TimeRanges((), True)
            case Compare(_, op, value):
                return _compare_ranges(op, value)
            case InList(_, values, negated):
                return _in_list_ranges(values, negated)
        # Any other condition on the timestamp column is not TRUE on a null timestamp, but bounds nothing.
        return TimeRanges(_EVERYTHING, False)


def _integral(value: Value | None) -> int | None:
    """The value as an integer timestamp, None when it is not a whole number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _compare_ranges(op: str, value: Value | None) -> TimeRanges:
    if value is None:
        return TimeRanges.nothing()
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and math.isnan(value)):
        # Not a number on the timestamp column: leave the comparison to the execution.
        return TimeRanges(_EVERYTHING, False)
    if isinstance(value, float) and math.isinf(value):
        # Every finite timestamp is below +inf and above -inf.
        allows_all = op in (("<", "<=", "!=") if value > 0 else (">", ">=", "!="))
        return TimeRanges(_EVERYTHING if allows_all else (), False)
    whole = _integral(value)
    # For a fractional bound, the nearest integers inside it.
    floor, ceil = (whole, whole) if whole is not None else (math.floor(value), math.ceil(value))
    match op:
        case "=":
            return TimeRanges.of([Interval(whole, whole)] if whole is not None else [])
        case "!=":
            if whole is None:
                return TimeRanges(_EVERYTHING, False)
            return TimeRanges.of([Interval(None, whole - 1), Interval(whole + 1, None)])
        case "<":
            return TimeRanges.of([Interval(None, ceil - 1)])
        case "<=":
            return TimeRanges.of([Interval(None, floor)])
        case ">":
            return TimeRanges.of([Interval(floor + 1, None)])
        case ">=":
            return TimeRanges.of([Interval(ceil, None)])
    raise ValueError(f"unknown comparison operator {op!r}")


def _in_list_ranges(values: tuple[Value | None, ...], negated: bool) -> TimeRanges:
    if negated:
        if any(v is None for v in values):
            return TimeRanges.nothing()
        return intersect_all([TimeRanges(_EVERYTHING, False), *(_compare_ranges("!=", v) for v in values)])
    return union_all(_compare_ranges("=", value) for value in values)
