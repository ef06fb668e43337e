"""What Strata runs: one SELECT over one index, built from an allowlist of constructs, naming declared columns.

Anything outside the allowlist is refused with the clause it appears in, rather than passed to Spark: the SQL is
user input and Spark has functions (reflect, java_method) that must never be reachable from a query.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from strata_shared.domain.fields import FieldType
from strata_shared.sql.errors import QueryValidationError
from strata_shared.sql.text_match import is_text_match

AGGREGATES: tuple[type[exp.Expression], ...] = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)
_SCALAR_FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Lower, exp.Upper, exp.Length, exp.Abs, exp.Coalesce, exp.Round, exp.Floor, exp.Ceil, exp.Case, exp.If,
    exp.Concat, exp.DPipe, exp.Substring, exp.Cast,
)
_ALLOWED: tuple[type[exp.Expression], ...] = (
    exp.Select, exp.From, exp.Table, exp.TableAlias, exp.Identifier, exp.Column, exp.Star, exp.Alias, exp.Where,
    exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit, exp.Distinct, exp.Paren,
    exp.Literal, exp.Boolean, exp.Null, exp.Neg, exp.DataType, exp.DataTypeParam,
    exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Between, exp.In, exp.Is,
    exp.Like, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv,
) + AGGREGATES + _SCALAR_FUNCTIONS
_SELECT_ARGS = {"expressions", "from_", "where", "group", "having", "order", "limit", "distinct"}
_CLAUSES = {"expressions": "select", "distinct": "select", "from_": "from", "where": "where", "group": "group by",
            "having": "having", "order": "order by", "limit": "limit"}
# Clauses where a name may be an alias of the select list rather than a column.
_ALIAS_CLAUSES = {"group by", "having", "order by"}

# Where the indexes are listed (Flight SQL's GetCatalogs and GetDbSchemas): a query may name an index qualified so.
INDEX_CATALOG = "strata"
INDEX_SCHEMA = "indexes"


@dataclass(frozen=True, slots=True)
class Resolution:
    """What validation learned: the name columns are qualified with, and the schema columns the query reads."""

    qualifier: str
    columns: frozenset[str]
    star: bool


def statement_of(statements: list[exp.Expression | None]) -> exp.Select:
    present = [s for s in statements if s is not None]
    if len(present) != 1:
        raise QueryValidationError("send exactly one SELECT statement", "sql")
    statement = present[0]
    if isinstance(statement, exp.SetOperation):
        raise QueryValidationError("UNION, INTERSECT and EXCEPT are not supported: use one SELECT", "sql")
    if not isinstance(statement, exp.Select):
        raise QueryValidationError(f"only SELECT queries are supported, not {statement.key.upper()}", "sql")
    return statement


def validate(select: exp.Select, *, index_id: str, types: dict[str, FieldType]) -> Resolution:
    """Checks the statement and rewrites every column reference to its declared name (Spark resolves names
    case-insensitively, and so does Strata)."""
    qualifier = _check_shape(select, index_id)
    for node in select.walk():
        _check_node(node, select)
    return _resolve_columns(select, qualifier, types)


def _check_shape(select: exp.Select, index_id: str) -> str:
    if select.args.get("with_"):
        raise QueryValidationError("WITH (common table expressions) is not supported: query the index directly",
                                   "sql")
    if select.args.get("joins"):
        raise QueryValidationError("joins and several tables are not supported: a query reads one index", "from")
    source = select.args.get("from_")
    if source is None:
        raise QueryValidationError(f"the query needs FROM {index_id}", "from")
    for key, value in select.args.items():
        if value and key not in _SELECT_ARGS:
            clause = "limit" if key == "offset" else "sql"
            raise QueryValidationError(f"{key.rstrip('_').upper()} is not supported", clause)
    table = source.this
    if isinstance(table, exp.Subquery):
        raise QueryValidationError("subqueries are not supported: query the index directly", "from")
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise QueryValidationError(f"FROM must name the index {index_id!r}", "from")
    if not _qualified_as_listed(table):
        raise QueryValidationError(f"qualified table names are {INDEX_CATALOG}.{INDEX_SCHEMA}.<index> or "
                                   f"{INDEX_SCHEMA}.<index>: use FROM {index_id}", "from")
    for key, value in table.args.items():
        if value and key not in ("this", "alias", "db", "catalog"):
            raise QueryValidationError(f"{key.upper()} on the table is not supported", "from")
    if table.name.lower() != index_id.lower():
        raise QueryValidationError(f"unknown table {table.name!r}: this query can only read index {index_id!r}",
                                   "from")
    return table.alias or table.name


def _qualified_as_listed(table: exp.Table) -> bool:
    """An index named alone, or qualified as the Flight SQL catalog lists it (workbenches write the names they
    list): `indexes.<index>`, `strata.indexes.<index>`."""
    db, catalog = table.args.get("db"), table.args.get("catalog")
    if db is None:
        return catalog is None
    return db.name.lower() == INDEX_SCHEMA and (catalog is None or catalog.name.lower() == INDEX_CATALOG)


def clause_of(node: exp.Expression, select: exp.Select) -> str:
    """The clause of the statement a node sits in, to name in errors."""
    while node.parent is not None and node.parent is not select:
        node = node.parent
    return _CLAUSES.get(node.arg_key, "sql")


def _check_node(node: exp.Expression, select: exp.Select) -> None:
    if node is select:
        return
    if isinstance(node, exp.Select | exp.Subquery | exp.Exists | exp.SetOperation):
        raise QueryValidationError("subqueries are not supported", clause_of(node, select))
    if isinstance(node, exp.Window):
        raise QueryValidationError("window functions (OVER) are not supported", clause_of(node, select))
    if isinstance(node, exp.Placeholder | exp.Parameter):
        raise QueryValidationError("query parameters are not supported: inline the values", clause_of(node, select))
    if isinstance(node, exp.Escape):
        raise QueryValidationError("LIKE ... ESCAPE is not supported: escape % and _ with a backslash",
                                   clause_of(node, select))
    if isinstance(node, exp.Anonymous):
        if not is_text_match(node):
            raise QueryValidationError(f"function {node.name}() is not supported", clause_of(node, select))
        return
    if isinstance(node, exp.AggFunc) and not isinstance(node, AGGREGATES):
        raise QueryValidationError(f"aggregate {node.sql_name()} is not supported: use count, sum, min, max or avg",
                                   clause_of(node, select))
    if isinstance(node, exp.Between) and node.args.get("symmetric"):
        raise QueryValidationError("BETWEEN SYMMETRIC is not supported", clause_of(node, select))
    if isinstance(node, exp.In) and (node.args.get("query") or node.args.get("unnest") or node.args.get("field")):
        raise QueryValidationError("IN takes a list of values", clause_of(node, select))
    if not isinstance(node, _ALLOWED):
        what = f"function {node.sql_name()}" if isinstance(node, exp.Func) else type(node).__name__
        raise QueryValidationError(f"{what} is not supported", clause_of(node, select))


def _resolve_columns(select: exp.Select, qualifier: str, types: dict[str, FieldType]) -> Resolution:
    by_lower: dict[str, list[str]] = {}
    for name in types:
        by_lower.setdefault(name.lower(), []).append(name)
    aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
    star = any(isinstance(e, exp.Star) for e in select.expressions)
    needed: set[str] = set()
    for column in list(select.find_all(exp.Column)):
        clause = clause_of(column, select)
        if column.args.get("db") or column.args.get("catalog"):
            raise QueryValidationError(f"column {column.sql()} has too many qualifiers", clause)
        table = column.table
        if table and table.lower() != qualifier.lower():
            raise QueryValidationError(f"unknown table {table!r} in {column.sql()}: use {qualifier!r}", clause)
        if isinstance(column.this, exp.Star):
            star = True
            continue
        name = column.name
        candidates = [name] if name in types else by_lower.get(name.lower(), [])
        if len(candidates) == 1:
            column.this.set("this", candidates[0])
            needed.add(candidates[0])
            continue
        if len(candidates) > 1:
            raise QueryValidationError(f"column {name!r} is ambiguous: {', '.join(candidates)}", name)
        if not table and clause in _ALIAS_CLAUSES and name.lower() in aliases:
            continue
        raise QueryValidationError(f"unknown column {name!r}", name)
    if star:
        needed.update(types)
    return Resolution(qualifier, frozenset(needed), star)
