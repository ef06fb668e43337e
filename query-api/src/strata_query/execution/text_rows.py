"""The rows of a scanned row group that can match a query's text_match conditions, decided once per dictionary
entry instead of once per row.

DuckDB runs text_match as one regex per term on every row: its shortcut of evaluating a function once per
dictionary entry does not reach an Arrow stream, so a full-text query spent most of its CPU there (docs/
benchmarks.md, "Q9 while merges run"). The RAM tier holds strings dictionary-encoded, a row group's few thousand
distinct messages for its tens of thousands of rows, so the local scan decides each entry here and drops the rows
that cannot match before DuckDB reads them. The query's SQL still applies the exact condition to the rows that
are left: a row wrongly kept costs time, only a row wrongly dropped would change an answer.

The WHERE clause is walked in negation normal form as pruning walks it (`strata_shared.query.pruning.may_match`):
AND keeps a row only if every child may match, OR if any child may, a text_match atom is decided per row, and any
other atom keeps every row. A row whose value is NULL makes its atom NULL, never TRUE, and NNF's AND/OR are
monotone, so such a row is dropped only where the whole predicate could not be TRUE either.

Token contract (`strata_shared.sql.text_match`): a token is a maximal run of ASCII letters and digits, lowercased.
Decided on UTF-8 bytes: lowercasing the ASCII letters alone changes no other byte, and every byte of a non-ASCII
character is >= 0x80, so it is never part of a token, exactly as in the contract.
"""

from __future__ import annotations

import string

import numpy as np
import pyarrow as pa

from strata_shared.query.predicate import And, Const, Or, Predicate, TextMatch

_ASCII_LOWER = bytes.maketrans(string.ascii_uppercase.encode(), string.ascii_lowercase.encode())
_TOKEN_BYTE = np.zeros(256, dtype=bool)
_TOKEN_BYTE[list((string.ascii_letters + string.digits).encode())] = True
# A chunk whose dictionary is not much smaller than its rows (Parquet fell back to plain encoding) gains little
# from deciding per entry: DuckDB decides those rows itself.
_MIN_ROWS_PER_ENTRY = 2


def _offset_strings(value_type: pa.DataType) -> bool:
    """Strings laid out as offsets and one data buffer, as `entries_holding` reads them (not string views)."""
    return pa.types.is_string(value_type) or pa.types.is_large_string(value_type)


def rows_that_may_match(predicate: Predicate, table: pa.Table) -> np.ndarray | None:
    """A boolean per row of `table`, False only where the row cannot satisfy `predicate` (in negation normal
    form); None when nothing is known to drop (no text_match decided on these columns)."""
    match predicate:
        case Const(value):
            return None if value else np.zeros(table.num_rows, dtype=bool)
        case And(children):
            masks = [m for child in children if (m := rows_that_may_match(child, table)) is not None]
            return np.logical_and.reduce(masks) if masks else None
        case Or(children):
            masks = [rows_that_may_match(child, table) for child in children]
            return None if any(m is None for m in masks) else np.logical_or.reduce(masks)
        case TextMatch(column, terms) if column in table.column_names:
            return _rows_holding(table.column(column), terms)
    return None


def _rows_holding(column: pa.ChunkedArray, terms: tuple[str, ...]) -> np.ndarray | None:
    parts = []
    for chunk in column.chunks:
        if (not isinstance(chunk, pa.DictionaryArray) or not _offset_strings(chunk.dictionary.type)
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


def entries_holding(values: pa.Array, terms: tuple[str, ...]) -> np.ndarray:
    """A boolean per value of a string array: whether every term is one of its tokens (False for NULL)."""
    count = len(values)
    found = np.ones(count, dtype=bool)
    if count == 0:
        return found
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    offsets = np.frombuffer(values.buffers()[1], dtype=width)[values.offset:values.offset + count + 1]
    offsets = offsets.astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    data = values.buffers()[2]
    text = (data[first:last].to_pybytes() if data is not None else b"").translate(_ASCII_LOWER)
    offsets -= first
    codes = np.frombuffer(text, dtype=np.uint8)
    for term in terms:
        needle = term.encode("ascii")
        starts = np.fromiter(_occurrences(text, needle), dtype=np.int64)
        holding = np.zeros(count, dtype=bool)
        if starts.size:
            # The value each occurrence starts in; an empty value shares its offset with the next one.
            entry = np.searchsorted(offsets, starts, side="right") - 1
            ends = starts + len(needle)
            value_end = offsets[entry + 1]
            before = np.maximum(starts - 1, 0)
            after = np.minimum(ends, max(len(codes) - 1, 0))
            whole = ((ends <= value_end)
                     & ((starts == offsets[entry]) | ~_TOKEN_BYTE[codes[before]])
                     & ((ends == value_end) | ~_TOKEN_BYTE[codes[after]]))
            holding[entry[whole]] = True
        found &= holding
    if values.null_count:
        found &= values.is_valid().to_numpy(zero_copy_only=False)
    return found


def _occurrences(text: bytes, needle: bytes):
    """Every start of `needle` in `text`, overlapping ones too (a value's token can start inside an occurrence
    that began in the value before it)."""
    at = text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1)
