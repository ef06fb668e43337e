"""What Strata runs: one query (a SELECT, or SELECTs combined by UNION/INTERSECT/EXCEPT, with CTEs and subqueries)
whose every table is the one index (or a CTE over it), built only from the constructs of the catalog (catalog.py),
naming declared columns.

Anything outside the catalog is refused with the clause it appears in, rather than passed to an engine: the SQL is
user input, and both engines have functions (DuckDB's read_parquet and COPY, Spark's reflect and java_method) and
table references (file paths) that must never be reachable from a query.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from strata_core.domain.fields import FieldType
from strata_core.sql.catalog import allowed_names, allowed_nodes
from strata_core.sql.errors import QueryValidationError
from strata_core.sql.index_columns import PARTITION_COLUMN
from strata_core.sql.text_match import is_text_match

AGGREGATES: tuple[type[exp.Expression], ...] = (exp.AggFunc,)
_ALLOWED = allowed_nodes()
_NAMES = allowed_names()
_CLAUSES = {"expressions": "select", "distinct": "select", "from_": "from", "joins": "from", "where": "where",
            "group": "group by", "having": "having", "order": "order by", "limit": "limit", "offset": "limit",
            "qualify": "qualify", "with_": "with"}

# Clauses where a name may be an alias of the same SELECT's select list rather than a column.
_ALIAS_CLAUSES = {"group by", "having", "order by", "qualify"}

# Where the indexes are listed (Flight SQL's GetCatalogs and GetDbSchemas): a query may name an index qualified so.
INDEX_CATALOG = "strata"
INDEX_SCHEMA = "indexes"


@dataclass(frozen=True, slots=True)
class Resolution:
    """What validation learned: the index's references in the statement (each a scan of it), and the schema
    columns the query reads."""

    tables: tuple[exp.Table, ...]
    columns: frozenset[str]
    star: bool


def query_statement(statements: list[exp.Expression | None]) -> exp.Query:
    """The one query of the text: a SELECT or a set operation of SELECTs."""
    present = [s for s in statements if s is not None]
    if len(present) != 1:
        raise QueryValidationError("send exactly one SELECT statement", "sql")
    statement = present[0]
    if not isinstance(statement, exp.Select | exp.SetOperation):
        raise QueryValidationError(f"only SELECT queries are supported, not {statement.key.upper()}", "sql")
    return statement


def statement_of(statements: list[exp.Expression | None]) -> exp.Select:
    """The one plain SELECT of the text (a delete condition is parsed as one)."""
    statement = query_statement(statements)
    if not isinstance(statement, exp.Select):
        raise QueryValidationError("send one SELECT, without UNION, INTERSECT or EXCEPT", "sql")
    return statement


def validate(statement: exp.Query, *, index_id: str, types: dict[str, FieldType]) -> Resolution:
    """Checks the statement and rewrites every column reference to its declared name (Spark resolves names
    case-insensitively, and so does Strata)."""
    ctes = _cte_names(statement, index_id)
    tables = []
    for node in statement.walk():
        if isinstance(node, exp.Table):
            if _check_table(node, index_id, ctes):
                tables.append(node)
            continue
        _check_node(node)
    if not tables:
        raise QueryValidationError(f"the query needs FROM {index_id}", "from")
    return _resolve_columns(statement, tables, ctes, types)


def refuse_recursive(statement: exp.Query) -> None:
    for with_ in statement.find_all(exp.With):
        if with_.args.get("recursive"):
            raise QueryValidationError("recursive CTEs (WITH RECURSIVE) are not supported", "with")


def _cte_names(statement: exp.Query, index_id: str) -> set[str]:
    names = set()
    refuse_recursive(statement)
    for with_ in statement.find_all(exp.With):
        for cte in with_.expressions:
            name = cte.alias.lower()
            if name == index_id.lower():
                raise QueryValidationError(f"a CTE may not be named like the index {index_id!r}", "with")
            if not isinstance(cte.this, exp.Query):
                raise QueryValidationError(f"CTE {cte.alias!r} must be a SELECT", "with")
            names.add(name)
    return names


def _check_table(table: exp.Table, index_id: str, ctes: set[str]) -> bool:
    """True when the table is the index; a CTE's name is fine too; anything else is refused."""
    clause = clause_of(table)
    refuse_source(table, f"FROM names the index {index_id!r}", clause)
    for key, value in table.args.items():
        if value and key not in ("this", "alias", "db", "catalog"):
            raise QueryValidationError(f"{key.upper()} on the table is not supported", clause)
    name = table.name
    if table.args.get("db") is None and name.lower() in ctes:
        return False
    refuse_unlisted(table, clause)
    if name.lower() != index_id.lower():
        raise QueryValidationError(f"unknown table {name!r}: this query can only read index {index_id!r}", clause)
    return True


def refuse_source(table: exp.Table, hint: str, clause: str = "from") -> None:
    """Refuses a table that is not a name (a table function, a file read), naming it as written."""
    if isinstance(table.this, exp.Identifier):
        return
    source = table.this
    if isinstance(source, exp.Anonymous):
        what = f"table function {source.name.lower()}()"
    else:
        what = f"table function {written(source)}" if isinstance(source, exp.Func) else written(source)
    raise QueryValidationError(f"{what} is not supported: {hint}", clause)


def refuse_unlisted(table: exp.Table, clause: str = "from") -> None:
    """Refuses a qualified name that is not how the catalog lists an index."""
    if not _qualified_as_listed(table):
        raise QueryValidationError(f"unknown table {table.sql(dialect='duckdb')}: qualified table names are "
                                   f"{INDEX_CATALOG}.{INDEX_SCHEMA}.<index> or {INDEX_SCHEMA}.<index>", clause)


def _qualified_as_listed(table: exp.Table) -> bool:
    """An index named alone, or qualified as the Flight SQL catalog lists it (workbenches write the names they
    list): `indexes.<index>`, `strata.indexes.<index>`."""
    db, catalog = table.args.get("db"), table.args.get("catalog")
    if db is None:
        return catalog is None
    return db.name.lower() == INDEX_SCHEMA and (catalog is None or catalog.name.lower() == INDEX_CATALOG)


def clause_of(node: exp.Expression, select: exp.Expression | None = None) -> str:
    """The clause of the innermost SELECT (or `select`) a node sits in, to name in errors."""
    while node.parent is not None and node.parent is not select and not (
            select is None and isinstance(node.parent, exp.Select)):
        node = node.parent
    if node.parent is None:
        return "sql"
    return _CLAUSES.get(node.arg_key, "sql")


def written(node: exp.Expression, limit: int = 60) -> str:
    """The node as SQL, shortened, to quote in errors (never an internal class name)."""
    text = node.sql(dialect="duckdb", normalize_functions="lower")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_node(node: exp.Expression) -> None:
    if isinstance(node, exp.Placeholder | exp.Parameter):
        raise QueryValidationError("query parameters are not supported: inline the values", clause_of(node))
    if isinstance(node, exp.Escape):
        raise QueryValidationError("LIKE ... ESCAPE is not supported: escape % and _ with a backslash",
                                   clause_of(node))
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name not in _NAMES or (name == "text_match" and not is_text_match(node)):
            raise QueryValidationError(f"function {node.name}() is not supported", clause_of(node))
        return
    if isinstance(node, exp.AggFunc) and not node.find_ancestor(exp.Window) and clause_of(node) == "where":
        raise QueryValidationError(f"aggregate {written(node)} in WHERE: filter on aggregates with HAVING",
                                   "where")
    if isinstance(node, exp.Between) and node.args.get("symmetric"):
        raise QueryValidationError("BETWEEN SYMMETRIC is not supported", clause_of(node))
    if isinstance(node, exp.In) and (node.args.get("unnest") or node.args.get("field")):
        raise QueryValidationError("IN takes a list of values or a subquery", clause_of(node))
    if isinstance(node, exp.Join) and not isinstance(node.this, exp.Table | exp.Subquery):
        raise QueryValidationError(f"join of {written(node.this)} is not supported: join the index or a CTE",
                                   "from")
    if isinstance(node, exp.Subquery) and node.args.get("pivots"):
        raise QueryValidationError("PIVOT is not supported", clause_of(node))
    if isinstance(node, exp.Select) and node.args.get("kind"):
        raise QueryValidationError("SELECT INTO is not supported", "select")
    if isinstance(node, exp.Window) and isinstance(node.this, exp.Anonymous):
        return
    if not isinstance(node, _ALLOWED):
        what = f"function {node.sql_name().lower()}()" if isinstance(node, exp.Func) else written(node)
        raise QueryValidationError(f"{what} is not supported (see docs/sql.md for the SQL Strata runs)",
                                   clause_of(node))


def _resolve_columns(statement: exp.Query, tables: list[exp.Table], ctes: set[str],
                     types: dict[str, FieldType]) -> Resolution:
    by_lower: dict[str, list[str]] = {}
    for name in types:
        by_lower.setdefault(name.lower(), []).append(name)
    # Names a column may take besides the index's: select-list aliases (of another SELECT, a CTE or derived
    # table read by this one; its own in GROUP BY, HAVING, ORDER BY and QUALIFY), CTE and derived-table column
    # lists.
    alias_owners: dict[str, set[int]] = {}
    for node in statement.find_all(exp.Alias):
        owner = node.parent if isinstance(node.parent, exp.Select) else None
        alias_owners.setdefault(node.alias.lower(), set()).add(id(owner))
    for table_alias in statement.find_all(exp.TableAlias):
        for c in table_alias.columns:
            alias_owners.setdefault(c.name.lower(), set()).add(id(None))
    # What a column may be qualified with: a scan of the index, a CTE, a derived table.
    index_names = {(t.alias or t.name).lower() for t in tables}
    sources = index_names | ctes | {s.alias.lower() for s in statement.find_all(exp.Subquery) if s.alias}
    sources |= {t.alias.lower() for t in statement.find_all(exp.Table) if t.alias}
    # `*` or `t.*` in a select list (not count(*)) reads every column.
    star = any(isinstance(s.parent, exp.Select | exp.Column) for s in statement.find_all(exp.Star))
    needed: set[str] = set()
    for column in list(statement.find_all(exp.Column)):
        if column.args.get("db") or column.args.get("catalog"):
            raise QueryValidationError(f"column {column.sql()} has too many qualifiers", clause_of(column))
        table = column.table
        if table and table.lower() not in sources:
            raise QueryValidationError(f"unknown table {table!r} in {column.sql()}", clause_of(column))
        if isinstance(column.this, exp.Star):
            continue
        name = column.name
        candidates = [name] if name in types else by_lower.get(name.lower(), [])
        if len(candidates) > 1:
            raise QueryValidationError(f"column {name!r} is ambiguous: {', '.join(candidates)}", name)
        # A column of the index, or of a CTE or derived table passing it on under its own name.
        if candidates and (not table or table.lower() in sources):
            column.this.set("this", candidates[0])
            needed.add(candidates[0])
            continue
        owners = alias_owners.get(name.lower())
        if owners and (owners - {id(column.find_ancestor(exp.Select))}
                       or clause_of(column) in _ALIAS_CLAUSES):
            continue
        raise QueryValidationError(f"unknown column {name!r}", name)
    if star:
        # `*` is the index's declared columns, as its files hold them; partition_id is read when named.
        needed.update(name for name in types if name != PARTITION_COLUMN)
    return Resolution(tuple(tables), frozenset(needed), star)
