"""DISTINCT ON and QUALIFY for Spark, which has neither: each becomes a filter on a subquery.

`SELECT DISTINCT ON (k) a, b FROM t ORDER BY k, ts DESC LIMIT n` is
`SELECT a, b FROM (SELECT a, b, <order keys> AS __strata_o*, row_number() OVER (PARTITION BY k ORDER BY k, ts DESC)
AS __strata_keep FROM t) WHERE __strata_keep = 1 ORDER BY __strata_o* LIMIT n`: the outer query keeps the
columns, their names and order, and the ORDER BY and LIMIT of the original (sqlglot's generic rewrite drops the
order and leaks its helper column). QUALIFY c is the same with `c AS __strata_keep` and `WHERE __strata_keep`.
"""

from __future__ import annotations

from sqlglot import exp

from strata_core.sql.errors import QueryValidationError

KEEP = "__strata_keep"


def subquery_filters(statement: exp.Expression, view_columns: tuple[str, ...]) -> exp.Expression:
    """The statement with every SELECT that has DISTINCT ON or QUALIFY rewritten (innermost first)."""
    targets = [s for s in statement.find_all(exp.Select)
               if s.args.get("qualify") is not None or _distinct_on(s) is not None]
    for select in reversed(targets):
        rewritten = _rewrite(select, view_columns)
        if select is statement:
            statement = rewritten
        else:
            select.replace(rewritten)
    return statement


def _distinct_on(select: exp.Select) -> exp.Tuple | None:
    distinct = select.args.get("distinct")
    return None if distinct is None else distinct.args.get("on")


def _rewrite(select: exp.Select, view_columns: tuple[str, ...]) -> exp.Select:
    inner = select.copy()
    aliases = {e.alias: e.this for e in inner.expressions if isinstance(e, exp.Alias)}
    outputs: list[str] = []
    expressions: list[exp.Expression] = []
    for index, expression in enumerate(inner.expressions):
        if isinstance(expression, exp.Star) or (isinstance(expression, exp.Column)
                                                and isinstance(expression.this, exp.Star)):
            if not view_columns:
                raise QueryValidationError("DISTINCT ON or QUALIFY with * needs the index as its only source on "
                                           "Spark: list the columns", "select")
            outputs.extend(view_columns)
            expressions.append(expression)
            continue
        name = expression.alias_or_name or f"_col{index}"
        outputs.append(name)
        expressions.append(expression if isinstance(expression, exp.Alias | exp.Column)
                           else exp.alias_(expression, name, quoted=True))
    order = inner.args.get("order")
    ordered = list(order.expressions) if order is not None else []
    order_keys = [_resolved(_by_position(o.this, inner.expressions), aliases) for o in ordered]
    for index, key in enumerate(order_keys):
        expressions.append(exp.alias_(key.copy(), f"__strata_o{index}", quoted=True))
    on = _distinct_on(inner)
    if on is not None:
        keys = [_resolved(k, aliases) for k in on.expressions]
        window_order = exp.Order(expressions=[o.copy() for o in ordered]) if ordered else None
        if window_order is not None:
            for item, key in zip(window_order.expressions, order_keys, strict=True):
                item.set("this", key.copy())
        keep = exp.EQ(this=exp.Window(this=exp.RowNumber(), partition_by=[k.copy() for k in keys],
                                      order=window_order), expression=exp.Literal.number(1))
        inner.set("distinct", None)
    else:
        keep = _resolved(inner.args["qualify"].this, aliases)
        inner.set("qualify", None)
    expressions.append(exp.alias_(keep, KEEP, quoted=True))
    limit, offset = inner.args.get("limit"), inner.args.get("offset")
    for key in ("order", "limit", "offset"):
        inner.set(key, None)
    inner.set("expressions", expressions)
    outer = exp.select(*[exp.column(name, quoted=True) for name in outputs]).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("__strata_q", quoted=True))))
    outer = outer.where(exp.column(KEEP, quoted=True))
    if ordered:
        outer.set("order", exp.Order(expressions=[
            exp.Ordered(this=exp.column(f"__strata_o{i}", quoted=True), desc=o.args.get("desc"),
                        nulls_first=o.args.get("nulls_first")) for i, o in enumerate(ordered)]))
    outer.set("limit", limit)
    outer.set("offset", offset)
    return outer


def _by_position(node: exp.Expression, expressions: list[exp.Expression]) -> exp.Expression:
    """`ORDER BY 2` as the select list's second expression."""
    if isinstance(node, exp.Literal) and node.is_int and 1 <= int(node.this) <= len(expressions):
        chosen = expressions[int(node.this) - 1]
        return chosen.this if isinstance(chosen, exp.Alias) else chosen
    return node


def _resolved(node: exp.Expression, aliases: dict[str, exp.Expression]) -> exp.Expression:
    """The node with references to the select list's aliases replaced by what they name (Spark does not see an
    alias from the same select list)."""
    if isinstance(node, exp.Column) and not node.table and node.name in aliases:
        return aliases[node.name].copy()
    copy = node.copy()
    for column in list(copy.find_all(exp.Column)):
        if not column.table and column.name in aliases and column.find_ancestor(exp.Select) is None:
            column.replace(aliases[column.name].copy())
    return copy
