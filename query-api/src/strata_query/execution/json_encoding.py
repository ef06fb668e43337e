"""Result rows as JSON texts, computed a column at a time with Arrow's compute kernels rather than a value at a
time in Python.

`encode_rows(batch, prefix, suffix)` gives one string per row, `prefix + {"name":value,...} + suffix`, byte for
byte what `json.dumps({name: _plain(value) ...}, separators=(",", ":"))` gives for that row of
`batch.to_pylist()`: each column becomes an array of JSON texts (`column_parts`), and the rows are those texts
joined element-wise between the keys (one `binary_join_element_wise`; a repeated column name keeps, as a dict
does, its first place and its last value).

Non-ASCII text keeps Python's `\\uXXXX` escapes (json.dumps' default ensure_ascii=True), so the bytes are the
same as the per-row encoder's: the values holding a non-ASCII or escape-only control character are few in
observability data, and only they are encoded by Python's json, one value at a time.

Per type. Anything else (lists, structs, maps, binary, durations, times, float16, extension types, timestamps
in a zone other than UTC, timestamps and dates outside Python's years 1-9999, decimals of negative scale) is
encoded by Python's json for that column, value by value as the per-row encoder did: the same bytes, or the
same error.
  ints            Arrow's cast to string (the digits Python prints);
  floats          Arrow's shortest round-trip digits, put in Python's repr layout (`1.0`, `1e-07`); NaN is null,
                  +/-inf the strings "Infinity" / "-Infinity" (as `_plain`); the values whose layout differs
                  (1e10 <= |x| < 1e16, 1e-6 <= |x| < 1e-4) by Python's json;
  bools, nulls    true / false / null;
  strings         escaped with replace_substring (backslash, quote, \\b \\f \\n \\r \\t);
  timestamps      UTC or naive, any unit: `isoformat()` of the datetime (pandas Timestamp for ns) `to_pylist`
                  returns, fraction omitted when zero, `+00:00` when aware;
  dates           `YYYY-MM-DD`;
  decimals        an integer when integral, else the float (as `_plain`);
  dictionaries    their decoded values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import importlib.util
import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SEPARATORS = (",", ":")
# Time zones whose datetimes `isoformat()` writes with +00:00 (other zones shift the wall time: Python's json).
_UTC_ZONES = frozenset({"UTC", "Etc/UTC", "+00:00"})
# Bounds of Python's datetime (to_pylist raises outside them; so does the fallback, as the per-row encoder did).
_MIN_DATETIME_US = -62135596800_000000  # 0001-01-01T00:00:00
_MAX_DATETIME_US = 253402300799_999999  # 9999-12-31T23:59:59.999999
_MIN_DATE_DAYS, _MAX_DATE_DAYS = -719162, 2932896

# A value needing Python's json: non-ASCII (\\uXXXX escapes) or a control character without a short escape.
_NEEDS_PYTHON = r"[^\x08-\x0a\x0c\x0d\x20-\x7e]"
_ESCAPES = [("\\", "\\\\"), ('"', '\\"'), ("\b", "\\b"), ("\f", "\\f"), ("\n", "\\n"), ("\r", "\\r"),
            ("\t", "\\t")]

# pyarrow gives nanosecond timestamps as pandas Timestamps when pandas is there (their isoformat is followed
# below), datetimes otherwise (then Python's json). Looked up, not imported: importing pandas takes a while.
_NS_AS_PANDAS = importlib.util.find_spec("pandas") is not None


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _dumps(value) -> str:
    return json.dumps(_plain(value), separators=SEPARATORS)


def python_texts(array: pa.Array) -> pa.Array:
    """The JSON text of each value by Python's json (the per-row encoder's own steps)."""
    return pa.array([_dumps(v) for v in array.to_pylist()], pa.string())


# A column's encoding: (opening, texts, closing): the JSON text of a value is opening + text + closing, and null
# where the text is null. The quotes of a column without nulls are left out of its texts (the row's glue holds
# them: one pass less).
Parts = tuple[str, pa.Array, str]


def _patch(texts: pa.Array, values: pa.Array, mask: pa.Array, unquote: bool = False) -> pa.Array:
    """`texts` with the values under `mask` encoded by Python's json instead (without their quotes if
    `unquote`: they are strings)."""
    mask = mask.fill_null(False)
    if not pc.any(mask).as_py():
        return texts
    picked = [_dumps(v) for v in values.filter(mask).to_pylist()]
    if unquote:
        picked = [text[1:-1] for text in picked]
    return pc.replace_with_mask(texts, mask, pa.array(picked, pa.string()))


def _quoted(texts: pa.Array) -> Parts:
    if texts.null_count:
        return "", pc.binary_join_element_wise('"', texts, '"', ""), ""
    return '"', texts, '"'


def _floats(values: pa.Array) -> Parts:
    values = values.cast(pa.float64())  # float32 too: to_pylist gives the float64 of the value
    magnitude = np.abs(values.fill_null(0.0).to_numpy())
    finite = np.isfinite(magnitude)
    if not finite.all():
        values = pc.if_else(pc.is_nan(values), pa.scalar(None, pa.float64()), values)  # NaN: null
    texts = values.cast(pa.string())
    # Arrow writes shortest round-trip digits (Python's digits), in fixed notation for 1e-6 <= |x| < 1e10 ("1",
    # "0.00001") and exponent notation otherwise ("1e+10", "1e-7"); Python's repr uses fixed notation for
    # 1e-4 <= |x| < 1e16, with ".0" on integers, and two exponent digits at least. The bands where the two
    # notations differ are left to Python; elsewhere the text is adjusted. (The bounds are compared as doubles:
    # 1e-4 and 1e-6 are not exact, but a double below the one nearest them has shortest digits below them too.)
    with np.errstate(invalid="ignore"):
        whole = finite & (magnitude < 1e16) & (np.trunc(magnitude) == magnitude)
        if whole.any():
            texts = pc.if_else(pa.array(whole), pc.binary_join_element_wise(texts, ".0", ""), texts)
        if ((magnitude > 0) & (magnitude < 1e-6)).any():
            texts = pc.replace_substring_regex(texts, r"e-(\d)$", r"e-0\1")
        python = ((magnitude >= 1e10) & (magnitude < 1e16)) | ((magnitude >= 1e-6) & (magnitude < 1e-4))
    if python.any():
        texts = _patch(texts, values, pa.array(python))
    if not finite.all():
        texts = pc.if_else(pc.equal(values, math.inf), '"Infinity"', texts)
        texts = pc.if_else(pc.equal(values, -math.inf), '"-Infinity"', texts)
    return "", texts, ""


def _text_bytes(texts: pa.Array) -> np.ndarray:
    """The bytes of a string array's values, back to back."""
    data = texts.buffers()[2]
    if data is None or not len(texts):
        return np.zeros(0, np.uint8)
    offsets = text_offsets(texts)
    return np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]]


def _strings(values: pa.Array) -> Parts:
    if values.type != pa.string():
        values = values.cast(pa.string())
    raw = _text_bytes(values)
    texts = values
    if np.any((raw == 0x22) | (raw == 0x5C) | (raw < 0x20)):  # a quote, a backslash, a control character
        for char, escaped in _ESCAPES:
            texts = pc.replace_substring(texts, char, escaped)
    if np.any((raw < 0x20) | (raw >= 0x7F)):  # maybe a character with no short escape, or non-ASCII
        texts = _patch(texts, values, pc.match_substring_regex(values, _NEEDS_PYTHON), unquote=True)
    return _quoted(texts)


def _in_range(values: pa.Array, low: int, high: int) -> bool:
    bounds = pc.min_max(values.view(pa.int32() if pa.types.is_date32(values.type) else pa.int64()))
    low_seen, high_seen = bounds["min"].as_py(), bounds["max"].as_py()
    return low_seen is None or (low_seen >= low and high_seen <= high)


def _timestamps(values: pa.Array) -> Parts | None:
    unit, tz = values.type.unit, values.type.tz
    if tz is not None and tz not in _UTC_ZONES:
        return None
    if unit == "ns":
        if not _NS_AS_PANDAS:
            return None
        # pandas' isoformat: nine digits when the nanoseconds are not zero, six when only the microseconds are.
        texts = values.cast(pa.timestamp("ns")).cast(pa.string())
        texts = pc.replace_substring_regex(texts, r"^(\S+) (\S+?)(?:\.000000000|(\.\d{6})000)?$", r"\1T\2\3")
    else:
        # A datetime has microseconds: seconds and milliseconds are widened (isoformat writes six digits, or none
        # when they are zero). "YYYY-MM-DD HH:MM:SS.ffffff" has one space and ".000000" only as its fraction.
        per_us = {"s": 1_000_000, "ms": 1_000, "us": 1}[unit]
        if not _in_range(values, -(-_MIN_DATETIME_US // per_us), _MAX_DATETIME_US // per_us):
            return None
        texts = values.cast(pa.timestamp("us")).cast(pa.string())
        texts = pc.replace_substring(pc.replace_substring(texts, " ", "T"), ".000000", "")
    if tz is not None:
        texts = pc.binary_join_element_wise(texts, "+00:00", "")
    return _quoted(texts)


def _dates(values: pa.Array) -> Parts | None:
    days = values.cast(pa.date32())
    if not _in_range(days, _MIN_DATE_DAYS, _MAX_DATE_DAYS):
        return None
    return _quoted(days.cast(pa.string()))


def _decimals(values: pa.Array) -> Parts | None:
    if values.type.scale < 0:
        return None
    digits = values.cast(pa.string())  # "1.50", "-2.00", "0E-37", "-5.000000E-31"
    integral = pc.match_substring_regex(digits, r"^-?\d+(\.0+)?$|^-?0(\.0*)?E")
    whole = pc.replace_substring_regex(digits, r"^-?0(\.0*)?E.*$|^-?0(\.0+)?$", "0")
    whole = pc.replace_substring_regex(whole, r"^(-?\d+)\.0+$", r"\1")
    if pc.all(integral.fill_null(True)).as_py():
        return "", whole, ""
    _, floats, _ = _floats(digits.cast(pa.float64()))  # correctly rounded, as float(Decimal) is
    return "", pc.if_else(integral, whole, floats), ""


def _vectorized(values: pa.Array) -> Parts | None:
    kind = values.type
    if pa.types.is_dictionary(kind):
        return column_parts(values.dictionary_decode())
    if pa.types.is_null(kind):
        return "", values.cast(pa.string()), ""
    if pa.types.is_integer(kind):
        return "", values.cast(pa.string()), ""
    if pa.types.is_boolean(kind):
        return "", pc.if_else(values, "true", "false"), ""
    if pa.types.is_float32(kind) or pa.types.is_float64(kind):
        return _floats(values)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return _strings(values)
    if pa.types.is_timestamp(kind):
        return _timestamps(values)
    if pa.types.is_date(kind):
        return _dates(values)
    if pa.types.is_decimal(kind):
        return _decimals(values)
    return None


def column_parts(values: pa.Array) -> Parts:
    """A column's encoding, (opening, texts, closing); Python's json for the types not handled above."""
    try:
        parts = _vectorized(values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        parts = None  # e.g. past 2 GiB of text in one array: Python's json
    return ("", python_texts(values), "") if parts is None else parts


def column_texts(values: pa.Array) -> pa.Array:
    """The JSON text of each value of a column (a string array without nulls)."""
    opening, texts, closing = column_parts(values)
    return pc.binary_join_element_wise(opening, texts, closing, "", null_handling="replace",
                                       null_replacement="null") if len(texts) else texts


def encode_rows(batch: pa.RecordBatch, prefix: str = "", suffix: str = "") -> pa.Array:
    """`prefix + json.dumps(row) + suffix` for each row, as a string array."""
    # As a dict of the row would: a repeated name keeps its first place and its last value.
    places: dict[str, int] = {}
    for i, name in enumerate(batch.schema.names):
        places[name] = i
    if not places or not batch.num_rows:  # no columns: no rows either (the per-row encoder zipped the columns)
        return pa.array([], pa.string())
    pieces: list = []
    glue = prefix + "{"
    for name, i in places.items():
        opening, texts, closing = column_parts(batch.column(i))
        pieces.append(pa.scalar(glue + json.dumps(name) + ":" + opening, pa.string()))
        pieces.append(texts)
        glue = closing + ","
    pieces.append(pa.scalar(glue[:-1] + "}" + suffix, pa.string()))
    # A null text is a null value: "null" (the texts of a column with nulls carry their own quotes).
    return pc.binary_join_element_wise(*pieces, "", null_handling="replace", null_replacement="null")


def joined(texts: pa.Array, start: int, stop: int) -> bytes:
    """The concatenation of `texts[start:stop]` (a string array without nulls), straight from its buffer."""
    offsets = text_offsets(texts)
    data = texts.buffers()[2]
    if data is None:
        return b""
    return memoryview(data)[offsets[start]:offsets[stop]].tobytes()


def text_offsets(texts: pa.Array) -> np.ndarray:
    """The len(texts) + 1 byte offsets of a string array's values in its data buffer."""
    return np.frombuffer(texts.buffers()[1], dtype=np.int32, count=len(texts) + 1, offset=4 * texts.offset)
