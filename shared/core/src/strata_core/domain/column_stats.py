"""Per-column statistics of a split: typed min/max and a value regex (docs/architecture.md, "Split statistics").

A typed value is one of string, i64, u64, f64 or null, so that min/max compare correctly in the metastore and in
query pruning (a u64 above 2^63 or a string never becomes a float by accident).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

ValueType = Literal["string", "i64", "u64", "f64", "null"]
# Past this many distinct values a regex alternation stops being a useful filter; a prefix pattern replaces it.
MAX_REGEX_ALTERNATIVES = 32


@dataclass(frozen=True, slots=True)
class ColumnStats:
    name: str
    value_type: ValueType
    min_value: Any
    max_value: Any
    null_count: int
    regex: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.value_type,
            "min": self.min_value,
            "max": self.max_value,
            "null_count": self.null_count,
            "regex": self.regex,
        }

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> ColumnStats:
        return cls(name, data["type"], data.get("min"), data.get("max"), int(data.get("null_count", 0)),
                   data.get("regex"))


def value_type_of(arrow_type: pa.DataType) -> ValueType | None:
    """The typed-value kind min/max of this Arrow type is stored as; None where min/max mean nothing."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_signed_integer(arrow_type) or pa.types.is_timestamp(arrow_type) or pa.types.is_boolean(arrow_type):
        return "i64"
    if pa.types.is_unsigned_integer(arrow_type):
        return "u64"
    if pa.types.is_floating(arrow_type):
        return "f64"
    return None


def _as_plain(value: Any, value_type: ValueType) -> Any:
    if value is None:
        return None
    if value_type == "i64":
        if isinstance(value, bool):
            return int(value)
        if hasattr(value, "timestamp"):
            # Timestamps compare as microseconds since the epoch, the unit Strata stores them in.
            return int(pa.scalar(value, type=pa.timestamp("us", tz="UTC")).cast(pa.int64()).as_py())
        return int(value)
    if value_type == "u64":
        return int(value)
    if value_type == "f64":
        value = float(value)
        return None if math.isnan(value) else value
    return str(value)


def compute_column_stats(
    table: pa.Table, regex_columns: set[str] | frozenset[str] = frozenset()
) -> dict[str, ColumnStats]:
    """Exact min/max/null count of every column with an ordered type; a regex for the string columns named."""
    stats: dict[str, ColumnStats] = {}
    for name in table.column_names:
        column = table.column(name)
        value_type = value_type_of(column.type)
        if value_type is None:
            continue
        null_count = column.null_count
        if null_count == len(column):
            stats[name] = ColumnStats(name, "null", None, None, null_count)
            continue
        data = column
        if pa.types.is_timestamp(column.type):
            data = pc.cast(column, pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
        elif pa.types.is_boolean(column.type):
            data = pc.cast(column, pa.int8())
        min_max = pc.min_max(data)
        low = _as_plain(min_max["min"].as_py(), value_type)
        high = _as_plain(min_max["max"].as_py(), value_type)
        regex = value_regex(column) if value_type == "string" and name in regex_columns else None
        stats[name] = ColumnStats(name, value_type, low, high, null_count, regex)
    return stats


def value_regex(column: pa.ChunkedArray | pa.Array) -> str:
    """A regex that matches every non-null value of the column: an alternation when the values are few, else
    their longest common prefix followed by anything."""
    distinct = pc.unique(pc.drop_null(column))
    if pa.types.is_dictionary(distinct.type):
        distinct = distinct.dictionary_decode() if hasattr(distinct, "dictionary_decode") else distinct.cast(
            distinct.type.value_type)
    values = sorted(v for v in distinct.to_pylist() if v is not None)
    if not values:
        return "^$"
    if len(values) <= MAX_REGEX_ALTERNATIVES:
        return "^(?:" + "|".join(re.escape(v) for v in values) + ")$"
    prefix = _common_prefix(values[0], values[-1])
    return "^" + re.escape(prefix) + ".*$"


def _common_prefix(first: str, last: str) -> str:
    # In sorted order, the prefix shared by the first and last values is shared by all of them.
    length = 0
    for a, b in zip(first, last, strict=False):
        if a != b:
            break
        length += 1
    return first[:length]

