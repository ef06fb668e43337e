"""A delete's condition: a SQL boolean expression over an index's columns, parsed and validated by the very front
queries go through (it is parsed as the WHERE clause of `SELECT * FROM <index>`), so a name, a literal or a LIKE
pattern means in a delete exactly what it means in a query.

A delete must be applied exactly, row by row, by the rewrite kernel and the query scan alike: every part of the
condition must be expressible in the predicate IR (comparisons, BETWEEN, IN, IS [NOT] NULL, LIKE, text_match,
combined with AND, OR and NOT). Anything else (`a + b > 3`, a function) is refused rather than approximated.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from strata_core.domain.index_config import IndexSettings
from strata_core.query.predicate import Atom, Predicate, PredicateVisitor, Unknown, to_nnf, visit
from strata_core.sql.errors import QuerySyntaxError, QueryValidationError
from strata_core.sql.index_columns import with_partition_column
from strata_core.sql.query import parse_query, parse_sql
from strata_core.sql.validation import statement_of
from strata_core.sql.where import ConditionTranslator


class DeleteConditionError(QueryValidationError):
    slug, title = "delete-where-invalid", "The delete condition cannot be applied"


def parse_delete_where(where_sql: str, *, index_id: str, settings: IndexSettings) -> Predicate:
    """The condition as a predicate in negation normal form. Raises QuerySyntaxError (with the line and column
    in `where_sql`) or QueryValidationError / DeleteConditionError (naming the column or `where`)."""
    if not where_sql.strip():
        raise DeleteConditionError("the condition is empty: say which rows to delete", "where")
    prefix = f'SELECT * FROM "{index_id}" WHERE '
    try:
        statements = parse_sql(prefix + where_sql)
    except QuerySyntaxError as error:
        column = error.column - len(prefix) if error.line == 1 else error.column
        refused = QuerySyntaxError(error.message, error.line, max(1, column))
        refused.errors[0]["field"] = "where"
        raise refused from error
    select = statement_of(statements) if len([s for s in statements if s is not None]) == 1 else None
    if select is None or any(value for key, value in select.args.items()
                             if key not in ("expressions", "from_", "where")) or len(select.expressions) != 1 \
            or not isinstance(select.expressions[0], exp.Star):
        raise DeleteConditionError("the condition must be one boolean expression, with no other clause or "
                                   "statement after it", "where")
    if select.args["where"].find(exp.Select, exp.Subquery, exp.Exists, exp.Window) is not None:
        raise DeleteConditionError("a delete condition cannot hold a subquery or a window function", "where")
    schema = with_partition_column(settings)
    parse_query(prefix + where_sql, index_id=index_id, settings=schema, statements=statements)
    # The whole condition, as rewritten by the parse (its literals coerced): a delete applies all of it.
    translator = ConditionTranslator(schema.field_types(), schema.timestamp_field)
    predicate = to_nnf(translator.translate(select.args["where"].this))
    opaque = _opaque_part(predicate)
    if opaque is not None:
        raise DeleteConditionError(
            f"{opaque} cannot be applied row by row by a delete: use comparisons of a column with a literal, "
            "BETWEEN, IN, IS [NOT] NULL, LIKE or text_match, combined with AND, OR and NOT", "where")
    return predicate


def _opaque_part(predicate: Predicate) -> str | None:
    return visit(predicate, _FirstOpaque())


class _FirstOpaque(PredicateVisitor[str | None]):
    """The first part of a condition the IR keeps no meaning of, described; None when it keeps all of it."""

    def visit_const(self, value: bool) -> str | None:
        return None

    def visit_and(self, results: Iterator[str | None]) -> str | None:
        return next((found for found in results if found is not None), None)

    visit_or = visit_and

    def visit_not(self, result: str | None) -> str | None:
        return result

    def visit_unknown(self, pred: Unknown) -> str | None:
        return pred.description if pred.expr is None else visit(pred.expr, self)

    def visit_atom(self, atom: Atom) -> str | None:
        return None
