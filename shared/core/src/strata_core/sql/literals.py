"""SQL literals as values of a column's type.

Choices (docs/architecture.md, "Query planning", sums them up):
- A `timestamp` column (microseconds) accepts RFC 3339 strings ('2026-01-01T00:00:00Z', offset optional and then
  UTC, date only = midnight UTC), `TIMESTAMP '...'` / `DATE '...'`, and integers meaning epoch microseconds. Spark
  would read an integer as seconds, so such literals are rewritten to `timestamp_micros(n)` for execution.
- The i64 timestamp column (epoch seconds) accepts the same strings and integers meaning epoch seconds; a string is
  rewritten to its number of seconds (a decimal when it has a fraction of a second).
- Other columns take literals of their own kind (a string for a string, a number for a number, TRUE/FALSE for a
  bool); a mismatch is refused rather than left to Spark's implicit casts.
- A number with a fraction compared with an integer column is kept exact (as a Fraction) so that the caller can
  round the comparison instead of changing its meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from typing import Literal as TypingLiteral

from sqlglot import exp

from strata_core.domain.fields import FieldType

# "instant": epoch microseconds folded from a constant time expression (time_values.instant_micros).
Kind = TypingLiteral["null", "bool", "string", "number", "timestamp", "instant"]

_TIMESTAMP_TYPES = {exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ,
                    exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.DATETIME, exp.DataType.Type.DATE}
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?"
    r"\s*(Z|z|UTC|[+-]\d{2}:?\d{2})?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RawLiteral:
    """A literal as written: its kind and its value (numbers as exact Fractions or ints, timestamps as text)."""

    kind: Kind
    value: object


def raw_literal(node: exp.Expression) -> RawLiteral | None:
    """The literal this expression is, or None when it is not a constant the IR can use."""
    if isinstance(node, exp.Paren):
        return raw_literal(node.this)
    if isinstance(node, exp.Null):
        return RawLiteral("null", None)
    if isinstance(node, exp.Boolean):
        return RawLiteral("bool", bool(node.this))
    if isinstance(node, exp.Literal):
        if node.is_string:
            return RawLiteral("string", node.this)
        return RawLiteral("number", _number(node.this))
    if isinstance(node, exp.Neg):
        inner = raw_literal(node.this)
        if inner is not None and inner.kind == "number":
            return RawLiteral("number", -inner.value)  # type: ignore[operator]
        return None
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string:
        if node.to.this in _TIMESTAMP_TYPES:
            return RawLiteral("timestamp", node.this.this)
    return None


def _number(text: str) -> int | Fraction:
    if re.fullmatch(r"\d+", text):
        return int(text)
    value = Fraction(text)
    return int(value) if value.denominator == 1 else value


class CoercionError(ValueError):
    pass


def coerce(raw: RawLiteral, column: str, field_type: FieldType, *, is_timestamp_field: bool) -> object:
    """The literal as a value of the column's type: str, int, float, bool, None, or a Fraction for a fractional
    number against an integer column. Raises CoercionError with a message naming the column."""
    if raw.kind == "null":
        return None
    if field_type is FieldType.TIMESTAMP:
        return _timestamp_micros(raw, column)
    if field_type is FieldType.I64 and is_timestamp_field:
        return _timestamp_seconds(raw, column)
    if field_type in (FieldType.I64, FieldType.U64):
        if raw.kind != "number":
            raise CoercionError(f"column {column!r} is {field_type}: compare it with a number")
        return raw.value
    if field_type is FieldType.F64:
        if raw.kind != "number":
            raise CoercionError(f"column {column!r} is f64: compare it with a number")
        value = raw.value
        try:
            as_float = float(value)  # type: ignore[arg-type]
        except OverflowError as error:
            raise CoercionError(f"{value} is out of the range of f64 column {column!r}") from error
        # Keep an integer that a float would round (Python compares int and float exactly).
        return as_float if isinstance(value, Fraction) or as_float == value else value
    if field_type is FieldType.BOOL:
        if raw.kind != "bool":
            raise CoercionError(f"column {column!r} is bool: compare it with TRUE or FALSE")
        return raw.value
    if field_type is FieldType.STRING:
        if raw.kind != "string":
            raise CoercionError(f"column {column!r} is a string: compare it with a string literal")
        return raw.value
    raise CoercionError(f"column {column!r} is {field_type}: it cannot be compared with a literal")


def _timestamp_micros(raw: RawLiteral, column: str) -> int:
    if raw.kind == "number":
        if not isinstance(raw.value, int):
            raise CoercionError(f"timestamp column {column!r}: a number means whole epoch microseconds")
        return raw.value
    if raw.kind in ("string", "timestamp"):
        micros = parse_rfc3339_micros(str(raw.value), column)
        if micros.denominator != 1:
            raise CoercionError(f"timestamp column {column!r} has microsecond precision: {raw.value!r} is finer")
        return int(micros)
    raise CoercionError(f"timestamp column {column!r}: compare it with an RFC 3339 string or epoch microseconds")


def _timestamp_seconds(raw: RawLiteral, column: str) -> int | Fraction:
    if raw.kind == "instant":
        seconds = Fraction(raw.value, 1_000_000)  # type: ignore[arg-type]
        return int(seconds) if seconds.denominator == 1 else seconds
    if raw.kind == "number":
        return raw.value  # type: ignore[return-value]
    if raw.kind in ("string", "timestamp"):
        seconds = parse_rfc3339_micros(str(raw.value), column) / 1_000_000
        return int(seconds) if seconds.denominator == 1 else seconds
    raise CoercionError(f"timestamp column {column!r}: compare it with an RFC 3339 string or epoch seconds")


def parse_rfc3339_micros(text: str, column: str = "") -> Fraction:
    """Microseconds since the epoch, exact (a fraction when the text has sub-microsecond digits)."""
    match = _RFC3339.fullmatch(text.strip())
    if match is None:
        raise CoercionError(f"{text!r} is not an RFC 3339 timestamp (e.g. 2026-01-01T00:00:00Z)"
                            + (f" for column {column!r}" if column else ""))
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                          tzinfo=_zone(offset))
    except ValueError as error:
        raise CoercionError(f"{text!r} is not a valid timestamp: {error}") from error
    whole = (moment - _EPOCH) // timedelta(microseconds=1)
    nanos = int((fraction or "").ljust(9, "0"))
    return whole + Fraction(nanos, 1000)


def _zone(offset: str | None) -> timezone:
    if offset is None or offset in ("Z", "z", "UTC"):
        return UTC
    digits = offset[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return timezone(-delta if offset[0] == "-" else delta)


def decimal_text(value: int | Fraction) -> str:
    """The exact decimal form of an integer or of a fraction whose denominator divides a power of ten."""
    if isinstance(value, int):
        return str(value)
    sign = "-" if value < 0 else ""
    value = abs(value)
    digits = 0
    while (value * 10**digits).denominator != 1:
        digits += 1
        if digits > 30:
            raise ValueError(f"{value} has no finite decimal form")
    scaled = int(value * 10**digits)
    whole, rest = divmod(scaled, 10**digits)
    return f"{sign}{whole}.{str(rest).rjust(digits, '0')}" if digits else f"{sign}{whole}"
