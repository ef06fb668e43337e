"""The predicate IR evaluated over an Arrow table, with the reference semantics of `predicate.evaluate_row`
(three-valued, Spark-like: NaN equals NaN and sorts above every number, case-sensitive LIKE with backslash
escapes, text_match on ASCII alphanumeric tokens, decided by `text_tokens.entries_holding` as the local scan's
prefilter decides it).

This is what decides, row by row, which rows a delete removes: the rewrite kernel drops exactly the rows where
the predicate is TRUE, and the query scan hides the same rows of a split whose rewrite has not published yet.
A row where the predicate is NULL is not deleted (`expr IS NOT TRUE` keeps it). Property-tested against the
reference (tests/core/test_row_filter.py).

Three-valued results are two numpy masks (TRUE, NULL). A condition on a dictionary column is decided once per
distinct value and spread to the rows through the indices. Pure pyarrow + numpy, and like the merge kernel it
never imports pandas (pa.array and pa.scalar on Python values would, on first use: about a second in a fresh
Spark Python worker): literals are built from buffers (`strata_core.arrow_numpy`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strata_core.arrow_numpy import numpy_dtype, primitive_values, to_arrow, validity
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
    compare_keys,
    like_regex_body,
    order_key,
    visit,
)
from strata_core.query.text_tokens import entries_holding, offset_strings

_PC_COMPARE = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
               ">=": pc.greater_equal}
_NP_COMPARE = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
               ">=": np.greater_equal}
_MICROS_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}


@dataclass(slots=True)
class _Truth:
    """TRUE and NULL per row (FALSE is neither)."""

    true: np.ndarray
    null: np.ndarray

    @property
    def false(self) -> np.ndarray:
        return ~self.true & ~self.null


def matching_rows(pred: Predicate, table: pa.Table, constants: Mapping[str, object] | None = None) -> np.ndarray:
    """A boolean per row of `table`: True exactly where `pred` is TRUE. `constants` are columns with one value
    for the whole table (a split's partition_id); a column in neither is NULL on every row, as a column missing
    from a file reads as nulls."""
    return visit(pred, _RowsTruth(_Columns(table, constants or {}))).true


class _Columns:
    def __init__(self, table: pa.Table, constants: Mapping[str, object]) -> None:
        self.table = table
        self.constants = constants
        self.rows = table.num_rows

    def column(self, name: str) -> pa.Array | None:
        if name in self.constants:
            return _literal_array([self.constants[name]])  # one row, spread by the caller
        if name in self.table.column_names:
            return self.table.column(name).combine_chunks()
        return None

    def constant(self, value: bool | None) -> _Truth:
        return _Truth(np.full(self.rows, value is True), np.full(self.rows, value is None))


class _RowsTruth(PredicateVisitor[_Truth]):
    def __init__(self, columns: _Columns) -> None:
        self.columns = columns

    def visit_const(self, value: bool) -> _Truth:
        return self.columns.constant(value)

    def visit_not(self, result: _Truth) -> _Truth:
        return _Truth(result.false, result.null)

    def visit_and(self, results: Iterator[_Truth]) -> _Truth:
        parts = list(results)
        any_false = np.logical_or.reduce([p.false for p in parts])
        return _Truth(np.logical_and.reduce([p.true for p in parts]),
                      ~any_false & np.logical_or.reduce([p.null for p in parts]))

    def visit_or(self, results: Iterator[_Truth]) -> _Truth:
        parts = list(results)
        true = np.logical_or.reduce([p.true for p in parts])
        return _Truth(true, ~true & np.logical_or.reduce([p.null for p in parts]))

    def visit_unknown(self, pred: Unknown) -> _Truth:
        if pred.expr is None:
            raise ValueError(f"cannot evaluate {pred.description!r}: the predicate IR does not express it")
        return visit(pred.expr, self)

    def visit_atom(self, atom: Atom) -> _Truth:
        columns = self.columns
        column = columns.column(atom.column)
        if column is None or pa.types.is_null(column.type):
            return columns.constant(_on_null(atom))
        truth = _on_column(atom, column)
        if atom.column in columns.constants:
            return _Truth(np.full(columns.rows, truth.true[0]), np.full(columns.rows, truth.null[0]))
        return truth


def _on_null(pred: Predicate) -> bool | None:
    """The atom on a NULL value."""
    if isinstance(pred, IsNull):
        return not pred.negated
    return None


def _on_column(pred: Predicate, column: pa.Array) -> _Truth:
    rows = len(column)
    if isinstance(pred, IsNull):
        nulls = _bools(pc.is_null(column))
        return _Truth(~nulls if pred.negated else nulls, np.zeros(rows, bool))
    if pa.types.is_dictionary(column.type) and len(column.dictionary) == 0:
        return _Truth(np.zeros(rows, bool), np.ones(rows, bool))
    if pa.types.is_dictionary(column.type):
        # Decided once per distinct value, then spread to the rows (a null index is a null row).
        on_values = _on_column(pred, column.dictionary)
        indices = column.indices
        positions = primitive_values(indices, numpy_dtype(indices.type)).astype(np.intp, copy=True)
        valid = validity(indices)
        if valid is not None:
            positions[~valid] = 0
        true, null = on_values.true[positions], on_values.null[positions]
        if valid is not None:
            true &= valid
            null |= ~valid
        return _Truth(true, null)
    valid = validity(column)
    nulls = np.zeros(len(column), bool) if valid is None else ~valid
    match pred:
        case Compare(_, op, value):
            true = _compare(column, op, value)
        case InList(_, values, negated):
            return _in_list(column, values, negated, nulls)
        case Like(_, pattern, negated):
            true = _bools(pc.match_substring_regex(column, _like_regex(pattern)))
            true = ~true if negated else true
        case TextMatch(_, terms):
            true = entries_holding(_offset_layout(column), terms)
        case _:
            raise TypeError(f"not a predicate: {pred!r}")
    if true is None:  # compared with NULL
        return _Truth(np.zeros(len(column), bool), np.ones(len(column), bool))
    return _Truth(true & ~nulls, nulls)


def _bools(result: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow result as numpy, NULL read as False (callers track nulls themselves)."""
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    values = primitive_values(result, np.dtype(bool)).copy()
    valid = validity(result)
    if valid is not None:
        values &= valid
    return values


def _compare(column: pa.Array, op: str, value: Value | None) -> np.ndarray | None:
    """TRUE per row of `column op value` (rows that are null come out as garbage: the caller masks them)."""
    if value is None:
        return None
    dtype = numpy_dtype(column.type)
    if dtype is None:
        return _bools(_PC_COMPARE[op](column, _literal_array([value], column.type)[0]))
    values = _numbers(column, dtype)
    if isinstance(value, float) and math.isnan(value):
        # NaN sorts above every number and equals itself.
        if pa.types.is_floating(column.type):
            nan = np.isnan(values)
            return np.where(nan, compare_keys(order_key(math.nan), op, order_key(value)),
                            compare_keys((0, 0.0), op, order_key(value)))
        return np.full(len(values), compare_keys((0, 0), op, order_key(value)))
    if pa.types.is_integer(column.type) and isinstance(value, int) and not isinstance(value, bool):
        info = np.iinfo(values.dtype)
        if value > info.max:  # every value of the column is below it
            return np.full(len(values), compare_keys((0, 0), op, (0, 1)))
        if value < info.min:  # every value is above it
            return np.full(len(values), compare_keys((0, 1), op, (0, 0)))
    with np.errstate(invalid="ignore"):
        result = _NP_COMPARE[op](values, value)
    if pa.types.is_floating(column.type):
        nan = np.isnan(values)
        if nan.any():
            result = np.where(nan, compare_keys(order_key(math.nan), op, order_key(value)), result)
    return np.asarray(result, dtype=bool)


def _numbers(column: pa.Array, dtype: np.dtype) -> np.ndarray:
    """The column's values as numpy (timestamps in microseconds, as the IR states them)."""
    values = primitive_values(column, dtype)
    if pa.types.is_timestamp(column.type):
        values = values * _MICROS_PER[column.type.unit] if column.type.unit in _MICROS_PER else values // 1000
    return values


def _in_list(column: pa.Array, values: tuple[Value | None, ...], negated: bool, nulls: np.ndarray) -> _Truth:
    present = [v for v in values if v is not None]
    found = np.zeros(len(column), bool)
    dtype = numpy_dtype(column.type)
    if present and dtype is None:
        found = _bools(pc.is_in(column, value_set=_literal_array(present, column.type)))
    elif present:
        # One membership pass for the values plain numeric equality decides (one pass per value made a delete of
        # 2,000 ids cost 2,000 passes over every column it reads); NaN, booleans and integers outside the column's
        # type go one by one through `_compare`, which knows their order.
        numbers = _numbers(column, dtype)
        ints, floats, one_by_one = _by_kind(present, numbers.dtype)
        if ints:
            found |= np.isin(numbers, np.array(ints, dtype=numbers.dtype))
        if floats:
            found |= np.isin(numbers, np.array(floats, dtype=np.float64))
        for value in one_by_one:
            equal = _compare(column, "=", value)
            if equal is not None:
                found |= equal
    undecided = ~found & np.bool_(any(v is None for v in values))  # not found, with a NULL in the list
    true = (~found if negated else found) & ~undecided & ~nulls
    return _Truth(true, nulls | undecided)


_EXACT_FLOAT_INTS = 2**53


def _by_kind(values: list[Value], dtype: np.dtype) -> tuple[list[int], list[float], list[Value]]:
    """The values as (integers within the column's integer type, numbers compared as float64, the rest)."""
    ints: list[int] = []
    floats: list[float] = []
    rest: list[Value] = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or dtype.kind not in "iuf":
            rest.append(value)
        elif isinstance(value, float):
            (rest if math.isnan(value) else floats).append(value)
        elif dtype.kind == "f":
            # An integer exact as a float64 compares with a float column as that float.
            (floats if -_EXACT_FLOAT_INTS <= value <= _EXACT_FLOAT_INTS else rest).append(value)
        else:
            info = np.iinfo(dtype)
            (ints if info.min <= value <= info.max else rest).append(value)
    return ints, floats, rest


def _offset_layout(column: pa.Array) -> pa.Array:
    """`column` as strings `entries_holding` reads (string views and other layouts are cast once)."""
    return column if offset_strings(column.type) else column.cast(pa.large_string())


def _literal_array(values: list[object], arrow_type: pa.DataType | None = None) -> pa.Array:
    """An Arrow array of Python literals, built from buffers (never through pandas)."""
    first = values[0]
    if isinstance(first, str):
        data = [str(v).encode() for v in values]
        offsets = np.cumsum([0, *(len(d) for d in data)], dtype=np.int32)
        array = pa.Array.from_buffers(pa.string(), len(values),
                                      [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data))])
        if arrow_type is not None and arrow_type != pa.string():
            array = array.cast(arrow_type)
        return array
    if isinstance(first, bool):
        return to_arrow(np.array(values, dtype=bool))
    if isinstance(first, int):
        return to_arrow(np.array(values, dtype=np.int64))
    return to_arrow(np.array(values, dtype=np.float64))


@functools.lru_cache(maxsize=512)
def _like_regex(pattern: str) -> str:
    """A LIKE pattern as an RE2 regex over the whole value (`\\A...\\z`, `.` matching newlines too)."""
    return "(?s)\\A" + like_regex_body(pattern) + "\\z"
