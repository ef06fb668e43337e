"""The rows of a scanned row group that can match a query's text_match conditions, decided once per dictionary
entry instead of once per row.

DuckDB runs text_match as one regex per term on every row: its shortcut of evaluating a function once per
dictionary entry does not reach an Arrow stream, so a full-text query spent most of its CPU there (docs/
benchmarks.md, "Q9 while merges run"). The RAM tier holds strings dictionary-encoded, a row group's few thousand
distinct messages for its tens of thousands of rows, so the local scan decides each entry here and drops the rows
that cannot match before DuckDB reads them. The query's SQL still applies the exact condition to the rows that
are left: a row wrongly kept costs time, only a row wrongly dropped would change an answer.

The WHERE clause is walked in negation normal form as pruning walks it (`strata_core.query.pruning.may_match`):
AND keeps a row only if every child may match, OR if any child may, a text_match atom is decided per row, and any
other atom keeps every row. A row whose value is NULL makes its atom NULL, never TRUE, and NNF's AND/OR are
monotone, so such a row is dropped only where the whole predicate could not be TRUE either.

Each entry is decided by `strata_core.query.text_tokens.entries_holding`, the token contract's one evaluator
over Arrow (the deletes' row filter uses it too).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from strata_core.query.predicate import Atom, Predicate, PredicateVisitor, TextMatch, Unknown, visit
from strata_core.query.text_tokens import entries_holding, offset_strings

# A chunk whose dictionary is not much smaller than its rows (Parquet fell back to plain encoding) gains little
# from deciding per entry: DuckDB decides those rows itself.
_MIN_ROWS_PER_ENTRY = 2


def rows_that_may_match(predicate: Predicate, table: pa.Table) -> np.ndarray | None:
    """A boolean per row of `table`, False only where the row cannot satisfy `predicate` (in negation normal
    form); None when nothing is known to drop (no text_match decided on these columns)."""
    return visit(predicate, _TextRows(table))


class _TextRows(PredicateVisitor[np.ndarray | None]):
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def visit_const(self, value: bool) -> np.ndarray | None:
        return None if value else np.zeros(self.table.num_rows, dtype=bool)

    def visit_and(self, results: Iterator[np.ndarray | None]) -> np.ndarray | None:
        masks = [mask for mask in results if mask is not None]
        return np.logical_and.reduce(masks) if masks else None

    def visit_or(self, results: Iterator[np.ndarray | None]) -> np.ndarray | None:
        masks = list(results)
        return None if any(mask is None for mask in masks) else np.logical_or.reduce(masks)

    def visit_not(self, result: np.ndarray | None) -> np.ndarray | None:
        return None

    def visit_unknown(self, pred: Unknown) -> np.ndarray | None:
        return None

    def visit_atom(self, atom: Atom) -> np.ndarray | None:
        if isinstance(atom, TextMatch) and atom.column in self.table.column_names:
            return _rows_holding(self.table.column(atom.column), atom.terms)
        return None


def _rows_holding(column: pa.ChunkedArray, terms: tuple[str, ...]) -> np.ndarray | None:
    parts = []
    for chunk in column.chunks:
        if (not isinstance(chunk, pa.DictionaryArray) or not offset_strings(chunk.dictionary.type)
                or len(chunk.dictionary) * _MIN_ROWS_PER_ENTRY > len(chunk)):
            return None
        entries = entries_holding(chunk.dictionary, terms)
        indices = chunk.indices
        if not len(entries):
            parts.append(np.zeros(len(chunk), dtype=bool))
        elif indices.null_count:
            parts.append(entries[indices.fill_null(0).to_numpy()] & indices.is_valid().to_numpy(zero_copy_only=False))
        else:
            parts.append(entries[indices.to_numpy()])
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
