"""The predicate IR evaluated over an Arrow table, with the reference semantics of `predicate.evaluate_row`
(three-valued, Spark-like: NaN equals NaN and sorts above every number, case-sensitive LIKE with backslash
escapes, text_match on ASCII alphanumeric tokens).

This is what decides, row by row, which rows a delete removes: the rewrite kernel drops exactly the rows where
the predicate is TRUE, and the query scan hides the same rows of a split whose rewrite has not published yet.
A row where the predicate is NULL is not deleted (`expr IS NOT TRUE` keeps it). Pure pyarrow + numpy, so it runs
in a Spark Python worker as well as in the APIs; property-tested against the reference
(tests/shared/test_row_filter.py).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    compare_keys,
    order_key,
)

_PC_COMPARE = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
               ">=": pc.greater_equal}


def matching_rows(pred: Predicate, table: pa.Table, constants: Mapping[str, object] | None = None) -> np.ndarray:
    """A boolean per row of `table`: True exactly where `pred` is TRUE. `constants` are columns with one value
    for the whole table (a split's partition_id); a column in neither is NULL on every row, as a column missing
    from a file reads as nulls."""
    result = _eval(pred, _Columns(table, constants or {}))
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


class _Columns:
    def __init__(self, table: pa.Table, constants: Mapping[str, object]) -> None:
        self.table = table
        self.constants = constants
        self.rows = table.num_rows
        self._cache: dict[str, pa.Array] = {}

    def get(self, name: str) -> pa.Array:
        if name not in self._cache:
            if name in self.constants:
                array = pa.array([self.constants[name]] * self.rows)
            elif name in self.table.column_names:
                array = self.table.column(name).combine_chunks()
                if pa.types.is_dictionary(array.type):
                    array = array.dictionary_decode()
            else:
                array = pa.nulls(self.rows, pa.null())
            self._cache[name] = array
        return self._cache[name]

    def constant(self, value: bool | None) -> pa.Array:
        return pa.array([value] * self.rows, pa.bool_())


def _eval(pred: Predicate, columns: _Columns) -> pa.Array:
    match pred:
        case Const(value):
            return columns.constant(value)
        case Not(child):
            return pc.invert(_eval(child, columns))
        case And(children):
            return functools.reduce(pc.and_kleene, (_eval(c, columns) for c in children))
        case Or(children):
            return functools.reduce(pc.or_kleene, (_eval(c, columns) for c in children))
        case Unknown(description, expr):
            if expr is None:
                raise ValueError(f"cannot evaluate {description!r}: the predicate IR does not express it")
            return _eval(expr, columns)
        case IsNull(column, negated):
            nulls = pc.is_null(columns.get(column))
            return pc.invert(nulls) if negated else nulls
    column = columns.get(pred.column)
    if pa.types.is_null(column.type):
        return columns.constant(None)
    match pred:
        case Compare(_, op, value):
            return _compare(column, op, value, columns)
        case InList(_, values, negated):
            return _in_list(column, values, negated, columns)
        case Like(_, pattern, negated):
            found = pc.match_substring_regex(column, _like_regex(pattern))
            return pc.invert(found) if negated else found
        case TextMatch(_, terms):
            found = pc.if_else(pc.is_null(column), None, True)
            for term in terms:
                found = pc.and_kleene(found, pc.match_substring_regex(column, _token_regex(term)))
            return found
    raise TypeError(f"not a predicate: {pred!r}")


def _literal(value: Value, column_type: pa.DataType) -> pa.Scalar:
    try:
        return pa.scalar(value, type=column_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.scalar(value)


def _is_float(column_type: pa.DataType) -> bool:
    return pa.types.is_floating(column_type)


def _compare(column: pa.Array, op: str, value: Value | None, columns: _Columns) -> pa.Array:
    if value is None:
        return columns.constant(None)
    literal_nan = isinstance(value, float) and math.isnan(value)
    if not _is_float(column.type):
        if literal_nan:
            # Every number sorts below NaN.
            return pc.if_else(pc.is_null(column), None, compare_keys((0, 0), op, order_key(value)))
        return _PC_COMPARE[op](column, _literal(value, column.type))
    # Floats: NaN equals NaN and is above every number, which Arrow's comparisons do not say.
    nan = pc.is_nan(column)
    on_nan = compare_keys(order_key(math.nan), op, order_key(value))
    if literal_nan:
        on_number = compare_keys((0, 0.0), op, order_key(value))
        return pc.if_else(nan, on_nan, pc.if_else(pc.is_null(column), None, on_number))
    return pc.if_else(nan, on_nan, _PC_COMPARE[op](column, _literal(value, column.type)))


def _in_list(column: pa.Array, values: tuple[Value | None, ...], negated: bool, columns: _Columns) -> pa.Array:
    present = [v for v in values if v is not None]
    found = columns.constant(False)
    for value in present:
        equal = pc.fill_null(_compare(column, "=", value, columns), False)
        found = pc.or_(found, equal)
    if any(v is None for v in values):
        # Not found among the values, with a NULL in the list: NULL rather than FALSE.
        found = pc.if_else(found, True, None)
    result = pc.invert(found) if negated else found
    return pc.if_else(pc.is_null(column), None, result)


@functools.lru_cache(maxsize=512)
def _like_regex(pattern: str) -> str:
    """A LIKE pattern as an RE2 regex over the whole value (`\\A...\\z`, `.` matching newlines too)."""
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            parts.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    return "(?s)\\A" + "".join(parts) + "\\z"


@functools.lru_cache(maxsize=512)
def _token_regex(term: str) -> str:
    """A term as a whole token: a maximal run of ASCII letters and digits equal to it, ASCII case folded only
    (RE2's case folding would also take e.g. the Kelvin sign for a `k`)."""
    chars = "".join(f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha() else re.escape(c) for c in term)
    return f"(?:\\A|[^A-Za-z0-9]){chars}(?:[^A-Za-z0-9]|\\z)"
