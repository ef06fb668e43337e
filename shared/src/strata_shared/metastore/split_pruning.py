"""Split-level min/max pruning as a SQL condition, so PostgreSQL drops the splits that cannot match before their rows
leave the server (a query over a busy range has hundreds of candidates and keeps a few).

The reference is `strata_shared.query.pruning.RangeOracle` over each split's statistics (`may_match`); this is the
same rule written against `split_column_stats`, with one requirement: it never rules out a split the reference
keeps (tests/shared/test_split_pruning_sql.py checks it against real PostgreSQL on random statistics and
predicates). Where the SQL could disagree with Python on an edge (a literal of another type than the statistics, a
string PostgreSQL cannot hold, an integer a float cannot represent exactly, NaN or infinity against integers), it
keeps the split instead, and the caller runs the reference on the survivors, so the plan is exactly the one the
reference alone would make.

Ordering follows the reference: strings compare by code point (COLLATE "C" on UTF-8 is byte order, which is code
point order), integers exactly (as numeric), floats as float8 (PostgreSQL, like Spark, puts NaN above every
number). A float column's statistics carry no NaN count, so the reference assumes NaN may be present and never
prunes such a column from above; neither does this.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy import Double, Numeric, Text, and_, cast, false, func, literal, not_, or_, true
from sqlalchemy.sql.elements import ColumnElement

from strata_shared.query.predicate import (
    And,
    Compare,
    Const,
    InList,
    IsNull,
    Like,
    Not,
    Or,
    Predicate,
    TextMatch,
    Unknown,
    Value,
    like_shape,
)

KINDS = ("string", "i64", "u64", "f64")
# Integers beyond this are not all exact as float8: against a float column they are left to the reference.
_FLOAT_EXACT = 2**53


@dataclass(frozen=True)
class ColumnSource:
    """Where one column's statistics of a split are in the statement.

    present: TRUE when the split has statistics for the column (else nothing is known: the split is kept).
    value_type: an expression, or a constant kind when every split has the same (a metadata column).
    bounds: (min, max) per value kind.
    """

    present: ColumnElement[bool]
    value_type: ColumnElement | str
    bounds: Mapping[str, tuple[ColumnElement, ColumnElement]]
    null_count: ColumnElement
    num_rows: ColumnElement


def stats_source(stats, num_rows: ColumnElement) -> ColumnSource:
    """A column's statistics from `stats`, an alias of split_column_stats joined (LEFT) on split and column."""
    return ColumnSource(
        present=stats.c.split_id.is_not(None), value_type=stats.c.value_type,
        bounds={kind: (stats.c[f"min_{kind}"], stats.c[f"max_{kind}"]) for kind in KINDS},
        null_count=stats.c.null_count, num_rows=num_rows)


def constant_source(value: ColumnElement, num_rows: ColumnElement) -> ColumnSource:
    """A metadata column with one string value per split (as the reference's constant columns: min = max = the
    value, no nulls)."""
    return ColumnSource(present=true(), value_type="string", bounds={"string": (value, value)},
                        null_count=literal(0), num_rows=num_rows)


def may_match_sql(pred: Predicate, columns: Mapping[str, ColumnSource]) -> ColumnElement[bool]:
    """FALSE only where `may_match(pred, RangeOracle(split statistics))` is False; never NULL. `pred` in NNF."""
    match pred:
        case Const(value):
            return true() if value else false()
        case And(children):
            return and_(*(may_match_sql(child, columns) for child in children))
        case Or(children):
            return or_(*(may_match_sql(child, columns) for child in children))
        case Unknown() | Not():
            return true()
        case Compare(_, _, None):
            return false()
    source = columns.get(pred.column)
    if source is None:
        return true()
    rule = _rules_out(pred, source)
    if rule is None:
        return true()
    # coalesce: a NULL anywhere in the rule (no statistics row, no bound) must keep the split.
    return or_(not_(source.present), not_(func.coalesce(rule, false())))


def _rules_out(atom: Predicate, source: ColumnSource) -> ColumnElement[bool] | None:
    """TRUE when the statistics prove no row of the split satisfies `atom` (None: they never can)."""
    all_null = source.null_count >= source.num_rows
    if isinstance(atom, IsNull):
        return all_null if atom.negated else source.null_count <= 0
    typed = []
    for kind, (low, high) in source.bounds.items():
        if isinstance(source.value_type, str) and source.value_type != kind:
            continue
        rule = _typed_rule(atom, kind, low, high)
        if rule is None:
            continue
        is_kind = true() if isinstance(source.value_type, str) else source.value_type == kind
        typed.append(and_(is_kind, low.is_not(None), high.is_not(None), rule))
    # No comparison, IN, LIKE or text match holds on NULL: an all-null column rules out every such atom.
    return or_(all_null, *typed)


def _typed_rule(atom: Predicate, kind: str, low: ColumnElement, high: ColumnElement) -> ColumnElement | None:
    """The reference's `_may_satisfy_range`, negated, for statistics of one kind; None where it is not sure."""
    if kind == "string":
        low, high = low.collate("C"), high.collate("C")
    elif kind in ("i64", "u64"):
        low, high = cast(low, Numeric), cast(high, Numeric)
    # A float column may hold NaN (the statistics do not say): its upper bound is NaN, above everything.
    bounded_above = kind != "f64"
    match atom:
        case Compare(_, op, value):
            key = _literal(value, kind)
            return None if key is None else _compare_rules_out(op, low, high, key, bounded_above)
        case InList(_, values, negated):
            if negated:
                if any(v is None for v in values):
                    return true()
                if not bounded_above or not values:
                    return None
                keys = [_literal(v, kind) for v in values]
                if any(k is None for k in keys):
                    return None
                return and_(low == high, or_(*(low == k for k in keys)))
            keys = [_literal(v, kind) for v in values if v is not None]
            if any(k is None for k in keys):
                return None
            return and_(*(_outside(low, high, k, bounded_above) for k in keys)) if keys else true()
        case Like(_, pattern, negated):
            if kind != "string":
                return None
            shape = like_shape(pattern)
            prefix = _literal(shape.prefix, kind)
            if prefix is None:
                return None
            if shape.kind == "exact":
                return _compare_rules_out("!=" if negated else "=", low, high, prefix, bounded_above)
            if negated:
                if shape.kind != "prefix":
                    return None
                return and_(func.starts_with(low, prefix), func.starts_with(high, prefix))
            if not shape.prefix:
                return None
            return or_(high < prefix, and_(low > prefix, not_(func.starts_with(low, prefix))))
        case TextMatch():
            return None
    return None


def _outside(low: ColumnElement, high: ColumnElement, key: ColumnElement, bounded_above: bool) -> ColumnElement:
    return or_(key < low, key > high) if bounded_above else key < low


def _compare_rules_out(op: str, low: ColumnElement, high: ColumnElement, key: ColumnElement,
                       bounded_above: bool) -> ColumnElement | None:
    match op:
        case "=":
            return _outside(low, high, key, bounded_above)
        case "!=":
            return and_(low == high, low == key) if bounded_above else None
        case "<":
            return low >= key
        case "<=":
            return low > key
        case ">":
            return high <= key if bounded_above else None
        case ">=":
            return high < key if bounded_above else None
    return None


def _literal(value: Value | None, kind: str) -> ColumnElement | None:
    """The value as a bound literal comparable with statistics of `kind` exactly as Python compares them; None
    when Python would raise (other types) or when PostgreSQL could compare differently."""
    if value is None:
        return None
    if kind == "string":
        if not isinstance(value, str) or "\x00" in value:
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return literal(value, Text).collate("C")
    if isinstance(value, str):
        return None
    if kind == "f64":
        if isinstance(value, float):
            return literal(value, Double)
        if abs(int(value)) > _FLOAT_EXACT:
            return None
        return literal(float(value), Double)
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return literal(Decimal(value), Numeric)
    return literal(Decimal(int(value)), Numeric)
