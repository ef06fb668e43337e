"""Split-level min/max pruning as a SQL condition, so PostgreSQL drops the splits that cannot match before their rows
leave the server (a query over a busy range has hundreds of candidates and keeps a few).

The reference is `strata_core.query.pruning.RangeOracle` over each split's statistics (`may_match`); this is the
same rule written against `split_column_stats`, with one requirement: it never rules out a split the reference
keeps (tests/metastore/test_split_pruning_sql.py checks it against real PostgreSQL on random statistics and
predicates). Where the SQL could disagree with Python on an edge (a literal of another type than the statistics, a
string PostgreSQL cannot hold, an integer a float cannot represent exactly, NaN or infinity against integers), it
keeps the split instead, and the caller runs the reference on the survivors, so the plan is exactly the one the
reference alone would make.

Ordering follows the reference: strings compare by code point (COLLATE "C" on UTF-8 is byte order, which is code
point order), integers exactly (as numeric), floats as float8 (PostgreSQL, like Spark, puts NaN above every
number). A float column's statistics carry no NaN count, so the reference assumes NaN may be present and never
prunes such a column from above; neither does this.

The condition is SQL text with bound parameters, not an expression tree: a plan runs it once, and building a Core
tree of this size and its cache key took ~5 ms per plan for the bench's query (docs/benchmarks.md, EXPLAIN over
1,000,000 splits), more than PostgreSQL takes to evaluate it over 694 candidates; the text takes ~0.2 ms. Every
value is a parameter; only fixed names (aliases, columns, value kinds) are written in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from strata_core.query.predicate import (
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
    like_shape,
    visit,
)

KINDS = ("string", "i64", "u64", "f64")
# Integers beyond this are not all exact as float8: against a float column they are left to the reference.
_FLOAT_EXACT = 2**53
_CAST = {"string": 'CAST({} AS text) COLLATE "C"', "i64": "CAST({} AS numeric)", "u64": "CAST({} AS numeric)",
         "f64": "CAST({} AS float8)"}


@dataclass
class Params:
    """The bound values of a statement being written: `bind` names each one (`:p0`, SQLAlchemy's `text` style)."""

    values: dict[str, Any] = field(default_factory=dict)

    def bind(self, value: Any) -> str:
        name = f"p{len(self.values)}"
        self.values[name] = value
        return f":{name}"

    def numbered(self, sql: str) -> tuple[str, list[Any]]:
        """`sql` with its parameters numbered for asyncpg (`$1`, in order of first use) and their values. A value
        bound but left out of the text (a rule that bound its literal, then kept the split) is not sent, as
        SQLAlchemy's `text` would not send it: PostgreSQL could not type it."""
        order: dict[str, int] = {}

        def number(match: re.Match[str]) -> str:
            return f"${order.setdefault(match.group(1), len(order) + 1)}"

        return _NAMED.sub(number, sql), [self.values[name] for name in order]


_NAMED = re.compile(r"(?<![:\w]):(p\d+)\b")


@dataclass(frozen=True)
class ColumnSource:
    """Where one column's statistics of a split are in the statement (SQL expressions over its aliases).

    present: TRUE when the split has statistics for the column (else nothing is known: the split is kept).
    value_type: an expression, or None when every split has the one kind of `bounds` (a metadata column).
    bounds: (min, max) per value kind.
    """

    present: str
    value_type: str | None
    bounds: Mapping[str, tuple[str, str]]
    null_count: str
    num_rows: str


def stats_source(alias: str, num_rows: str) -> ColumnSource:
    """A column's statistics from `alias`, split_column_stats joined (LEFT) on the split and the column."""
    return ColumnSource(present=f"{alias}.split_id IS NOT NULL", value_type=f"{alias}.value_type",
                        bounds={kind: (f"{alias}.min_{kind}", f"{alias}.max_{kind}") for kind in KINDS},
                        null_count=f"{alias}.null_count", num_rows=num_rows)


def constant_source(value: str, num_rows: str) -> ColumnSource:
    """A metadata column with one string value per split (as the reference's constant columns: min = max = the
    value, no nulls)."""
    return ColumnSource(present="TRUE", value_type=None, bounds={"string": (value, value)}, null_count="0",
                        num_rows=num_rows)


def may_match_sql(pred: Predicate, columns: Mapping[str, ColumnSource], params: Params) -> str:
    """FALSE only where `may_match(pred, RangeOracle(split statistics))` is False; never NULL. `pred` in NNF."""
    return visit(pred, _MayMatchSql(columns, params))


class _MayMatchSql(PredicateVisitor[str]):
    def __init__(self, columns: Mapping[str, ColumnSource], params: Params) -> None:
        self.columns, self.params = columns, params

    def visit_const(self, value: bool) -> str:
        return "TRUE" if value else "FALSE"

    def visit_and(self, results: Iterator[str]) -> str:
        return "(" + " AND ".join(results) + ")"

    def visit_or(self, results: Iterator[str]) -> str:
        return "(" + " OR ".join(results) + ")"

    def visit_not(self, result: str) -> str:
        return "TRUE"

    def visit_unknown(self, pred: Unknown) -> str:
        return "TRUE"

    def visit_atom(self, atom: Atom) -> str:
        if isinstance(atom, Compare) and atom.value is None:
            return "FALSE"
        source = self.columns.get(atom.column)
        if source is None:
            return "TRUE"
        rule = _rules_out(atom, source, self.params)
        # coalesce: a NULL anywhere in the rule (no statistics row, no bound) must keep the split.
        return f"(NOT ({source.present}) OR NOT coalesce({rule}, FALSE))"


def _rules_out(atom: Predicate, source: ColumnSource, params: Params) -> str:
    """TRUE when the statistics prove no row of the split satisfies `atom`."""
    all_null = f"{source.null_count} >= {source.num_rows}"
    if isinstance(atom, IsNull):
        return all_null if atom.negated else f"{source.null_count} <= 0"
    # No comparison, IN, LIKE or text match holds on NULL: an all-null column rules out every such atom.
    typed = [all_null]
    for kind, (low, high) in source.bounds.items():
        if kind == "string":
            low, high = f'{low} COLLATE "C"', f'{high} COLLATE "C"'
        elif kind in ("i64", "u64"):
            low, high = f"CAST({low} AS numeric)", f"CAST({high} AS numeric)"
        rule = _typed_rule(atom, kind, low, high, params)
        if rule is None:
            continue
        is_kind = "" if source.value_type is None else f"{source.value_type} = '{kind}' AND "
        typed.append(f"({is_kind}{low} IS NOT NULL AND {high} IS NOT NULL AND {rule})")
    return "(" + " OR ".join(typed) + ")"


def _typed_rule(atom: Predicate, kind: str, low: str, high: str, params: Params) -> str | None:
    """The reference's `_may_satisfy_range`, negated, for statistics of one kind; None where it is not sure."""
    # A float column may hold NaN (the statistics do not say): its upper bound is NaN, above everything.
    bounded_above = kind != "f64"
    match atom:
        case Compare(_, op, value):
            key = _literal(value, kind, params)
            return None if key is None else _compare_rules_out(op, low, high, key, bounded_above)
        case InList(_, values, negated):
            if negated:
                if any(v is None for v in values):
                    return "TRUE"
                if not bounded_above or not values:
                    return None
                keys = [_literal(v, kind, params) for v in values]
                if any(k is None for k in keys):
                    return None
                return f"({low} = {high} AND {low} IN ({', '.join(keys)}))"  # type: ignore[arg-type]
            keys = [_literal(v, kind, params) for v in values if v is not None]
            if any(k is None for k in keys):
                return None
            if not keys:
                return "TRUE"
            return "(" + " AND ".join(_outside(low, high, k, bounded_above) for k in keys) + ")"  # type: ignore
        case Like(_, pattern, negated):
            if kind != "string":
                return None
            shape = like_shape(pattern)
            prefix = _literal(shape.prefix, kind, params)
            if prefix is None:
                return None
            if shape.kind == "exact":
                return _compare_rules_out("!=" if negated else "=", low, high, prefix, bounded_above)
            if negated:
                if shape.kind != "prefix":
                    return None
                return f"(starts_with({low}, {prefix}) AND starts_with({high}, {prefix}))"
            if not shape.prefix:
                return None
            return f"({high} < {prefix} OR ({low} > {prefix} AND NOT starts_with({low}, {prefix})))"
        case TextMatch():
            return None
    return None


def _outside(low: str, high: str, key: str, bounded_above: bool) -> str:
    return f"({key} < {low} OR {key} > {high})" if bounded_above else f"{key} < {low}"


def _compare_rules_out(op: str, low: str, high: str, key: str, bounded_above: bool) -> str | None:
    match op:
        case "=":
            return _outside(low, high, key, bounded_above)
        case "!=":
            return f"({low} = {high} AND {low} = {key})" if bounded_above else None
        case "<":
            return f"{low} >= {key}"
        case "<=":
            return f"{low} > {key}"
        case ">":
            return f"{high} <= {key}" if bounded_above else None
        case ">=":
            return f"{high} < {key}" if bounded_above else None
    return None


def _literal(value: Value | None, kind: str, params: Params) -> str | None:
    """The value bound as a parameter comparable with statistics of `kind` exactly as Python compares them; None
    when Python would raise (other types) or when PostgreSQL could compare differently."""
    if value is None:
        return None
    bound: Any
    if kind == "string":
        if not isinstance(value, str) or "\x00" in value:
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return None
        bound = value
    elif isinstance(value, str):
        return None
    elif kind == "f64":
        if isinstance(value, float):
            bound = value
        elif abs(int(value)) > _FLOAT_EXACT:
            return None
        else:
            bound = float(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        bound = Decimal(value)
    else:
        bound = Decimal(int(value))
    return _CAST[kind].format(params.bind(bound))
