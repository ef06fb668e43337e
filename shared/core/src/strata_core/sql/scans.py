"""Each reference to the index in a query is a scan; what may prune a scan is what the query requires of the rows
that scan reads.

A scan's predicate is the AND of the conjuncts of the WHERE of the SELECT that reads the index directly, when they
name only that scan's columns: they filter its rows before any join, aggregate, window or LIMIT of that SELECT, so
a row they reject contributes nothing. A SELECT that only passes the index's rows through (no aggregate, window,
DISTINCT, LIMIT, set operation or join) lets the conditions of the SELECT reading it apply too, mapped through its
column names, so `WITH t AS (SELECT * FROM idx) SELECT ... FROM t WHERE ts > ...` prunes as if inlined. Nothing else
moves: a condition on the nullable side of an outer join, or above a LIMIT, a window or an aggregate, stays where
it is and prunes nothing. All conditions stay in the executed SQL; pruning only leaves out files and row groups
whose rows no scan can need.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from strata_core.query.predicate import TRUE, Predicate, conjunction, disjunction

# How many pass-through SELECTs a scan's conditions are looked for through.
_MAX_LIFT = 8


@dataclass(frozen=True, slots=True)
class Scan:
    """One reference to the index: its position among the statement's references, the name its columns are
    qualified with, and the predicate its rows must satisfy (TRUE when nothing is known)."""

    position: int
    qualifier: str
    predicate: Predicate


def scan_predicates(tables: tuple[exp.Table, ...], translate, index_columns: set[str]) -> list[Scan]:
    """`translate(node, select)` turns a condition of `select` into IR."""
    scans = []
    for position, table in enumerate(tables):
        qualifier = table.alias or table.name
        parts = _conditions_for(table, qualifier, {c: c for c in index_columns}, translate, 0)
        scans.append(Scan(position, qualifier, parts))
    return scans


def _conditions_for(source: exp.Expression, qualifier: str, columns: dict[str, str], translate,
                    depth: int) -> Predicate:
    """What the SELECT reading `source` (a table or a derived table) requires of its rows, with `columns`
    mapping that SELECT's names of the source's columns to index columns."""
    select = _reading_select(source)
    if select is None:
        return TRUE
    sources = _sources(select)
    preserved = _preserved(select, source)
    conditions: list[Predicate] = []
    where = select.args.get("where")
    if where is not None and preserved:
        for conjunct in _conjuncts(where.this):
            mapped = _mapped(conjunct, qualifier, columns, single=len(sources) == 1)
            if mapped is not None:
                conditions.append(translate(mapped, select))
    if depth < _MAX_LIFT and len(sources) == 1 and _passes_rows_through(select):
        outputs = _output_columns(select, columns)
        if outputs:
            lifted = _lifted(select, outputs, translate, depth)
            if lifted is not None:
                conditions.append(lifted)
    return conjunction(conditions)


def _lifted(select: exp.Select, outputs: dict[str, str], translate, depth: int) -> Predicate | None:
    """The conditions of the queries reading `select` (as a derived table or a CTE), OR-ed over its readers."""
    parent = select.parent
    if isinstance(parent, exp.Subquery) and isinstance(parent.parent, exp.From | exp.Join):
        return _conditions_for(parent, parent.alias_or_name, outputs, translate, depth + 1)
    if isinstance(parent, exp.CTE):
        readers = [t for t in _cte_readers(parent)]
        if not readers:
            return None
        return disjunction(_conditions_for(t, t.alias or t.name, outputs, translate, depth + 1) for t in readers)
    return None


def _cte_readers(cte: exp.CTE) -> list[exp.Table]:
    name = cte.alias.lower()
    scope = cte.parent.parent if cte.parent is not None else None
    if scope is None:
        return []
    return [t for t in scope.find_all(exp.Table)
            if t.name.lower() == name and not t.args.get("db") and t.find_ancestor(exp.CTE) is not cte]


def _reading_select(source: exp.Expression) -> exp.Select | None:
    holder = source.parent
    if isinstance(holder, exp.From | exp.Join) and isinstance(holder.parent, exp.Select):
        return holder.parent
    return None


def _sources(select: exp.Select) -> list[exp.Expression]:
    found = []
    if select.args.get("from_") is not None:
        found.append(select.args["from_"].this)
    found.extend(join.this for join in select.args.get("joins") or [])
    return found


def _preserved(select: exp.Select, source: exp.Expression) -> bool:
    """Whether the source's rows are never null-extended by an outer join of the SELECT (a condition on a
    null-extended side would match rows the pruned scan no longer has)."""
    for join in select.args.get("joins") or []:
        side = (join.side or "").upper()
        if not side:
            continue
        if side == "FULL":
            return False
        if side == "LEFT" and join.this is source:
            return False
        if side == "RIGHT" and join.this is not source:
            return False
    return True


def _passes_rows_through(select: exp.Select) -> bool:
    if any(select.args.get(key) for key in ("group", "having", "qualify", "limit", "offset", "distinct", "order",
                                             "joins", "with_")):
        return False
    if isinstance(select.parent, exp.SetOperation):
        return False
    return not any(True for _ in select.find_all(exp.AggFunc, exp.Window))


def _output_columns(select: exp.Select, columns: dict[str, str]) -> dict[str, str]:
    """The SELECT's output names that are plain index columns, mapped to those columns."""
    outputs: dict[str, str] = {}
    for expression in select.expressions:
        if isinstance(expression, exp.Star) or (isinstance(expression, exp.Column)
                                                and isinstance(expression.this, exp.Star)):
            outputs.update(columns)
            continue
        target = expression.this if isinstance(expression, exp.Alias) else expression
        if isinstance(target, exp.Column) and target.name in columns:
            outputs[expression.alias_or_name] = columns[target.name]
    return outputs


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return [part for child in node.flatten() for part in _conjuncts(child)]
    return [node]


def _mapped(conjunct: exp.Expression, qualifier: str, columns: dict[str, str], single: bool) -> exp.Expression | None:
    """The conjunct over index columns, or None when it names anything else (another source's column, a
    subquery, a name the scan does not have)."""
    if conjunct.find(exp.Select, exp.Subquery, exp.Exists, exp.AggFunc, exp.Window) is not None:
        return None
    copy = conjunct.copy()
    for column in list(copy.find_all(exp.Column)):
        table = column.table
        if table and table.lower() != qualifier.lower():
            return None
        if not table and not single:
            return None
        if isinstance(column.this, exp.Star) or column.name not in columns:
            return None
        column.replace(exp.column(columns[column.name], quoted=True))
    return copy
