"""The catalog listings (GetCatalogs, GetDbSchemas, GetTables, GetTableTypes) in FlightSql.proto's shapes, from
the indexes a caller can query. Strata's SQL names an index alone (`SELECT ... FROM "<index>"`; a qualified name
is refused), so the indexes are listed as tables outside any catalog or schema (both null): a workbench then
writes the names a query accepts. GetCatalogs and GetDbSchemas answer no rows."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa

TABLE_TYPE = "TABLE"

CATALOGS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string(), nullable=False)])
DB_SCHEMAS_SCHEMA = pa.schema([pa.field("catalog_name", pa.string()),
                               pa.field("db_schema_name", pa.string(), nullable=False)])
TABLES_SCHEMA = pa.schema([pa.field("catalog_name", pa.string()), pa.field("db_schema_name", pa.string()),
                           pa.field("table_name", pa.string(), nullable=False),
                           pa.field("table_type", pa.string(), nullable=False)])
TABLES_WITH_SCHEMA_SCHEMA = TABLES_SCHEMA.append(pa.field("table_schema", pa.binary(), nullable=False))
TABLE_TYPES_SCHEMA = pa.schema([pa.field("table_type", pa.string(), nullable=False)])


def like_matches(pattern: str | None, value: str) -> bool:
    """Whether `value` matches a Flight SQL filter pattern: SQL LIKE, `%` any run of characters, `_` one, a
    backslash escaping the next character (GetSqlInfo's SQL_SEARCH_STRING_ESCAPE). No pattern matches all."""
    if pattern is None:
        return True
    parts, escaped = [], False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    if escaped:
        parts.append(re.escape("\\"))
    return re.fullmatch("".join(parts), value, re.DOTALL) is not None


def catalogs_table() -> pa.Table:
    return CATALOGS_SCHEMA.empty_table()


def db_schemas_table() -> pa.Table:
    return DB_SCHEMAS_SCHEMA.empty_table()


def tables_table(tables: Sequence[tuple[str, pa.Schema]], *, catalog: str | None, schema_pattern: str | None,
                 table_pattern: str | None, table_types: Sequence[str], include_schema: bool) -> pa.Table:
    """`tables`: (name, columns) of each index the caller can query. A filter naming a catalog, or a schema
    pattern that the empty name does not match, selects none (the tables are in neither)."""
    selected = (not catalog and like_matches(schema_pattern, "")
                and (not table_types or TABLE_TYPE in table_types))
    rows = []
    for name, columns in tables if selected else ():
        if not like_matches(table_pattern, name):
            continue
        row = {"catalog_name": None, "db_schema_name": None, "table_name": name, "table_type": TABLE_TYPE}
        if include_schema:
            row["table_schema"] = columns.serialize().to_pybytes()
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=TABLES_WITH_SCHEMA_SCHEMA if include_schema else TABLES_SCHEMA)


def table_types_table() -> pa.Table:
    return pa.Table.from_pylist([{"table_type": TABLE_TYPE}], schema=TABLE_TYPES_SCHEMA)
