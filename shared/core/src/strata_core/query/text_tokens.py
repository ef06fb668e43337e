"""Which values of a string array hold every term of a text_match as a token, decided over the array's buffers.

One mechanism for both places that decide text_match over Arrow: the deletes' row filter
(`strata_core.query.row_filter`, exact: it decides which rows a delete removes) and the local scan's prefilter
(`strata_query.execution.text_rows`, per dictionary entry). Both call it on a dictionary's values (a row group's
few thousand distinct messages) or on a plain string column.

Token contract (`strata_core.sql.text_match`, `predicate.evaluate_row`): a token is a maximal run of ASCII letters
and digits, lowercased. Decided on UTF-8 bytes: lowercasing the ASCII letters alone changes no other byte, and every
byte of a non-ASCII character is >= 0x80, so it is never part of a token, exactly as in the contract. One
`bytes.find` per occurrence of a term over the whole array's data instead of a regex per value: the values are
laid end to end, and an occurrence counts only where it lies inside one value with a token boundary on each side.
"""

from __future__ import annotations

import string

import numpy as np
import pyarrow as pa

_ASCII_LOWER = bytes.maketrans(string.ascii_uppercase.encode(), string.ascii_lowercase.encode())
_TOKEN_BYTE = np.zeros(256, dtype=bool)
_TOKEN_BYTE[list((string.ascii_letters + string.digits).encode())] = True


def offset_strings(value_type: pa.DataType) -> bool:
    """Strings laid out as offsets and one data buffer, as `entries_holding` reads them (not string views)."""
    return pa.types.is_string(value_type) or pa.types.is_large_string(value_type)


def entries_holding(values: pa.Array, terms: tuple[str, ...]) -> np.ndarray:
    """A boolean per value of a string array (`offset_strings`): whether every term is one of its tokens (False for
    NULL). A term that is not a token itself (not lowercase ASCII letters and digits) is no value's token."""
    count = len(values)
    found = np.ones(count, dtype=bool)
    if count == 0:
        return found
    if not all(_is_token(term) for term in terms):
        return np.zeros(count, dtype=bool)
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


def _is_token(term: str) -> bool:
    return bool(term) and term.isascii() and term.isalnum() and term == term.lower()


def _occurrences(text: bytes, needle: bytes):
    """Every start of `needle` in `text`, overlapping ones too (a value's token can start inside an occurrence
    that began in the value before it)."""
    at = text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1)
