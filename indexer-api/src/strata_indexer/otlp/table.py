"""Columns gathered while walking an OTLP request, made into one Arrow table of an index's schema."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from strata_indexer.otlp.schemas import RESOURCE_COLUMNS
from strata_indexer.otlp.values import Resource
from strata_shared.domain.fields import FieldType, arrow_schema
from strata_shared.errors import BadRequest

_TIMESTAMP = pa.timestamp("us", tz="UTC")


class Columns:
    """One Python list per column, filled record by record (resource and scope values a run at a time), then
    converted column by column: Arrow does the per-value work in C."""

    def __init__(self, names: list[str]) -> None:
        self.lists: dict[str, list[object]] = {name: [] for name in names}
        self.rows = 0

    def repeat(self, resource: Resource, scope_name: str, scope_version: str, count: int) -> None:
        """The resource's and the scope's values for the `count` rows under them (a promoted attribute the
        resource does not set is null)."""
        for column in RESOURCE_COLUMNS.values():
            self.lists[column].extend([resource.columns.get(column)] * count)
        self.lists["resource_attributes"].extend([resource.rest] * count)
        self.lists["scope_name"].extend([scope_name or None] * count)
        self.lists["scope_version"].extend([scope_version or None] * count)
        self.rows += count

    def table(self, fields: dict[str, FieldType], time_column: str) -> pa.Table:
        """The table of exactly `fields` (a column the request did not produce is null); `timestamp` is
        `time_column`'s nanoseconds in microseconds, null where they are 0 (unset in OTLP)."""
        schema = arrow_schema(fields.items())
        arrays = []
        for field in schema:
            if field.name == "timestamp":
                arrays.append(_timestamp(self._array(time_column, pa.int64())))
                continue
            values = self.lists.get(field.name)
            arrays.append(pa.nulls(self.rows, field.type) if values is None else self._array(field.name, field.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    def _array(self, name: str, arrow_type: pa.DataType) -> pa.Array:
        try:
            return pa.array(self.lists[name], type=arrow_type)
        except (pa.ArrowInvalid, OverflowError, TypeError) as exc:
            raise BadRequest(f"OTLP field {name!r} does not fit its column ({arrow_type}): {exc}") from exc


def _timestamp(nanos: pa.Array) -> pa.Array:
    unset = pc.equal(nanos, 0)
    micros = pc.divide(nanos, 1000)
    return pc.if_else(unset, pa.scalar(None, pa.int64()), micros).cast(_TIMESTAMP)
