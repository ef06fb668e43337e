"""GetSqlInfo's answer: what the server is and which SQL it speaks, in the shape FlightSql.proto gives it (one row
per info id, the value in a dense union). Drivers read it on connect: JDBC's DatabaseMetaData, ADBC's get_info."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from strata_core.sql.catalog import function_names
from strata_query.flight.proto import FlightSql_pb2 as sql

# The union's members, in FlightSql.proto's order: a member's type code is its position.
VALUE_TYPE = pa.dense_union([
    pa.field("string_value", pa.string()),
    pa.field("bool_value", pa.bool_()),
    pa.field("bigint_value", pa.int64()),
    pa.field("int32_bitmask", pa.int32()),
    pa.field("string_list", pa.list_(pa.string())),
    pa.field("int32_to_int32_list_map", pa.map_(pa.int32(), pa.list_(pa.int32()))),
])
SCHEMA = pa.schema([pa.field("info_name", pa.uint32(), nullable=False),
                    pa.field("value", VALUE_TYPE, nullable=False)])
_STRING, _BOOL, _BIGINT, _BITMASK, _STRING_LIST = range(5)

# Strata's SQL reads one index as its table (DuckDB's dialect on top, the same on Spark), never writes. Its function
# lists come from the SQL catalog (strata_core.sql.catalog, docs/sql.md), as the validator's allowlist does.
_SUBQUERIES = (1 << sql.SQL_SUBQUERIES_IN_COMPARISONS) | (1 << sql.SQL_SUBQUERIES_IN_EXISTS) | (
    1 << sql.SQL_SUBQUERIES_IN_INS)
_INFO: dict[int, tuple[int, object]] = {
    sql.FLIGHT_SQL_SERVER_NAME: (_STRING, "Strata query-api"),
    sql.FLIGHT_SQL_SERVER_VERSION: (_STRING, "0.1.0"),
    sql.FLIGHT_SQL_SERVER_ARROW_VERSION: (_STRING, pa.__version__),
    sql.FLIGHT_SQL_SERVER_READ_ONLY: (_BOOL, True),
    sql.FLIGHT_SQL_SERVER_SQL: (_BOOL, True),
    sql.FLIGHT_SQL_SERVER_SUBSTRAIT: (_BOOL, False),
    sql.FLIGHT_SQL_SERVER_TRANSACTION: (_BITMASK, sql.SQL_SUPPORTED_TRANSACTION_NONE),
    sql.FLIGHT_SQL_SERVER_CANCEL: (_BOOL, True),
    sql.FLIGHT_SQL_SERVER_BULK_INGESTION: (_BOOL, False),
    sql.SQL_DDL_CATALOG: (_BOOL, False),
    sql.SQL_DDL_SCHEMA: (_BOOL, False),
    sql.SQL_DDL_TABLE: (_BOOL, False),
    sql.SQL_IDENTIFIER_CASE: (_BITMASK, sql.SQL_CASE_SENSITIVITY_CASE_INSENSITIVE),
    sql.SQL_IDENTIFIER_QUOTE_CHAR: (_STRING, '"'),
    sql.SQL_QUOTED_IDENTIFIER_CASE: (_BITMASK, sql.SQL_CASE_SENSITIVITY_CASE_INSENSITIVE),
    sql.SQL_ALL_TABLES_ARE_SELECTABLE: (_BOOL, True),
    sql.SQL_NULL_ORDERING: (_BITMASK, sql.SQL_NULLS_SORTED_AT_END),
    sql.SQL_SEARCH_STRING_ESCAPE: (_STRING, "\\"),
    sql.SQL_SUPPORTS_COLUMN_ALIASING: (_BOOL, True),
    sql.SQL_NULL_PLUS_NULL_IS_NULL: (_BOOL, True),
    sql.SQL_SCHEMA_TERM: (_STRING, "schema"),
    sql.SQL_CATALOG_TERM: (_STRING, "catalog"),
    sql.SQL_PROCEDURE_TERM: (_STRING, ""),
    sql.SQL_TRANSACTIONS_SUPPORTED: (_BOOL, False),
    sql.SQL_SELECT_FOR_UPDATE_SUPPORTED: (_BOOL, False),
    sql.SQL_STORED_PROCEDURES_SUPPORTED: (_BOOL, False),
    sql.SQL_KEYWORDS: (_STRING_LIST, ["DISTINCT ON", "QUALIFY", "TEXT_MATCH"]),
    sql.SQL_NUMERIC_FUNCTIONS: (_STRING_LIST, function_names("numeric")),
    sql.SQL_STRING_FUNCTIONS: (_STRING_LIST, function_names("string")),
    sql.SQL_DATETIME_FUNCTIONS: (_STRING_LIST, function_names("datetime")),
    sql.SQL_SUPPORTED_SUBQUERIES: (_BITMASK, _SUBQUERIES),
    sql.SQL_CORRELATED_SUBQUERIES_SUPPORTED: (_BOOL, True),
    sql.SQL_SUPPORTED_UNIONS: (_BITMASK, (1 << sql.SQL_UNION) | (1 << sql.SQL_UNION_ALL)),
    sql.SQL_SUPPORTS_TABLE_CORRELATION_NAMES: (_BOOL, True),
}


def sql_info_table(requested: Iterable[int]) -> pa.Table:
    """The rows of the requested info ids that the server knows (all of them when none is requested)."""
    ids = [info for info in (list(requested) or sorted(_INFO)) if info in _INFO]
    children: list[list[object]] = [[] for _ in VALUE_TYPE]
    type_codes, offsets = [], []
    for info in ids:
        member, value = _INFO[info]
        type_codes.append(member)
        offsets.append(len(children[member]))
        children[member].append(value)
    value = pa.UnionArray.from_dense(
        pa.array(type_codes, pa.int8()), pa.array(offsets, pa.int32()),
        [pa.array(values, field.type) for values, field in zip(children, VALUE_TYPE, strict=True)],
        [field.name for field in VALUE_TYPE])
    return pa.Table.from_arrays([pa.array(ids, pa.uint32()), value], schema=SCHEMA)
