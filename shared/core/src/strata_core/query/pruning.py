"""May a unit (a split, a row group) hold a row matching the predicate? Pruning must never drop a matching row.

`may_match` walks a predicate in negation normal form: AND needs every child to be possible, OR any child, and each
atom is put to an oracle that knows something about the unit (its min/max, a bloom filter, a full-text index) and
answers True whenever it cannot rule the atom out. Because an NNF predicate is monotone in its atoms, conservative
atoms make a conservative answer. Several oracles about the same unit combine with `CombinedOracle`: an atom is
possible only if every oracle allows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.split import SplitSummary
from strata_core.query.predicate import (
    NAN_KEY,
    Atom,
    Compare,
    InList,
    IsNull,
    Like,
    Predicate,
    PredicateVisitor,
    TextMatch,
    Unknown,
    Value,
    compare_keys,
    like_shape,
    order_key,
    visit,
)


class Oracle(Protocol):
    def may_satisfy(self, atom: Atom) -> bool:
        """False only when no row of the unit can make the atom TRUE."""
        ...


def may_match(pred: Predicate, oracle: Oracle) -> bool:
    """False only when no row of the unit can match `pred` (which should be in negation normal form)."""
    return visit(pred, _MayMatch(oracle))


class _MayMatch(PredicateVisitor[bool]):
    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle

    def visit_const(self, value: bool) -> bool:
        return value

    def visit_and(self, results: Iterator[bool]) -> bool:
        return all(results)

    def visit_or(self, results: Iterator[bool]) -> bool:
        return any(results)

    def visit_not(self, result: bool) -> bool:
        # A NOT outside NNF is not monotone: nothing can be concluded from its operand.
        return True

    def visit_unknown(self, pred: Unknown) -> bool:
        return True

    def visit_atom(self, atom: Atom) -> bool:
        if isinstance(atom, Compare) and atom.value is None:
            return False
        return self.oracle.may_satisfy(atom)


@dataclass(frozen=True, slots=True)
class CombinedOracle:
    oracles: tuple[Oracle, ...]

    def may_satisfy(self, atom: Atom) -> bool:
        return all(oracle.may_satisfy(atom) for oracle in self.oracles)


# --- min/max ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnRange:
    """What is known of one column in one unit. Contract: every non-null value v that is not NaN satisfies
    min <= v <= max (min/max None: unknown, or no such value). Counts are None when unknown. NaN is never in
    min/max (Parquet writers leave it out), so for a float column `nan_count` says whether NaN may be there."""

    min: Value | None = None
    max: Value | None = None
    null_count: int | None = None
    num_rows: int | None = None
    nan_count: int | None = None

    @classmethod
    def from_column_stats(cls, stats: ColumnStats, num_rows: int) -> ColumnRange:
        """A split's statistics as a range (timestamps are microseconds, booleans 0/1, as the stats store them)."""
        if stats.value_type == "null":
            return cls(None, None, stats.null_count, num_rows)
        return cls(stats.min_value, stats.max_value, stats.null_count, num_rows)

    @property
    def all_null(self) -> bool:
        return self.null_count is not None and self.num_rows is not None and self.null_count >= self.num_rows

    @property
    def may_have_nan(self) -> bool:
        is_float = isinstance(self.min, float) or isinstance(self.max, float)
        return is_float and self.nan_count != 0


@dataclass(frozen=True, slots=True)
class RangeOracle:
    """Answers comparisons, IN, IS [NOT] NULL and LIKE from per-column min/max and null counts: split statistics
    or a row group's zone map. A column without a range is unknown; a column in `absent_columns` is known to be
    missing from the unit, so it reads as all nulls."""

    stats: Mapping[str, ColumnRange]
    absent_columns: frozenset[str] = field(default_factory=frozenset)

    def may_satisfy(self, atom: Atom) -> bool:
        if atom.column in self.absent_columns:
            return isinstance(atom, IsNull) and not atom.negated
        column = self.stats.get(atom.column)
        if column is None:
            return True
        if isinstance(atom, IsNull):
            if atom.negated:
                return not column.all_null
            return column.null_count is None or column.null_count > 0
        if column.all_null:
            # NULL satisfies no comparison, IN, LIKE or text match.
            return False
        if column.min is None or column.max is None:
            return True
        try:
            return _may_satisfy_range(atom, column)
        except TypeError:
            # A value of another type than the statistics: nothing can be concluded.
            return True


def _may_satisfy_range(atom: Atom, column: ColumnRange) -> bool:
    low = order_key(column.min)  # type: ignore[arg-type]
    # NaN sorts above every number, so a possible NaN lifts the upper bound to NaN.
    high = NAN_KEY if column.may_have_nan else order_key(column.max)  # type: ignore[arg-type]
    match atom:
        case Compare(_, op, value):
            return _compare_possible(low, high, op, order_key(value))  # type: ignore[arg-type]
        case InList(_, values, negated):
            keys = [order_key(v) for v in values if v is not None]
            if negated:
                if len(keys) < len(values):
                    return False
                # Ruled out only when every value is one listed value.
                return not (low == high and low in keys)
            return any(low <= key <= high for key in keys)
        case Like(_, pattern, negated):
            if not isinstance(column.min, str) or not isinstance(column.max, str):
                return True
            return _like_possible(column.min, column.max, pattern, negated)
    return True


def _compare_possible(low: tuple[int, Value], high: tuple[int, Value], op: str, key: tuple[int, Value]) -> bool:
    match op:
        case "=":
            return low <= key <= high
        case "!=":
            return not (low == high == key)
        case "<" | "<=":
            return compare_keys(low, op, key)
        case ">" | ">=":
            return compare_keys(high, op, key)
    raise ValueError(f"unknown comparison operator {op!r}")


def _like_possible(low: str, high: str, pattern: str, negated: bool) -> bool:
    shape = like_shape(pattern)
    prefix = shape.prefix
    if shape.kind == "exact":
        op = "!=" if negated else "="
        return _compare_possible(order_key(low), order_key(high), op, order_key(prefix))
    if negated:
        # NOT LIKE 'p%' fails on every value starting with p; the strings starting with p form one interval, so
        # when both bounds start with p every value does.
        return not (shape.kind == "prefix" and low.startswith(prefix) and high.startswith(prefix))
    if not prefix:
        return True
    if high < prefix:
        return False
    # Above p without starting with p means above every string that starts with p.
    return not (low > prefix and not low.startswith(prefix))


def split_may_match(pred: Predicate, split: SplitSummary,
                    constants: Mapping[str, Callable[[SplitSummary], Value]]) -> bool:
    """May the split hold a matching row, by its stored statistics and its metadata columns (`constants`: one
    value per split, e.g. its partition)? The reference that `strata_metastore.split_pruning` writes in
    SQL."""
    stats = {name: ColumnRange.from_column_stats(st, split.num_rows) for name, st in split.column_stats.items()}
    for name, value_of in constants.items():
        value = value_of(split)
        stats[name] = ColumnRange(value, value, 0, split.num_rows)
    return may_match(pred, RangeOracle(stats))


# --- membership (blooms, bitmaps) and full text -----------------------------------------------------------------

MembershipProbe = Callable[[tuple[Value, ...]], bool]


@dataclass(frozen=True, slots=True)
class MembershipOracle:
    """Answers `=` and IN on the columns it has a probe for (a bloom filter, a bitmap's value set). A probe gets
    the non-null values asked for and returns False only when none of them can be present in the unit."""

    probes: Mapping[str, MembershipProbe]

    def may_satisfy(self, atom: Atom) -> bool:
        probe = self.probes.get(atom.column)
        if probe is None:
            return True
        match atom:
            case Compare(_, "=", value) if value is not None:
                return probe((value,))
            case InList(_, values, False):
                present = tuple(v for v in values if v is not None)
                return bool(present) and probe(present)
        return True


TextProbe = Callable[[str, tuple[str, ...]], "bool | None"]


@dataclass(frozen=True, slots=True)
class TextOracle:
    """Answers text_match atoms from a full-text index: the probe gets (column, terms) and returns False when no
    row of the unit has every term as a token, None when it does not know (e.g. the column is not indexed)."""

    probe: TextProbe

    def may_satisfy(self, atom: Atom) -> bool:
        if isinstance(atom, TextMatch):
            return self.probe(atom.column, atom.terms) is not False
        return True
