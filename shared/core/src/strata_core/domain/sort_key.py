"""The sort schema's comparator as packed integer keys: the one implementation behind ingestion's order, the
merge's order and the merge's MC-3 check.

The comparator (strata_core.domain.sort_schema): per column ascending or descending, a null greater than every
value (last in an ascending column, first in a descending one), NaN above every other float, ties in row order.

Every sort column becomes a small unsigned rank per row that compares like the column:
- strings: the rank of the value among the sorted distinct values (the dictionary is sorted once);
- integers, timestamps, bools: the value minus its minimum, so a timestamp column within one window needs
  ~log2(window) bits; a column whose value range is too wide gets dense ranks instead;
- floats and other types: dense ranks from Arrow's `rank` (-0.0 ties with 0.0, NaN above +inf, as Arrow
  sorts), 4-5x faster on 1M floats than numpy's unique over an order-preserving integer image.
A null gets rank max+1; a descending column's ranks are inverted (max - rank), nulls included, which puts them
first. The ranks are packed, first sort column most significant, into as few 63-bit words as possible, usually
one: then the order is one `np.argsort(kind="stable")` (timsort, which exploits presorted runs). Measured against
a multi-column Arrow sort, packing was ~3x faster on string columns.

Columns come in a numpy form (`KeyColumn`): the merge builds it while reading its inputs
(strata_jobs.merge_columns), `key_columns` builds it from an Arrow table.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strata_core.arrow_numpy import int_values, numpy_dtype, primitive_values, to_arrow, validity
from strata_core.domain.sort_schema import SortSchema

WORD_BITS = 63


class KeyColumn(Protocol):
    """One column in the form its ranks are computed from, by kind:
    - `dict`: `dictionary` (distinct values, no null among them) and `codes` into it per row, -1 for null;
    - `num`: `values` (numpy, fixed width) and `valid` (None when no value is null);
    - `arrow`: `array`, ranked by Arrow's sort."""

    name: str
    kind: str
    length: int
    null_count: int
    dictionary: pa.Array | None
    codes: np.ndarray | None
    values: np.ndarray | None
    valid: np.ndarray | None
    array: pa.Array | None


@dataclass(slots=True)
class ArrowKeyColumn:
    """A KeyColumn made from an Arrow column (`key_column`)."""

    name: str
    kind: str
    length: int
    null_count: int = 0
    dictionary: pa.Array | None = None
    codes: np.ndarray | None = None
    values: np.ndarray | None = None
    valid: np.ndarray | None = None
    array: pa.Array | None = None


def key_column(name: str, column: pa.Array | pa.ChunkedArray) -> ArrowKeyColumn:
    """The KeyColumn of an Arrow column: strings dictionary-encoded, fixed-width values as numpy."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        # A dictionary may repeat values (or hold nulls); ranks need distinct values, so encode it afresh.
        column = column.cast(column.type.value_type)
    length = len(column)
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        encoded = pc.dictionary_encode(column)
        return ArrowKeyColumn(name, "dict", length, column.null_count, dictionary=encoded.dictionary,
                              codes=int_values(encoded.indices, -1))
    dtype = numpy_dtype(kind)
    if dtype is not None:
        values = primitive_values(column, dtype) if length else np.zeros(0, dtype=dtype)
        return ArrowKeyColumn(name, "num", length, column.null_count, values=values, valid=validity(column))
    return ArrowKeyColumn(name, "arrow", length, column.null_count, array=column)


def key_columns(table: pa.Table, schema: SortSchema) -> dict[str, ArrowKeyColumn]:
    """The KeyColumns of the table's sort columns (a sort column the table lacks is null everywhere)."""
    return {c.name: key_column(c.name, table.column(c.name)) for c in schema.columns if c.name in table.column_names}


@dataclass(slots=True)
class SortKey:
    """Packed ranks: words[0] most significant. Empty when no sort column can reorder anything."""

    words: list[np.ndarray]
    word_bits: list[int]
    column_bits: dict[str, int] = field(default_factory=dict)

    @property
    def total_bits(self) -> int:
        return sum(self.word_bits)


class _Plan:
    """One sort column's ranks: their width now, the array only when packed (so one is alive at a time)."""

    def __init__(self, column: KeyColumn, descending: bool) -> None:
        self.column = column
        self.descending = descending
        self.has_nulls = column.null_count > 0
        self.dense = False
        self.low = 0
        self.top = 0  # the largest rank, nulls included
        self.table: np.ndarray | None = None  # dict: rank of every dictionary entry (+ null slot)
        self.ranks: np.ndarray | None = None  # arrow / dense num: ranks of every row
        kind = column.kind
        if kind == "dict":
            size = len(column.dictionary)
            self.top = size if self.has_nulls else max(size - 1, 0)
            table = np.empty(size + 1, dtype=np.uint64)
            table[int_values(pc.sort_indices(column.dictionary), 0)] = np.arange(size, dtype=np.uint64)
            table[size] = size  # null, read by code -1
            if descending:
                table = np.uint64(self.top) - table
            self.table = table
        elif kind == "num":
            valid = column.valid
            if valid is not None and not valid.any():
                return  # all null: top 0, reorders nothing
            if column.values.dtype.kind in "iub":
                values = column.values
                if valid is None:
                    low, high = values.min(), values.max()
                else:
                    limits = (True, False) if values.dtype.kind == "b" else \
                        (np.iinfo(values.dtype).max, np.iinfo(values.dtype).min)
                    low = np.min(values, where=valid, initial=limits[0])
                    high = np.max(values, where=valid, initial=limits[1])
                self.low = int(low)
                self.top = int(high) - int(low) + (1 if self.has_nulls else 0)
            else:
                self._densify()  # floats
        else:
            self.ranks, self.top = _dense_ranks(column.array)
            if descending:
                np.subtract(np.uint64(self.top), self.ranks, out=self.ranks)

    @property
    def width(self) -> int:
        return self.top.bit_length()

    @property
    def can_densify(self) -> bool:
        return self.column.kind == "num" and not self.dense

    def _densify(self) -> None:
        values = self.column.values
        if values.dtype == np.float16:  # Arrow's rank has no kernel for half floats
            values = values.astype(np.float32)
        ranks, self.top = _dense_ranks(to_arrow(values, valid=self.column.valid))
        if self.descending:
            np.subtract(np.uint64(self.top), ranks, out=ranks)
        self.ranks = ranks
        self.dense = True

    def densify(self) -> None:
        if self.can_densify:
            self._densify()

    def make(self) -> np.ndarray:
        """The ranks of every row as a new uint64 array (nulls and direction applied)."""
        column = self.column
        if self.table is not None:
            return self.table[column.codes]  # code -1 (null) reads the null slot
        if self.ranks is not None:
            ranks, self.ranks = self.ranks, None
            return ranks
        unsigned = column.values.dtype.kind == "u"
        ranks = column.values.astype(np.uint64 if unsigned else np.int64)
        ranks -= ranks.dtype.type(self.low)
        ranks = ranks.view(np.uint64)
        if column.valid is not None:
            ranks[~column.valid] = np.uint64(self.top)
        if self.descending:
            np.subtract(np.uint64(self.top), ranks, out=ranks)
        return ranks


def _dense_ranks(array: pa.Array) -> tuple[np.ndarray, int]:
    """Dense ranks (0-based, a new array) in the comparator's ascending order, nulls after every value; and the
    largest rank."""
    if len(array) == 0 or array.null_count == len(array):
        return np.zeros(len(array), dtype=np.uint64), 0
    ranked = pc.rank(array, sort_keys="ascending", tiebreaker="dense")  # nulls at the end, by default
    ranks = primitive_values(ranked, np.dtype(np.uint64)) - np.uint64(1)
    return ranks, int(ranks.max())


def build_sort_key(columns: Mapping[str, KeyColumn], schema: SortSchema, pool: Executor | None = None,
                   leading: KeyColumn | None = None) -> SortKey:
    """Ranks of every sort column present, packed into as few <=63-bit words as possible; `leading`, if given,
    is an ascending column ordered before them. With `pool`, the columns' ranks are computed in parallel (all
    alive at once); without, one at a time."""
    sorted_columns = [(leading, False)] if leading is not None else []
    sorted_columns += [(columns.get(c.name), c.descending) for c in schema.columns]
    plans: list[_Plan] = []
    for column, descending in sorted_columns:
        if column is None or column.length == 0:
            continue  # absent from every input: null everywhere, reorders nothing
        plan = _Plan(column, descending)
        if plan.width > 0:
            plans.append(plan)
    # Offsets are O(n) but can be wide (a u64 id); dense ranks cost a sort. Densify the widest offset columns
    # only while the key would not fit in one word, or a column would not fit in any word.
    for plan in sorted((p for p in plans if p.can_densify), key=lambda p: -p.width):
        if sum(p.width for p in plans) > WORD_BITS or plan.width > WORD_BITS:
            plan.densify()
    layout: list[list[_Plan]] = []
    bits = WORD_BITS + 1
    for plan in plans:
        if bits + plan.width > WORD_BITS:
            layout.append([])
            bits = 0
        layout[-1].append(plan)
        bits += plan.width
    made = {}
    if pool is not None:
        made = dict(zip(map(id, plans), pool.map(_Plan.make, plans), strict=True))
    words: list[np.ndarray] = []
    word_bits: list[int] = []
    for group in layout:
        word: np.ndarray | None = None
        width = sum(p.width for p in group)
        shift = width
        for plan in group:
            shift -= plan.width
            ranks = made.pop(id(plan)) if made else plan.make()
            if shift:
                ranks <<= np.uint64(shift)
            if word is None:
                word = ranks
            else:
                word |= ranks
            del ranks
        words.append(word)
        word_bits.append(width)
    return SortKey(words, word_bits, {p.column.name: p.width for p in plans})


def stable_order(key: SortKey, rows: int) -> np.ndarray:
    """The rows' positions in key order, ties in row order."""
    if not key.words:
        return np.arange(rows, dtype=np.int64)
    if len(key.words) == 1:
        return np.argsort(key.words[0], kind="stable")
    return np.lexsort(key.words[::-1])  # lexsort is stable; its last key is the primary one


def first_unsorted(key: SortKey) -> int | None:
    """Index i of the first row whose key is smaller than row i-1's, or None when sorted (ties allowed)."""
    if not key.words or len(key.words[0]) < 2:
        return None
    if len(key.words) == 1:
        word = key.words[0]
        bad = np.flatnonzero(word[1:] < word[:-1])
        return int(bad[0]) + 1 if len(bad) else None
    less = np.zeros(len(key.words[0]) - 1, dtype=bool)
    equal = np.ones(len(key.words[0]) - 1, dtype=bool)
    for word in key.words:
        less |= equal & (word[1:] < word[:-1])
        equal &= word[1:] == word[:-1]
    bad = np.flatnonzero(less)
    return int(bad[0]) + 1 if len(bad) else None


def sort_indices(table: pa.Table, schema: SortSchema, leading: np.ndarray | None = None) -> pa.Array:
    """Stable row order of `table` by `schema` (int64 positions); `leading`, if given, is an int64 key per row
    sorted before it (ingestion's window starts)."""
    lead = None
    if leading is not None:
        values = np.asarray(leading, dtype=np.int64)
        lead = ArrowKeyColumn("__leading", "num", len(values), values=values)
    key = build_sort_key(key_columns(table, schema), schema, leading=lead)
    return to_arrow(stable_order(key, table.num_rows).astype(np.int64, copy=False))


def is_sorted(table: pa.Table, schema: SortSchema) -> bool:
    """MC-3 check: true when the table is already in `schema` order (ties allowed)."""
    return first_unsorted(build_sort_key(key_columns(table, schema), schema)) is None
