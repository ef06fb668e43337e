"""Batch inserts as one statement whose parameters are one array per column:
`INSERT INTO t (a, b, ...) SELECT ... FROM unnest($1, $2, ...)`.

However many rows a batch holds, SQLAlchemy binds a handful of lists, asyncpg encodes each in one pass, PostgreSQL
parses one statement, and the statement-level triggers (migration 0008) run once. A list of row dicts instead
costs SQLAlchemy a parameter set per row (every bind processor, JSON and enums included) and goes out as multi-row
INSERTs of at most 1,000 rows: that was most of the metastore time of a 1,000-split registration.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import asyncpg
from sqlalchemy import ARRAY, Enum, Table, Text, bindparam, cast, func, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.postgresql.dml import Insert


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _json_list(value: Any) -> str:
    # No None: ARRAY(SELECT ...) of a NULL is an empty array, not NULL.
    return json.dumps(list(value))


class ColumnArrays:
    """The insert of `names` (every column of `table` without a server-computed value, by default) from one array
    parameter per column; `params` turns rows (dicts with every name) into those arrays.

    Each array goes out as the column's own type, except where asyncpg has no array encoding matching the column:
    JSONB columns travel as JSON text, ARRAY columns (one list per row, so not a rectangular array) as JSON text
    expanded back in PostgreSQL, and enum columns as their labels, cast to the enum. `prefix` is put before each
    parameter's name, so two of these can be parts of one statement (a data-modifying CTE and its main insert)."""

    def __init__(self, table: Table, names: Sequence[str] | None = None, *, prefix: str = "") -> None:
        self.table = table
        self.prefix = prefix
        self.names = tuple(names if names is not None else
                           (c.name for c in table.columns if c.computed is None))
        self._encoders: dict[str, Callable[[Any], Any]] = {}
        # What binary COPY (`copy`) needs of a value instead: JSONB as JSON text, an enum member as its label; a
        # list for an ARRAY column goes as it is.
        copy_encoders: list[tuple[int, Callable[[Any], Any]]] = []
        arrays = []
        for position, name in enumerate(self.names):
            column_type = table.c[name].type
            if isinstance(column_type, JSONB):
                self._encoders[name] = _json
                copy_encoders.append((position, _json))
            elif isinstance(column_type, ARRAY):
                self._encoders[name] = _json_list
            elif isinstance(column_type, Enum):
                labels = ({} if column_type.enum_class is None else
                          dict(zip(column_type.enum_class, column_type.enums, strict=True)))
                self._encoders[name] = lambda v, labels=labels: labels.get(v, v)
                copy_encoders.append((position, self._encoders[name]))
            wire = Text() if name in self._encoders else column_type
            arrays.append(cast(bindparam(prefix + name), ARRAY(wire)))
        rows = func.unnest(*arrays).table_valued(*self.names).render_derived()
        values = []
        for name in self.names:
            column_type, value = table.c[name].type, rows.c[name]
            if isinstance(column_type, JSONB):
                value = cast(value, JSONB)
            elif isinstance(column_type, ARRAY):
                value = func.array(select(func.jsonb_array_elements_text(cast(value, JSONB)))
                                   .correlate(rows).scalar_subquery())
            elif isinstance(column_type, Enum):
                value = cast(value, column_type)
            values.append(value)
        # A PostgreSQL insert: ON CONFLICT or RETURNING are added to it as to any other.
        self.statement: Insert = pg_insert(table).from_select(self.names, select(*values).select_from(rows))

        self._copy_encoders = tuple(copy_encoders)
        self._getter = itemgetter(*self.names)

    def records(self, rows: Iterable[Mapping[str, Any]]) -> list[tuple[Any, ...]]:
        """Rows (dicts with every name) as `copy` takes them: tuples in `names` order."""
        getter, encoders = self._getter, self._copy_encoders
        if not encoders:
            return [getter(row) for row in rows]
        out = []
        for row in rows:
            values = list(getter(row))
            for position, encode in encoders:
                values[position] = encode(values[position])
            out.append(tuple(values))
        return out

    async def copy(self, connection: asyncpg.Connection, records: Sequence[Sequence[Any]]) -> None:
        """The rows (`records`, or tuples in `names` order of values as binary COPY takes them) written with one
        binary COPY. asyncpg encodes each value with its column's codec in C, where an array parameter costs it a
        nesting check (two ABC `isinstance` calls) per value: most of the Python of a registration's insert
        (docs/benchmarks.md, "Registration, CPU per split cut"). The table's statement-level triggers fire once,
        as for one INSERT; unlike `statement`, no ON CONFLICT can be added."""
        await connection.copy_records_to_table(self.table.name, records=records, columns=self.names)

    def params(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for name in self.names:
            encode = self._encoders.get(name)
            column = [row[name] for row in rows]
            out[self.prefix + name] = column if encode is None else [encode(v) for v in column]
        return out
