"""SQL text to a validated query: the pruning predicate, the columns to read, and the SQL each engine executes.

The accepted dialect is sqlglot's default one (ANSI-like: 'strings', "identifiers"), over one index named as the
table. Supported: SELECT of columns, `*`, expressions and aliases; WHERE with AND, OR, NOT, comparisons, BETWEEN,
IN, IS [NOT] NULL, LIKE and `text_match(column, 'terms')`; GROUP BY with count/sum/min/max/avg; HAVING; ORDER BY;
LIMIT. Literal rules for timestamps are in literals.py.

One statement is rendered for both engines (Spark SQL and DuckDB), with the few rules where they differ fixed
here so the answers are the same: a division, modulo or integer division by zero is NULL; LIKE escapes with a
backslash; NULLs sort first ascending and last descending; a select expression without an alias is named by
its SQL text (`COUNT(*)`, `MIN(value)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError

from strata_shared.domain.index_config import IndexSettings
from strata_shared.query.predicate import TRUE, Predicate, to_nnf
from strata_shared.sql.errors import QuerySyntaxError, QueryValidationError
from strata_shared.sql.text_match import is_text_match, spark_expression, text_match_atom
from strata_shared.sql.validation import AGGREGATES, clause_of, statement_of, validate
from strata_shared.sql.where import ConditionTranslator

_MISSING_DELIMITER = re.compile(r"Missing .* from \d+:(\d+)")


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query Strata can plan. `predicate` is the WHERE clause in negation normal form (parts it cannot express
    are Unknown atoms: they prune nothing but are still executed); `columns_needed` every declared column the
    query reads anywhere (all of them for `*`); `limit` the LIMIT, if any."""

    index_id: str
    predicate: Predicate
    columns_needed: frozenset[str]
    has_aggregates: bool
    limit: int | None
    _ast: exp.Select = field(repr=False, compare=False)
    _qualifier: str = field(repr=False, compare=False)
    # Rendered statements by (view, dialect, max_rows): a kept plan's query is rendered once, not per run.
    _rendered: dict[tuple[str, str, int | None], str] = field(default_factory=dict, repr=False, compare=False)

    def sql_for(self, view_name: str, dialect: Literal["spark", "duckdb"], max_rows: int | None = None) -> str:
        """The query over `view_name` (a view of the pruned scan) instead of the index, in an engine's dialect.
        `max_rows` lowers the LIMIT to it (a result cap)."""
        key = (view_name, dialect, max_rows)
        if (rendered := self._rendered.get(key)) is None:
            rendered = self._rendered[key] = self._render(view_name, dialect, max_rows)
        return rendered

    def _render(self, view_name: str, dialect: Literal["spark", "duckdb"], max_rows: int | None) -> str:
        statement = self._ast.copy()
        # The view keeps the name columns are qualified with, so `logs.level` still resolves.
        statement.args["from_"].set("this", exp.Table(
            this=exp.to_identifier(view_name, quoted=True),
            alias=exp.TableAlias(this=exp.to_identifier(self._qualifier, quoted=True)),
        ))
        if max_rows is not None and (self.limit is None or self.limit > max_rows):
            statement.set("limit", exp.Limit(expression=exp.Literal.number(max_rows)))
        if dialect == "duckdb":
            # Spark's LIKE escapes with a backslash by default, DuckDB's has no escape unless told.
            for like in list(statement.find_all(exp.Like)):
                if not isinstance(like.parent, exp.Escape):
                    like.replace(exp.Escape(this=like.copy(), expression=exp.Literal.string("\\")))
        return statement.sql(dialect=dialect, identify=True)


def parse_query(sql: str, *, index_id: str, settings: IndexSettings,
                statements: list[exp.Expression | None] | None = None) -> ParsedQuery:
    """Parses and validates one SELECT over `index_id`. Raises QuerySyntaxError or QueryValidationError.
    `statements`: `parse_sql(sql)` when the caller parsed it already (the tree is rewritten in place)."""
    select = statement_of(parse_sql(sql) if statements is None else statements)
    types = settings.field_types()
    resolution = validate(select, index_id=index_id, types=types)

    translator = ConditionTranslator(select, types, settings.timestamp_field)
    where = select.args.get("where")
    predicate = to_nnf(translator.translate(where.this)) if where is not None else TRUE
    translator.rewrite_outside_where()
    _name_unaliased_expressions(select)
    _null_on_zero_divisor(select)
    for node in list(select.find_all(exp.Anonymous)):
        if is_text_match(node):
            atom = text_match_atom(node, types, clause_of(node, select))
            node.replace(spark_expression(atom, node.expressions[0]))

    return ParsedQuery(
        index_id=index_id,
        predicate=predicate,
        columns_needed=resolution.columns,
        has_aggregates=select.args.get("group") is not None or any(True for _ in select.find_all(*AGGREGATES)),
        limit=_limit(select),
        _ast=select,
        _qualifier=resolution.qualifier,
    )


def _name_unaliased_expressions(select: exp.Select) -> None:
    """Engines name `count(*)` differently (Spark `count(1)`, DuckDB `count_star()`): give every computed
    column without an alias its SQL text as its name, so both engines answer with the same columns."""
    for expression in list(select.expressions):
        if not isinstance(expression, exp.Alias | exp.Column | exp.Star):
            expression.replace(exp.alias_(expression.copy(), expression.sql(), quoted=True))


def _null_on_zero_divisor(select: exp.Select) -> None:
    """x / 0 is an error in Spark's ANSI mode and infinity in DuckDB: both engines get NULL instead."""
    for node in list(select.find_all(exp.Div, exp.Mod, exp.IntDiv)):
        divisor = node.expression
        if isinstance(divisor, exp.Literal) and divisor.is_number and float(divisor.this) != 0:
            continue
        node.set("expression", exp.Nullif(this=divisor.copy(), expression=exp.Literal.number(0)))


def parse_sql(sql: str) -> list[exp.Expression | None]:
    """The statements of `sql`. The one place SQL text is parsed: whatever sqlglot raises (a token it cannot
    read, such as an unterminated string or quoted identifier, or a statement it cannot parse) becomes a
    QuerySyntaxError, a 400 with the line and column of the offending token."""
    if not sql.strip():
        raise QuerySyntaxError("the query is empty", 1, 1)
    try:
        return sqlglot.parse(sql)
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        line, column = int(first.get("line") or 1), int(first.get("col") or 1)
        highlight = first.get("highlight") or ""
        # sqlglot points at the last character of the offending token; point at its first instead.
        if highlight and "\n" not in highlight:
            column = max(1, column - len(highlight) + 1)
        description = first.get("description") or str(error)
        message = f"{description} near {highlight!r}" if highlight else description
        raise QuerySyntaxError(message, line, column) from error
    except TokenError as error:
        offset = _token_error_offset(error, len(sql))
        line, column = _line_column(sql, offset)
        raise QuerySyntaxError(_token_error_message(error), line, column) from error
    except SqlglotError as error:
        raise QuerySyntaxError(str(error), 1, 1) from error


def _token_error_offset(error: TokenError, size: int) -> int:
    cause = error.__cause__
    match = _MISSING_DELIMITER.search(str(cause)) if cause is not None else None
    if match:
        return int(match.group(1))
    # sqlglot quotes 50 characters either side of where it stopped.
    if error.start:
        return error.start + 50
    if error.end is not None and error.end < size - 1:
        return max(0, error.end - 50)
    return size


def _token_error_message(error: TokenError) -> str:
    cause = str(error.__cause__ or "")
    if cause.startswith("Missing "):
        return f"unterminated literal or identifier: {cause.split(' from ')[0].lower()}"
    return "the query cannot be tokenized (an unterminated comment, string or identifier?)"


def _line_column(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count("\n") + 1
    return line, offset - (before.rfind("\n") + 1) + 1


def _limit(select: exp.Select) -> int | None:
    limit = select.args.get("limit")
    if limit is None:
        return None
    value = limit.expression
    if limit.args.get("offset") or limit.expressions:
        raise QueryValidationError("OFFSET is not supported", "limit")
    if not isinstance(value, exp.Literal) or value.is_string or not value.this.isdigit():
        raise QueryValidationError("LIMIT takes a non-negative integer", "limit")
    return int(value.this)
