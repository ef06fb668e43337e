"""Columns gathered while walking an OTLP request, made into one Arrow table of an index's schema."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from strata_core.domain.fields import FieldType, arrow_schema
from strata_core.errors import BadRequest
from strata_indexer.otlp.promoted import PromotedAttributes
from strata_indexer.otlp.schemas import RESOURCE_COLUMNS
from strata_indexer.otlp.values import Resource

_TIMESTAMP = pa.timestamp("us", tz="UTC")


# Columns whose value is the resource's or the scope's, the same for every row under them.
_SHARED = (*RESOURCE_COLUMNS.values(), "resource_attributes", "scope_name", "scope_version")


class Columns:
    """One Python list per record column, filled record by record, then converted column by column (Arrow does
    the per-value work in C); the resource's and scope's columns as runs (a value and how many rows), repeated by
    Arrow rather than copied into lists."""

    def __init__(self, names: list[str], fields: dict[str, FieldType]) -> None:
        self.lists: dict[str, list[object]] = {name: [] for name in names if name not in _SHARED}
        # Columns the index declares beyond the default schema, filled from record attributes (promoted.py).
        self.promoted = PromotedAttributes(fields, names)
        self.runs: list[tuple[Resource, str | None, str | None, int]] = []
        self.rows = 0

    def repeat(self, resource: Resource, scope_name: str, scope_version: str, count: int) -> None:
        """The resource's and the scope's values for the `count` rows under them (a promoted attribute the
        resource does not set is null)."""
        self.runs.append((resource, scope_name or None, scope_version or None, count))
        self.rows += count

    def table(self, fields: dict[str, FieldType], time_column: str) -> pa.Table:
        """The table of exactly `fields` (a column the request did not produce is null); `timestamp` is
        `time_column`'s nanoseconds in microseconds, null where they are 0 (unset in OTLP)."""
        schema = arrow_schema(fields.items())
        arrays = []
        for field in schema:
            if field.name == "timestamp":
                arrays.append(_timestamp(self._array(time_column, pa.int64())))
            elif field.name in _SHARED:
                arrays.append(self._shared(field.name, field.type))
            elif field.name in self.lists:
                arrays.append(self._array(field.name, field.type))
            elif field.name in self.promoted.lists:
                arrays.append(pa.array(self.promoted.lists[field.name], type=field.type))
            else:
                arrays.append(pa.nulls(self.rows, field.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    def _shared(self, name: str, arrow_type: pa.DataType) -> pa.Array:
        def value(resource: Resource, scope_name: str | None, scope_version: str | None) -> str | None:
            if name == "resource_attributes":
                return resource.rest
            if name == "scope_name":
                return scope_name
            if name == "scope_version":
                return scope_version
            return resource.columns.get(name)

        chunks = [pa.repeat(pa.scalar(value(*run[:3]), arrow_type), run[3]) for run in self.runs]
        return pa.concat_arrays(chunks) if chunks else pa.array([], arrow_type)

    def _array(self, name: str, arrow_type: pa.DataType) -> pa.Array:
        try:
            return pa.array(self.lists[name], type=arrow_type)
        except (pa.ArrowInvalid, OverflowError, TypeError) as exc:
            raise BadRequest(f"OTLP field {name!r} does not fit its column ({arrow_type}): {exc}") from exc


def _timestamp(nanos: pa.Array) -> pa.Array:
    unset = pc.equal(nanos, 0)
    micros = pc.divide(nanos, 1000)
    return pc.if_else(unset, pa.scalar(None, pa.int64()), micros).cast(_TIMESTAMP)
