"""Zone maps: per row group and column, the exact min, max, null count (and NaN count for floats).

Values are typed JSON scalars in the column's declared type: str for strings, int for i64/u64, timestamps as int
microseconds since the epoch (a finer file unit is rounded outwards: min down, max up), float for f64, bool for
bool. min and max are None when the row group holds no comparable value (all null, or all NaN). f64 min/max leave
NaN out, as Parquet statistics do; `nan_count` says whether a row group holds NaNs, which some engines order above
every number, so a query planner can keep such row groups for range predicates.

Parquet statistics are taken when present and exact: numbers, bools and timestamps always are; strings only when the
file says its values are exact (the Parquet `is_min_value_exact`/`is_max_value_exact` flags, when pyarrow exposes
them) or, without flags, when the writer is Arrow C++ (parquet-cpp), which drops over-long string statistics
instead of truncating them. Everything else, and floats always (statistics carry no NaN count), is computed from the
column's data with pyarrow.compute.

Payload: JSON `{"column_types": {column: field type}, "row_groups": [{"num_rows": n, "columns": {column: [min, max,
null_count, nan_count]}}]}` (Python's JSON, so ±Infinity floats are written as the Infinity tokens).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from strata_core.artifacts.envelope import ArtifactFormatError
from strata_core.domain.fields import FieldType

ZoneValue = str | int | float | bool | None
_MICROS_PER = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}
_PARQUET_UNITS = {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns"}
_ZONE_TYPES = frozenset(FieldType) - {FieldType.STRING_LIST}


@dataclass(frozen=True)
class ColumnZone:
    min: ZoneValue
    max: ZoneValue
    null_count: int
    nan_count: int = 0


@dataclass(frozen=True)
class RowGroupZones:
    num_rows: int
    columns: dict[str, ColumnZone]


@dataclass
class ZoneMap:
    row_groups: list[RowGroupZones]
    column_types: dict[str, FieldType] = field(default_factory=dict)

    def to_payload(self) -> bytes:
        document = {
            "column_types": {name: str(t) for name, t in self.column_types.items()},
            "row_groups": [
                {
                    "num_rows": group.num_rows,
                    "columns": {
                        name: [zone.min, zone.max, zone.null_count, zone.nan_count]
                        for name, zone in group.columns.items()
                    },
                }
                for group in self.row_groups
            ],
        }
        return json.dumps(document, separators=(",", ":")).encode()

    @classmethod
    def from_payload(cls, payload: bytes | memoryview) -> ZoneMap:
        try:
            document = json.loads(bytes(payload))
            column_types = {name: FieldType(t) for name, t in document["column_types"].items()}
            groups = []
            for group in document["row_groups"]:
                columns = {}
                for name, (low, high, nulls, nans) in group["columns"].items():
                    columns[name] = ColumnZone(low, high, int(nulls), int(nans))
                groups.append(RowGroupZones(int(group["num_rows"]), columns))
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ArtifactFormatError(f"bad zone map payload: {exc!r}") from None
        return cls(groups, column_types)


def _micros(value: int, unit: str, *, round_up: bool) -> int:
    per = _MICROS_PER[unit]
    if per is not None:
        return value * per
    return -((-value) // 1000) if round_up else value // 1000


def _timestamp_unit(statistics: pq.Statistics) -> str | None:
    logical = statistics.logical_type
    if logical is not None and logical.type == "TIMESTAMP":
        unit = json.loads(logical.to_json()).get("timeUnit", "")
        return {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}.get(unit)
    converted = statistics.converted_type or ""
    for suffix, unit in _PARQUET_UNITS.items():
        if converted == f"TIMESTAMP_{suffix}":
            return unit
    return None


def _strings_exact(statistics: pq.Statistics, writer_drops_long_statistics: bool) -> bool:
    flags = [getattr(statistics, name, None) for name in ("is_min_value_exact", "is_max_value_exact")]
    if all(isinstance(flag, bool) for flag in flags):
        return all(flags)
    return writer_drops_long_statistics


def zone_from_statistics(
    statistics: pq.Statistics | None, num_rows: int, field_type: FieldType, writer_drops_long_statistics: bool
) -> ColumnZone | None:
    """The zone Parquet statistics give exactly, or None when the data must be read."""
    if statistics is None or not statistics.has_null_count or field_type is FieldType.F64:
        return None
    nulls = statistics.null_count
    if nulls == num_rows:
        return ColumnZone(None, None, nulls)
    if not statistics.has_min_max:
        return None
    if field_type is FieldType.TIMESTAMP:
        unit = _timestamp_unit(statistics)
        low, high = statistics.min_raw, statistics.max_raw
        if unit is None or not isinstance(low, int) or not isinstance(high, int):
            return None
        return ColumnZone(_micros(low, unit, round_up=False), _micros(high, unit, round_up=True), nulls)
    low, high = statistics.min, statistics.max
    if field_type is FieldType.STRING:
        if not (isinstance(low, str) and isinstance(high, str)) or not _strings_exact(
            statistics, writer_drops_long_statistics
        ):
            return None
        return ColumnZone(low, high, nulls)
    if field_type is FieldType.BOOL:
        return ColumnZone(bool(low), bool(high), nulls) if isinstance(low, bool | int) else None
    if isinstance(low, bool) or not isinstance(low, int) or not isinstance(high, int):
        return None
    return ColumnZone(low, high, nulls)


def _comparable(chunk: pa.Array) -> pa.Array:
    """The values min/max is taken over: a dictionary chunk's referenced entries, a timestamp as its integers."""
    if pa.types.is_dictionary(chunk.type):
        used = pc.drop_null(pc.unique(chunk.indices))
        chunk = chunk.dictionary.take(used)
    if pa.types.is_timestamp(chunk.type):
        chunk = chunk.cast(pa.int64())
    return chunk


def zone_from_data(values: pa.ChunkedArray, field_type: FieldType) -> ColumnZone:
    nulls = values.null_count
    nans = 0
    lows: list[Any] = []
    highs: list[Any] = []
    value_type = values.type.value_type if pa.types.is_dictionary(values.type) else values.type
    unit = value_type.unit if pa.types.is_timestamp(value_type) else "us"
    for chunk in values.chunks:
        comparable = _comparable(chunk)
        if field_type is FieldType.F64:
            comparable = comparable.cast(pa.float64())
            nans += int(pc.sum(pc.is_nan(comparable)).as_py() or 0)
        result = pc.min_max(comparable)
        low, high = result["min"].as_py(), result["max"].as_py()
        if low is None or (isinstance(low, float) and math.isnan(low)):
            continue  # all null (or all NaN) in this chunk
        lows.append(low)
        highs.append(high)
    if not lows:
        return ColumnZone(None, None, nulls, nans)
    low, high = min(lows), max(highs)
    if field_type is FieldType.TIMESTAMP:
        low, high = _micros(low, unit, round_up=False), _micros(high, unit, round_up=True)
    elif field_type is FieldType.F64:
        low, high = float(low), float(high)
    return ColumnZone(low, high, nulls, nans)


class ZoneMapBuilder:
    """Zones of the given columns, row group by row group: from statistics where exact, else from data."""

    def __init__(self, footer: pq.FileMetaData, column_types: dict[str, FieldType]) -> None:
        unsupported = [name for name, t in column_types.items() if t not in _ZONE_TYPES]
        if unsupported:
            raise ValueError(f"no zone map for columns {unsupported}: min/max of a list means nothing")
        self.column_types = dict(column_types)
        self._footer = footer
        self._leaf = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
        self._drops_long_statistics = (footer.created_by or "").startswith("parquet-cpp")
        self._groups: list[RowGroupZones] = []

    def _statistics_zones(self, row_group: int) -> dict[str, ColumnZone | None]:
        group = self._footer.row_group(row_group)
        zones: dict[str, ColumnZone | None] = {}
        for name, field_type in self.column_types.items():
            chunk = group.column(self._leaf[name])
            statistics = chunk.statistics if chunk.is_stats_set else None
            zones[name] = zone_from_statistics(statistics, group.num_rows, field_type, self._drops_long_statistics)
        return zones

    def columns_to_read(self, row_group: int) -> list[str]:
        """The columns of this row group whose statistics are missing or not exact: `add_row_group` needs them."""
        return [name for name, zone in self._statistics_zones(row_group).items() if zone is None]

    def add_row_group(self, row_group: int, data: dict[str, pa.ChunkedArray]) -> None:
        num_rows = self._footer.row_group(row_group).num_rows
        zones = {
            name: zone if zone is not None else zone_from_data(data[name], self.column_types[name])
            for name, zone in self._statistics_zones(row_group).items()
        }
        self._groups.append(RowGroupZones(num_rows, zones))

    def finish(self) -> ZoneMap:
        return ZoneMap(self._groups, dict(self.column_types))
