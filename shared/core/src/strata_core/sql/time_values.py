"""Constant time values in SQL: interval literals as microseconds, and instants (literals, casts, the query's
fixed `now()`, and their sums with intervals) folded to epoch microseconds, so a bound on the timestamp column such
as `ts > now() - INTERVAL '10 minutes'` prunes like a literal does."""

from __future__ import annotations

import re

from sqlglot import exp

from strata_core.sql.literals import CoercionError, parse_rfc3339_micros

_UNIT_MICROS = {
    "microsecond": 1, "us": 1, "usec": 1, "microseconds": 1, "usecs": 1,
    "millisecond": 1_000, "ms": 1_000, "msec": 1_000, "milliseconds": 1_000, "msecs": 1_000,
    "second": 1_000_000, "s": 1_000_000, "sec": 1_000_000, "seconds": 1_000_000, "secs": 1_000_000,
    "minute": 60_000_000, "m": 60_000_000, "min": 60_000_000, "minutes": 60_000_000, "mins": 60_000_000,
    "hour": 3_600_000_000, "h": 3_600_000_000, "hours": 3_600_000_000, "hr": 3_600_000_000,
    "hrs": 3_600_000_000,
    "day": 86_400_000_000, "d": 86_400_000_000, "days": 86_400_000_000,
    "week": 604_800_000_000, "w": 604_800_000_000, "weeks": 604_800_000_000,
}
_VARIABLE_UNITS = {"month", "months", "mon", "mons", "year", "years", "y", "yr", "yrs", "quarter", "quarters",
                   "decade", "decades", "century", "centuries", "millennium", "millennia"}
_PART = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*")
_TIMESTAMP_TYPES = {exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ,
                    exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.DATETIME, exp.DataType.Type.DATE}


class VariableInterval(ValueError):
    """An interval in months or years: its length depends on the date it is added to."""


def interval_text_micros(text: str) -> int | None:
    """'5 minutes', '1 hour 30 minutes', '60 seconds' as microseconds; None when it is not an interval.
    Raises VariableInterval for months and years."""
    position, total, found = 0, 0, False
    text = text.strip()
    while position < len(text):
        match = _PART.match(text, position)
        if match is None:
            return None
        number, unit = match.group(1), match.group(2).lower()
        if unit in _VARIABLE_UNITS:
            raise VariableInterval(f"an interval of {unit} has no fixed length")
        if unit not in _UNIT_MICROS:
            return None
        micros = float(number) * _UNIT_MICROS[unit] if "." in number else int(number) * _UNIT_MICROS[unit]
        if micros != int(micros):
            return None
        total += int(micros)
        found = True
        position = match.end()
    return total if found else None


def interval_micros(node: exp.Expression) -> int | None:
    """An INTERVAL literal (or a string such as '5 minutes', as TimescaleDB's time_bucket takes) in microseconds;
    None when the node is not a constant interval. Raises VariableInterval for months and years."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Interval):
        value, unit = node.this, node.args.get("unit")
        if not isinstance(value, exp.Literal):
            return None
        text = value.this if unit is None else f"{value.this} {unit.name}"
        return interval_text_micros(str(text))
    if isinstance(node, exp.Literal) and node.is_string:
        return interval_text_micros(node.this)
    if isinstance(node, exp.Neg):
        inner = interval_micros(node.this)
        return None if inner is None else -inner
    return None


def instant_micros(node: exp.Expression) -> int | None:
    """The instant a constant expression denotes, in epoch microseconds, or None when it is not one: TIMESTAMP
    and DATE literals and casts of strings, the fixed `now()` (a `timestamp_micros` literal by then), and either
    plus or minus a fixed interval."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.UnixToTime) and node.args.get("scale") == exp.UnixToTime.MICROS:
        value, sign = node.this, 1
        if isinstance(value, exp.Neg):
            value, sign = value.this, -1
        if isinstance(value, exp.Literal) and not value.is_string and value.this.lstrip("-").isdigit():
            return sign * int(value.this)
        return None
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal) and node.this.is_string \
            and node.to.this in _TIMESTAMP_TYPES:
        try:
            micros = parse_rfc3339_micros(node.this.this)
        except CoercionError:
            return None
        return int(micros) if micros.denominator == 1 else None
    if isinstance(node, exp.Add | exp.Sub):
        try:
            base, shift = instant_micros(node.this), interval_micros(node.expression)
            if base is None and isinstance(node, exp.Add):
                base, shift = instant_micros(node.expression), interval_micros(node.this)
        except VariableInterval:
            return None
        if base is None or shift is None:
            return None
        return base + shift if isinstance(node, exp.Add) else base - shift
    return None
