"""Sort schemas: ordered columns, each ascending or descending, with a version.

Text form: `metric_name,service,-host,timestamp_secs@v1` (a leading `-` means descending). Null ordering is fixed:
a null sorts after every value, so it comes last in an ascending column and first in a descending one. The same
comparator serves ingestion and the merge (MC-3), which is why it lives here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_COLUMN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^v[0-9]+$")
DEFAULT_SORT_SCHEMA_VERSION = "v1"


@dataclass(frozen=True, slots=True)
class SortColumn:
    name: str
    descending: bool = False

    def __str__(self) -> str:
        return f"-{self.name}" if self.descending else self.name


@dataclass(frozen=True, slots=True)
class SortSchema:
    columns: tuple[SortColumn, ...]
    version: str = DEFAULT_SORT_SCHEMA_VERSION

    @classmethod
    def parse(cls, text: str) -> SortSchema:
        """Parse the text form; raises ValueError with what is wrong."""
        body, _, version = text.strip().partition("@")
        version = version.strip() or DEFAULT_SORT_SCHEMA_VERSION
        if not _VERSION.match(version):
            raise ValueError(f"sort schema version {version!r} must look like v1")
        if not body.strip():
            raise ValueError("sort schema has no columns")
        columns: list[SortColumn] = []
        for raw in body.split(","):
            token = raw.strip()
            descending = token.startswith("-")
            name = token.lstrip("+-").strip()
            if not _COLUMN_NAME.match(name):
                raise ValueError(f"sort column {token!r} is not a valid column name")
            if any(existing.name == name for existing in columns):
                raise ValueError(f"sort column {name!r} appears twice")
            columns.append(SortColumn(name, descending))
        return cls(tuple(columns), version)

    def __str__(self) -> str:
        return ",".join(str(c) for c in self.columns) + f"@{self.version}"

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


def _order(column: SortColumn) -> str:
    return "descending" if column.descending else "ascending"


def sort_keys(table: pa.Table, schema: SortSchema, leading: list[tuple[str, str]] | None = None) -> list:
    """Arrow sort keys for `schema`, with an is-null key before every column that has nulls.

    pyarrow has one null placement for all keys; ordering by (is_null, value) in the column's own direction makes
    a null the largest value in every column, whatever the direction.
    """
    keys = list(leading or [])
    for column in schema.columns:
        if column.name not in table.column_names:
            continue  # a column missing from the input is all nulls: it cannot reorder anything
        if table.column(column.name).null_count:
            keys.append((f"__isnull_{column.name}", _order(column)))
        keys.append((column.name, _order(column)))
    return keys


def with_null_flags(table: pa.Table, schema: SortSchema) -> pa.Table:
    for column in schema.columns:
        if column.name in table.column_names and table.column(column.name).null_count:
            table = table.append_column(f"__isnull_{column.name}", pc.is_null(table.column(column.name)))
    return table


# Packed keys must stay below 2^63 so numpy sorts them as non-negative int64 would.
_KEY_BITS = 63


def _dense_ranks(column: pa.ChunkedArray | pa.Array, descending: bool) -> np.ndarray:
    """Non-negative integers that compare like the column under the comparator: a null after every value in
    the column's direction (last ascending, first descending), equal values equal ranks."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
        # Rank the distinct values (few, for tags) once, then map every row through its dictionary code.
        encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
        distinct = encoded.dictionary
        rank_of_code = np.empty(len(distinct), dtype=np.uint64)
        rank_of_code[pc.sort_indices(distinct).to_numpy()] = np.arange(len(distinct), dtype=np.uint64)
        codes = pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)
        ranks = rank_of_code[codes] if len(distinct) else np.zeros(len(column), dtype=np.uint64)
        top = len(distinct)
    elif pa.types.is_integer(kind) or pa.types.is_timestamp(kind) or pa.types.is_boolean(kind):
        values = pc.fill_null(column.cast(pa.int64()), 0).to_numpy(zero_copy_only=False)
        present = values[pc.is_valid(column).to_numpy(zero_copy_only=False)] if column.null_count else values
        low = int(present.min()) if len(present) else 0
        high = int(present.max()) if len(present) else 0
        if high - low < 1 << 40:
            # Offsets from the minimum order like the values and need only log2(range) bits (a timestamp
            # within one window needs ~10).
            ranks = (values - low).astype(np.uint64)
            top = high - low + 1
        else:
            uniques, inverse = np.unique(values, return_inverse=True)
            ranks, top = inverse.astype(np.uint64), len(uniques)
    else:
        ranks = pc.rank(column, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.uint64) - 1
        top = int(ranks.max()) + 1 if len(ranks) else 0
    if column.null_count:
        ranks[pc.is_null(column).to_numpy(zero_copy_only=False)] = top
    if descending:
        ranks = np.uint64(top) - ranks
    return ranks


def _packed_order(columns: list[np.ndarray]) -> np.ndarray | None:
    """Stable order by several rank arrays packed into one integer, most significant first; None when their
    bits do not fit one word."""
    widths = [int(r.max()).bit_length() if len(r) else 0 for r in columns]
    if sum(widths) > _KEY_BITS:
        return None
    key = np.zeros(len(columns[0]), dtype=np.uint64)
    for ranks, width in zip(columns, widths, strict=True):
        key = (key << np.uint64(width)) | ranks
    # A stable sort (timsort) exploits runs already in order, which ingested batches often have.
    return np.argsort(key, kind="stable")


def sort_indices(table: pa.Table, schema: SortSchema, leading: pa.Array | np.ndarray | None = None) -> pa.Array:
    """Stable row order of `table` by `schema`; `leading`, if given, is an int64 key sorted before it.

    Each sort column becomes dense ranks, packed into one 63-bit key sorted once (measured ~3x faster than a
    multi-column sort on string columns); when the ranks need more bits, a multi-column sort does the same."""
    rank_columns: list[np.ndarray] = []
    if leading is not None:
        rank_columns.append(_dense_ranks(pa.array(leading, type=pa.int64()), descending=False))
    for column in schema.columns:
        if column.name in table.column_names:
            rank_columns.append(_dense_ranks(table.column(column.name), column.descending))
    if not rank_columns or table.num_rows == 0:
        return pa.array(np.arange(table.num_rows, dtype=np.int64))
    order = _packed_order(rank_columns)
    if order is not None:
        return pa.array(order.astype(np.int64))
    return _multi_column_sort_indices(table, schema, leading)


def _multi_column_sort_indices(table: pa.Table, schema: SortSchema,
                               leading: pa.Array | np.ndarray | None) -> pa.Array:
    keyed = with_null_flags(table, schema)
    lead: list[tuple[str, str]] = []
    if leading is not None:
        keyed = keyed.append_column("__leading", pa.array(leading, type=pa.int64()))
        lead = [("__leading", "ascending")]
    keys = sort_keys(table, schema, lead)
    if not keys:
        return pa.array(np.arange(table.num_rows, dtype=np.int64))
    return pc.sort_indices(keyed, sort_keys=keys)


def is_sorted(table: pa.Table, schema: SortSchema) -> bool:
    """MC-3 check: true when the table is already in `schema` order (ties allowed)."""
    if table.num_rows < 2:
        return True
    order = sort_indices(table, schema).to_numpy()
    if np.array_equal(order, np.arange(table.num_rows)):
        return True
    # Not the identity permutation: still sorted if the reordering only moved rows with equal keys.
    names = [c.name for c in schema.columns if c.name in table.column_names]
    if not names:
        return True
    original = table.select(names)
    resorted = original.take(pa.array(order))
    return original.equals(resorted)
