"""Verification of a merge's outputs before they may be published: MC-1 row counts, MC-2 the row checksum,
MC-3 order, MC-4 the written schema (`check_footer`, a rewrite's outputs' too). A failure raises
MergeVerificationError."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.arrow_numpy import to_arrow
from strata_core.domain.sort_key import build_sort_key, first_unsorted
from strata_core.domain.sort_schema import SortSchema, compare_rows
from strata_jobs.merge_columns import ColumnBuilder
from strata_jobs.merge_inputs import logical_type
from strata_jobs.merge_spec import MergeVerificationError
from strata_jobs.row_checksum import combine, table_checksum

SPOT_CHECK_PAIRS = 64
# Rows per verification block: MC-3 keys and checksum accumulators stay this size whatever the output size.
VERIFY_BLOCK_ROWS = 1 << 18


def written_schema_problem(footer: pq.FileMetaData, union: pa.Schema) -> str | None:
    written = footer.schema.to_arrow_schema()
    if written.names != union.names:
        return f"written columns {written.names} != union {union.names}"
    for field in union:
        got = written.field(field.name).type
        if logical_type(got) != logical_type(field.type):
            return f"column {field.name!r} written as {got}, union type {field.type}"
    return None


def check_footer(footer: pq.FileMetaData, rows: int, union: pa.Schema, split_id: str) -> None:
    """MC-1 and MC-4 on what was written: the footer's rows are the table's, its schema the union."""
    if footer.num_rows != rows:
        raise MergeVerificationError(f"MC-1: output {split_id} holds {footer.num_rows} rows, {rows} were written")
    problem = written_schema_problem(footer, union)
    if problem:
        raise MergeVerificationError(f"MC-4: output {split_id}: {problem}")


class Verifier:
    """MC-1..MC-3 over the outputs, one output at a time, in blocks of VERIFY_BLOCK_ROWS rows.

    MC-3 recomputes sort keys per block from the block's own values (its own dictionaries and ranks: nothing
    is shared with the order computation) and checks them non-decreasing; each block boundary, and each output
    boundary, is checked with the reference comparator on Python values, as are sampled adjacent pairs."""

    def __init__(self, schema: SortSchema, union: pa.Schema, seed: int) -> None:
        self.schema = schema
        self.union = union
        self.checksum = 0
        self.rows = 0
        self.previous_last: tuple | None = None
        self.rng = np.random.default_rng(seed)
        self.sort_names = [c.name for c in schema.columns if c.name in union.names]
        self.descending = [c.descending for c in schema.columns if c.name in union.names]

    def check_table(self, table: pa.Table, label: str) -> None:
        self.checksum = combine(self.checksum, table_checksum(table, self.union.names))
        self.rows += table.num_rows
        if table.num_rows == 0 or not self.sort_names:
            return
        keyed = table.select(self.sort_names)
        for begin in range(0, table.num_rows, VERIFY_BLOCK_ROWS):
            block = keyed.slice(begin, VERIFY_BLOCK_ROWS)
            self._check_boundary(block, f"{label} row {begin}")
            columns = {}
            for name in self.sort_names:
                builder = ColumnBuilder(name, self.union.field(name).type, block.num_rows)
                builder.add(block.column(name), block.num_rows)
                columns[name] = builder.finish()
            bad = first_unsorted(build_sort_key(columns, self.schema))
            del columns
            if bad is not None:
                raise MergeVerificationError(f"MC-3: {label} is not sorted at row {begin + bad}")
        count = min(SPOT_CHECK_PAIRS, table.num_rows - 1)
        if count > 0:
            positions = np.unique(self.rng.integers(0, table.num_rows - 1, count))
            bad = spot_check_pairs(keyed, self.schema, positions)
            if bad is not None:
                raise MergeVerificationError(f"MC-3: {label} rows {bad} and {bad + 1} are out of order")

    def _check_boundary(self, block: pa.Table, where: str) -> None:
        """The block's first row is not below the previous block's (or output's) last row."""
        ends = block.take(to_arrow(np.array([0, block.num_rows - 1], dtype=np.int64))).to_pylist()
        first = tuple(ends[0][n] for n in self.sort_names)
        if self.previous_last is not None and compare_rows(self.previous_last, first, self.descending) > 0:
            raise MergeVerificationError(f"MC-3: {where} is below the row before it")
        self.previous_last = tuple(ends[1][n] for n in self.sort_names)


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
        if compare_rows(left, right, descending) > 0:
            return int(p)
    return None
