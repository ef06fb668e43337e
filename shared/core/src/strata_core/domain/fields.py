"""Declared index schemas: the field types Strata accepts and how they map to Arrow."""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable

import pyarrow as pa


class FieldType(enum.StrEnum):
    STRING = "string"
    I64 = "i64"
    U64 = "u64"
    F64 = "f64"
    BOOL = "bool"
    # Microseconds since the epoch, UTC.
    TIMESTAMP = "timestamp"
    STRING_LIST = "string_list"

    @property
    def arrow_type(self) -> pa.DataType:
        return _ARROW_TYPES[self]

    @property
    def sortable(self) -> bool:
        return self is not FieldType.STRING_LIST

    @property
    def can_be_timestamp(self) -> bool:
        """An `i64` timestamp counts seconds since the epoch; a `timestamp` counts microseconds."""
        return self in (FieldType.I64, FieldType.TIMESTAMP)


_ARROW_TYPES: dict[FieldType, pa.DataType] = {
    FieldType.STRING: pa.string(),
    FieldType.I64: pa.int64(),
    FieldType.U64: pa.uint64(),
    FieldType.F64: pa.float64(),
    FieldType.BOOL: pa.bool_(),
    FieldType.TIMESTAMP: pa.timestamp("us", tz="UTC"),
    FieldType.STRING_LIST: pa.list_(pa.string()),
}


def arrow_schema(fields: Iterable[tuple[str, FieldType]]) -> pa.Schema:
    return pa.schema([pa.field(name, field_type.arrow_type, nullable=True) for name, field_type in fields])


def field_type_of(arrow_type: pa.DataType) -> FieldType | None:
    """The declared type an Arrow type stores as, allowing the physical variants Parquet readers return."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return FieldType.STRING
    if pa.types.is_timestamp(arrow_type):
        return FieldType.TIMESTAMP
    if pa.types.is_signed_integer(arrow_type):
        return FieldType.I64
    if pa.types.is_unsigned_integer(arrow_type):
        return FieldType.U64
    if pa.types.is_floating(arrow_type):
        return FieldType.F64
    if pa.types.is_boolean(arrow_type):
        return FieldType.BOOL
    if (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)) and field_type_of(
        arrow_type.value_type
    ) is FieldType.STRING:
        return FieldType.STRING_LIST
    return None


def doc_mapping_uid(fields: Iterable[tuple[str, FieldType]], timestamp_field: str) -> str:
    """A stable id of the declared schema: splits of different schemas must never merge (CS-1)."""
    canonical = json.dumps(
        {"fields": [[name, str(field_type)] for name, field_type in fields], "timestamp": timestamp_field},
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
