"""The global order of a merge: sort keys from ranks, then a stable sort or a k-way merge of the presorted
inputs.

The comparator is strata_shared.domain.sort_schema's: per column ascending or descending, a null greater than
every value (last in an ascending column, first in a descending one), ties in input order then row order.

Every sort column becomes a small unsigned rank per row that compares like the column:
- strings: the rank of the value among the sorted distinct values (the unified dictionary is sorted once);
- integers, timestamps, floats, bools: an order-preserving unsigned image of the value (sign bit flipped;
  floats with -0.0 folded into 0.0 and one NaN above +inf, as Arrow sorts) minus its minimum over the job, so
  a timestamp column within one window needs ~log2(window) bits; a column whose value range is too wide gets
  dense ranks (np.unique) instead;
- other types: dense ranks from Arrow's sort.
A null gets rank max+1; a descending column's ranks are inverted (max - rank), nulls included, which puts them
first. The ranks are packed, first sort column most significant, into as few 63-bit words as possible, usually
one: then the order is one `np.argsort(kind="stable")` (timsort, which exploits the presorted runs of the
inputs).
"""

from __future__ import annotations

from concurrent.futures import Executor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strata_jobs.arrow_numpy import int_values, primitive_values, to_arrow, validity
from strata_jobs.merge_columns import SourceColumn
from strata_shared.domain.sort_schema import SortSchema

WORD_BITS = 63
_SIGN = np.uint64(1 << 63)


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

    def __init__(self, column: SourceColumn, descending: bool) -> None:
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
                self._densify()  # floats: dense ranks of their order-preserving image
        else:
            self.ranks, self.top = _arrow_dense_ranks(column.array)
            if descending:
                np.subtract(np.uint64(self.top), self.ranks, out=self.ranks)

    @property
    def width(self) -> int:
        return self.top.bit_length()

    @property
    def can_densify(self) -> bool:
        return self.column.kind == "num" and not self.dense

    def _densify(self) -> None:
        column = self.column
        image = _order_preserving(column)
        valid = column.valid
        distinct = np.unique(image if valid is None else image[valid])
        ranks = np.searchsorted(distinct, image).astype(np.uint64)
        self.top = len(distinct) if self.has_nulls else len(distinct) - 1
        if valid is not None:
            ranks[~valid] = len(distinct)
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


def _order_preserving(column: SourceColumn) -> np.ndarray:
    """uint64 whose unsigned order is the column's value order (garbage where null)."""
    values = column.values
    kind = values.dtype.kind
    if kind in "bu":
        return values.astype(np.uint64)
    if kind == "i":
        out = values.astype(np.int64).view(np.uint64)  # astype copies: the source stays untouched
        out ^= _SIGN
        return out
    floats = values.astype(np.float64)
    floats[floats == 0] = 0.0  # -0.0 ties with 0.0
    floats[np.isnan(floats)] = np.nan  # one NaN, above +inf
    bits = floats.view(np.uint64)
    negative = (bits & _SIGN) != 0
    bits[negative] = ~bits[negative]
    bits[~negative] |= _SIGN
    return bits


def _arrow_dense_ranks(array: pa.Array) -> tuple[np.ndarray, int]:
    """Dense ranks (0-based) from Arrow's own sort, nulls after every value; and the largest rank."""
    if len(array) == 0:
        return np.zeros(0, dtype=np.uint64), 0
    order = pc.sort_indices(array)  # nulls at the end by default
    ordered = array.take(order)
    rest = len(ordered) - ordered.null_count
    equal = pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1))
    same = primitive_values(equal, np.dtype(bool)).copy()
    known = validity(equal)
    if known is not None:
        same[~known] = True  # a null next to a null ties; the first null is handled below
    steps = np.concatenate([[False], ~same]).astype(np.uint64)
    if 0 < rest < len(ordered):
        steps[rest] = 1  # the first null: a rank of its own, after every value
    dense = np.cumsum(steps, dtype=np.uint64)
    ranks = np.empty(len(array), dtype=np.uint64)
    ranks[int_values(order, 0)] = dense
    return ranks, int(dense[-1])


def build_sort_key(columns: dict[str, SourceColumn], schema: SortSchema, pool: Executor | None = None
                   ) -> SortKey:
    """Ranks of every sort column present, packed into as few <=63-bit words as possible. With `pool`, the
    columns' ranks are computed in parallel (all alive at once); without, one at a time."""
    plans: list[_Plan] = []
    for sort_column in schema.columns:
        column = columns.get(sort_column.name)
        if column is None or column.length == 0:
            continue  # absent from every input: null everywhere, reorders nothing
        plan = _Plan(column, sort_column.descending)
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


# -- orders --------------------------------------------------------------------------------------------------


def stable_sort_order(key: SortKey, rows: int) -> np.ndarray:
    if not key.words:
        return np.arange(rows, dtype=np.int64)
    if len(key.words) == 1:
        return np.argsort(key.words[0], kind="stable")
    return np.lexsort(key.words[::-1])  # lexsort is stable; its last key is the primary one


def _merge_pair(keys_a: np.ndarray, ids_a: np.ndarray, keys_b: np.ndarray, ids_b: np.ndarray):
    """Stable merge of two sorted runs, every tie going to `a` first (a holds the earlier inputs)."""
    total = len(keys_a) + len(keys_b)
    pos_b = np.searchsorted(keys_a, keys_b, side="right")
    pos_b += np.arange(len(keys_b), dtype=pos_b.dtype)
    from_b = np.zeros(total, dtype=bool)
    from_b[pos_b] = True
    keys = np.empty(total, dtype=keys_a.dtype)
    ids = np.empty(total, dtype=ids_a.dtype)
    keys[pos_b] = keys_b
    ids[pos_b] = ids_b
    from_a = ~from_b
    keys[from_a] = keys_a
    ids[from_a] = ids_a
    return keys, ids


def kway_order(key: SortKey, segments: list[tuple[int, int]], rows: int) -> np.ndarray:
    """The same order as stable_sort_order, by merging the inputs' key runs pairwise (log2(fan-in) rounds of
    vectorized searchsorted merges). An input that is not sorted by the key is sorted first."""
    if len(key.words) != 1 or len(segments) < 2:
        return stable_sort_order(key, rows)
    word = key.words[0]
    runs: list[tuple[np.ndarray, np.ndarray]] = []
    for start, length in segments:
        if length == 0:
            continue
        keys = word[start:start + length]
        ids = np.arange(start, start + length, dtype=np.int64)
        if length > 1 and bool((keys[1:] < keys[:-1]).any()):
            local = np.argsort(keys, kind="stable")
            keys, ids = keys[local], ids[local]
        runs.append((keys, ids))
    if not runs:
        return np.zeros(0, dtype=np.int64)
    while len(runs) > 1:
        merged = []
        for i in range(0, len(runs) - 1, 2):
            merged.append(_merge_pair(*runs[i], *runs[i + 1]))
        if len(runs) % 2:
            merged.append(runs[-1])
        runs = merged
    return runs[0][1]


def compute_order(key: SortKey, segments: list[tuple[int, int]], rows: int, method: str
                  ) -> tuple[np.ndarray, str]:
    """The stable order of the rows and the method that computed it (a k-way merge needs one key word and at
    least two inputs; otherwise the stable sort does the work)."""
    if method == "kway" and len(key.words) == 1 and sum(1 for _, n in segments if n) >= 2:
        return kway_order(key, segments, rows), "kway"
    if method not in ("kway", "stable_sort"):
        raise ValueError(f"unknown order method {method!r}")
    return stable_sort_order(key, rows), "stable_sort"


# -- runs and checks -----------------------------------------------------------------------------------------


def count_runs(order: np.ndarray, block: int = 1 << 20) -> int:
    """How many runs of consecutive source rows the order has (blockwise: no order-sized temporaries)."""
    if len(order) == 0:
        return 0
    breaks = 0
    for start in range(0, len(order) - 1, block):
        part = order[start:start + block + 1]
        breaks += int(np.count_nonzero(np.diff(part) != 1))
    return breaks + 1


def run_heads(order: np.ndarray) -> np.ndarray:
    """Positions in `order` where a run of consecutive source rows (of the concatenated inputs) starts."""
    if len(order) == 0:
        return np.zeros(0, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(order) != 1) + 1
    return np.concatenate([[0], breaks]).astype(np.int64)


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


def python_compare(left: tuple, right: tuple, descending: list[bool]) -> int:
    """Reference comparison of two rows' sort values: null greater than every value, NaN greater than every
    number, per-column direction. Independent of the rank code, for spot checks."""
    for a, b, desc in zip(left, right, descending, strict=True):
        result = _compare_values(a, b)
        if result:
            return -result if desc else result
    return 0


def _compare_values(a, b) -> int:
    if a is None or b is None:
        return 0 if a is None and b is None else (1 if a is None else -1)
    a_nan = isinstance(a, float) and a != a
    b_nan = isinstance(b, float) and b != b
    if a_nan or b_nan:
        return 0 if a_nan and b_nan else (1 if a_nan else -1)
    if a == b:
        return 0
    return -1 if a < b else 1


def spot_check_pairs(table: pa.Table, schema: SortSchema, positions: np.ndarray) -> int | None:
    """Row p+1 >= row p under the reference comparator for every p in positions: the first p failing, or
    None."""
    names = [c.name for c in schema.columns if c.name in table.column_names]
    if not names or len(positions) == 0:
        return None
    descending = [c.descending for c in schema.columns if c.name in table.column_names]
    index = np.stack([positions, positions + 1], axis=1).reshape(-1)
    rows = table.select(names).take(to_arrow(index.astype(np.int64))).to_pylist()
    for i, p in enumerate(positions):
        left = tuple(rows[2 * i][n] for n in names)
        right = tuple(rows[2 * i + 1][n] for n in names)
        if python_compare(left, right, descending) > 0:
            return int(p)
    return None
