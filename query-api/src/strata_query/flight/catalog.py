"""The catalog listings (GetCatalogs, GetDbSchemas, GetTables, GetTableTypes) in FlightSql.proto's shapes, from
the indexes a caller can query: one catalog, `strata`, with one schema, `indexes`, whose tables are the indexes.
A query names an index alone (`SELECT ... FROM "<index>"`) or as listed (`strata.indexes."<index>"`, what a
workbench writes), both accepted by the SQL validation (`sql/validation.py`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa

from strata_core.sql.validation import INDEX_CATALOG as CATALOG
from strata_core.sql.validation import INDEX_SCHEMA as DB_SCHEMA

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
    return pa.Table.from_pylist([{"catalog_name": CATALOG}], schema=CATALOGS_SCHEMA)


def db_schemas_table(catalog: str | None, schema_pattern: str | None) -> pa.Table:
    rows = [{"catalog_name": CATALOG, "db_schema_name": DB_SCHEMA}]
    if catalog not in (None, CATALOG) or not like_matches(schema_pattern, DB_SCHEMA):
        rows = []
    return pa.Table.from_pylist(rows, schema=DB_SCHEMAS_SCHEMA)


def tables_table(tables: Sequence[tuple[str, pa.Schema]], *, catalog: str | None, schema_pattern: str | None,
                 table_pattern: str | None, table_types: Sequence[str], include_schema: bool) -> pa.Table:
    """`tables`: (name, columns) of each index the caller can query."""
    selected = (catalog in (None, CATALOG) and like_matches(schema_pattern, DB_SCHEMA)
                and (not table_types or TABLE_TYPE in table_types))
    rows = []
    for name, columns in tables if selected else ():
        if not like_matches(table_pattern, name):
            continue
        row = {"catalog_name": CATALOG, "db_schema_name": DB_SCHEMA, "table_name": name, "table_type": TABLE_TYPE}
        if include_schema:
            row["table_schema"] = columns.serialize().to_pybytes()
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=TABLES_WITH_SCHEMA_SCHEMA if include_schema else TABLES_SCHEMA)


def table_types_table() -> pa.Table:
    return pa.Table.from_pylist([{"table_type": TABLE_TYPE}], schema=TABLE_TYPES_SCHEMA)
