"""The global order of a merge: sort keys from ranks, then a stable sort or a k-way merge of the presorted inputs.

The comparator is strata_shared.domain.sort_schema's: per column ascending or descending, a null greater than every
value (last in an ascending column, first in a descending one), ties in input order then row order.

Every sort column becomes a small unsigned rank per row that compares like the column:
- strings: the rank of the value among the sorted distinct values (the unified dictionary is sorted once);
- integers, timestamps, floats, bools: an order-preserving unsigned image of the value (sign bit flipped; floats
  with -0.0 folded into 0.0 and one NaN above +inf, as Arrow sorts) minus its minimum over the job, so a timestamp
  column within one window needs ~log2(window) bits; a column whose value range is too wide gets dense ranks
  (np.unique) instead;
- other types: dense ranks from Arrow's sort.
A null gets rank max+1; a descending column's ranks are inverted (max - rank), nulls included, which puts them first.
The ranks are packed, first sort column most significant, into as few 63-bit words as possible, usually one: then
the order is one `np.argsort(kind="stable")` (timsort, which exploits the presorted runs of the inputs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from strata_jobs.merge_columns import SourceColumn
from strata_shared.domain.sort_schema import SortSchema

WORD_BITS = 63
_SIGN = np.uint64(1 << 63)


@dataclass(slots=True)
class _Rank:
    name: str
    ranks: np.ndarray | None  # uint64; None while only the cheap offset form is known
    width: int
    source: SourceColumn | None = None
    descending: bool = False
    unsigned: np.ndarray | None = None  # num columns: the order-preserving image, kept to re-rank densely
    dense: bool = True


@dataclass(slots=True)
class SortKey:
    """Packed ranks: words[0] most significant. Empty when no sort column can reorder anything."""

    words: list[np.ndarray]
    word_bits: list[int]
    column_bits: dict[str, int] = field(default_factory=dict)

    @property
    def total_bits(self) -> int:
        return sum(self.word_bits)


def _order_preserving(column: SourceColumn) -> np.ndarray:
    """uint64 whose unsigned order is the column's value order (garbage where null)."""
    values = column.values
    kind = values.dtype.kind
    if kind == "b":
        return values.astype(np.uint64)
    if kind == "u":
        return values.astype(np.uint64)
    if kind == "i":
        out = values.astype(np.int64).view(np.uint64)
        if out is values or out.base is values:
            out = out.copy()
        out ^= _SIGN
        return out
    floats = values.astype(np.float64)
    if floats is values:
        floats = floats.copy()
    floats[floats == 0] = 0.0  # -0.0 ties with 0.0
    floats[np.isnan(floats)] = np.nan  # one NaN, above +inf
    bits = floats.view(np.uint64)
    negative = (bits & _SIGN) != 0
    bits[negative] = ~bits[negative]
    bits[~negative] |= _SIGN
    return bits


def _with_nulls(ranks: np.ndarray, null_mask: np.ndarray | None, null_rank: int, descending: bool,
                top: int) -> np.ndarray:
    if null_mask is not None:
        ranks[null_mask] = null_rank
    if descending:
        np.subtract(np.uint64(top), ranks, out=ranks)
    return ranks


def _rank_column(column: SourceColumn, descending: bool) -> _Rank:
    has_nulls = column.null_count > 0
    if column.kind == "dict":
        size = len(column.dictionary)
        top = size if has_nulls else max(size - 1, 0)
        table = np.empty(size + 1, dtype=np.uint64)
        table[np.asarray(pc.sort_indices(column.dictionary).to_numpy(), dtype=np.int64)] = np.arange(size,
                                                                                                      dtype=np.uint64)
        table[size] = size  # null, read by code -1
        if descending:
            table = np.uint64(top) - table
        return _Rank(column.name, table[column.codes], top.bit_length())
    if column.kind == "num":
        unsigned = _order_preserving(column)
        valid = column.valid
        if valid is not None and not valid.any():
            return _Rank(column.name, None, 0)
        low = int(np.min(unsigned, where=valid, initial=np.iinfo(np.uint64).max)) if valid is not None \
            else int(unsigned.min())
        high = int(np.max(unsigned, where=valid, initial=0)) if valid is not None else int(unsigned.max())
        top = high - low + (1 if has_nulls else 0)
        return _Rank(column.name, None, top.bit_length(), column, descending, unsigned, dense=False)
    # Any other type: dense ranks from Arrow's own sort (nulls last).
    array = column.array
    order = pc.sort_indices(array, null_placement="at_end")
    ordered = array.take(order)
    rest = len(ordered) - ordered.null_count
    same = pc.fill_null(pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1)), True)
    steps = np.concatenate([[0], ~np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)]).astype(np.uint64)
    if rest < len(ordered) and rest > 0:
        steps[rest] = 1  # first null: a rank of its own, after every value
    dense = np.cumsum(steps, dtype=np.uint64)
    ranks = np.empty(len(array), dtype=np.uint64)
    ranks[np.asarray(order.to_numpy(), dtype=np.int64)] = dense
    top = int(dense[-1]) if len(dense) else 0
    if descending:
        ranks = np.uint64(top) - ranks
    return _Rank(column.name, ranks, top.bit_length())


def _materialize(rank: _Rank, dense: bool) -> None:
    """Turn a num column's image into ranks: offset from the minimum, or dense ranks among distinct values."""
    column, unsigned = rank.source, rank.unsigned
    valid = column.valid
    null_mask = None if valid is None else ~valid
    present = unsigned if valid is None else unsigned[valid]
    if dense:
        distinct = np.unique(present)
        ranks = np.searchsorted(distinct, unsigned).astype(np.uint64)
        null_rank = len(distinct)
    else:
        low = np.uint64(present.min())
        ranks = unsigned - low
        null_rank = int(present.max() - low) + 1
    top = null_rank if null_mask is not None else null_rank - 1
    rank.ranks = _with_nulls(ranks, null_mask, null_rank, rank.descending, top)
    rank.width = top.bit_length()
    rank.unsigned = None
    rank.dense = dense


def build_sort_key(columns: dict[str, SourceColumn], schema: SortSchema) -> SortKey:
    """Ranks of every sort column present, packed into as few <=63-bit words as possible."""
    ranks: list[_Rank] = []
    for sort_column in schema.columns:
        column = columns.get(sort_column.name)
        if column is None:
            continue  # absent from every input: null everywhere, reorders nothing
        rank = _rank_column(column, sort_column.descending)
        if rank.width > 0:
            ranks.append(rank)
    # Offsets are O(n) but can be wide (a u64 id); dense ranks cost a sort. Densify the widest offset columns
    # only while the key would not fit in one word (or a column alone would not fit a word).
    pending = sorted((r for r in ranks if r.ranks is None), key=lambda r: -r.width)
    for rank in pending:
        if sum(r.width for r in ranks) > WORD_BITS or rank.width > WORD_BITS:
            _materialize(rank, dense=True)
        else:
            _materialize(rank, dense=False)
    words: list[np.ndarray] = []
    word_bits: list[int] = []
    current: np.ndarray | None = None
    bits = 0
    for rank in ranks:
        if current is not None and bits + rank.width > WORD_BITS:
            words.append(current)
            word_bits.append(bits)
            current, bits = None, 0
        if current is None:
            current, bits = rank.ranks, rank.width
        else:
            current <<= np.uint64(rank.width)
            current |= rank.ranks
            bits += rank.width
        rank.ranks = None
    if current is not None:
        words.append(current)
        word_bits.append(bits)
    return SortKey(words, word_bits, {r.name: r.width for r in ranks})


# -- orders ---------------------------------------------------------------------------------------------------


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


def compute_order(key: SortKey, segments: list[tuple[int, int]], rows: int, method: str) -> np.ndarray:
    if method == "kway":
        return kway_order(key, segments, rows)
    if method == "stable_sort":
        return stable_sort_order(key, rows)
    raise ValueError(f"unknown order method {method!r}")


# -- runs and checks ------------------------------------------------------------------------------------------


def run_heads(order: np.ndarray) -> np.ndarray:
    """Positions in `order` where a run of consecutive source rows starts (rows of the concatenated inputs)."""
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
    """Row p+1 >= row p under the reference comparator for every p in positions; the first p failing or None."""
    names = [c.name for c in schema.columns if c.name in table.column_names]
    if not names or len(positions) == 0:
        return None
    descending = [c.descending for c in schema.columns if c.name in table.column_names]
    index = np.stack([positions, positions + 1], axis=1).reshape(-1)
    rows = table.select(names).take(pa.array(index)).to_pylist()
    for i, p in enumerate(positions):
        left = tuple(rows[2 * i][n] for n in names)
        right = tuple(rows[2 * i + 1][n] for n in names)
        if python_compare(left, right, descending) > 0:
            return int(p)
    return None
