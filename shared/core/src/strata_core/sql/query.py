"""SQL text to a validated query: the pruning predicate of each scan of the index, the columns to read, and the
SQL each engine executes.

The dialect is PostgreSQL-flavoured SQL as DuckDB reads it (dialect.py), over one index named as the table any
number of times (CTEs, subqueries, set operations, self-joins), built from the constructs of the catalog
(catalog.py, docs/sql.md). Literal rules for timestamps are in literals.py.

One statement is rendered for both engines (Spark SQL and DuckDB), with the rules where they differ fixed here and
in engine_forms.py so the answers are the same: a division, modulo or integer division by zero is NULL; LIKE
escapes with a backslash; NULLs sort last, ascending and descending (DuckDB's order); a select expression without an
alias is named by its SQL text (`COUNT(*)`, `MIN(value)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokens import TokenType

from strata_core.domain.index_config import IndexSettings
from strata_core.query.predicate import Predicate, disjunction, to_nnf
from strata_core.sql.dialect import READ_DIALECT
from strata_core.sql.engine_forms import Neutralizer, spell_markers
from strata_core.sql.errors import QuerySyntaxError, QueryValidationError
from strata_core.sql.scans import Scan, scan_predicates
from strata_core.sql.spark_forms import subquery_filters
from strata_core.sql.text_match import is_text_match, spark_expression, text_match_atom
from strata_core.sql.validation import AGGREGATES, clause_of, query_statement, validate
from strata_core.sql.where import ConditionTranslator

_MISSING_DELIMITER = re.compile(r"Missing .* from \d+:(\d+)")
# Deeper nesting is refused before parsing: the parser and every walk of the tree recurse per level. Dashboards
# nest a few levels; 32 leaves room for generated SQL, and for sqlglot's parser, which recurses some 20 frames
# per level.
MAX_NESTING = 32
SCAN_MARK = "strata_scan"


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A query Strata can plan. `scans`: each reference to the index with the predicate its rows must satisfy;
    `predicate` their disjunction, in negation normal form (parts it cannot express are Unknown atoms: they prune
    nothing but are still executed); `columns_needed` every declared column the query reads anywhere (all of them
    for `*`); `limit` the LIMIT, if any; `uses_now` whether the query reads its instant (then `now_us`);
    `local_only` why only the local engine can run it, if so."""

    index_id: str
    predicate: Predicate
    scans: tuple[Scan, ...]
    columns_needed: frozenset[str]
    has_aggregates: bool
    limit: int | None
    uses_now: bool
    now_us: int
    local_only: str | None
    _ast: exp.Query = field(repr=False, compare=False)
    # Rendered statements by (view, dialect, max_rows, filtered scans): a kept plan's query is rendered once.
    _rendered: dict[tuple, str] = field(default_factory=dict, repr=False, compare=False)

    def sql_for(self, view_name: str, dialect: Literal["spark", "duckdb"], max_rows: int | None = None,
                scan_filters: dict[int, exp.Expression] | None = None,
                view_columns: tuple[str, ...] = ()) -> str:
        """The query over `view_name` (a view of the pruned scan) instead of the index, in an engine's dialect.
        `max_rows` lowers the LIMIT to it (a result cap); `scan_filters` adds a condition to some scans (by
        position: the default lookback of a scan without a time bound); `view_columns` the view's columns, in
        order (Spark's rewrites list them where the query says `*`)."""
        filters = scan_filters or {}
        key = (view_name, dialect, max_rows, tuple(sorted((k, v.sql()) for k, v in filters.items())), view_columns)
        if (rendered := self._rendered.get(key)) is None:
            rendered = self._rendered[key] = self._render(view_name, dialect, max_rows, filters, view_columns)
        return rendered

    def _render(self, view_name: str, dialect: Literal["spark", "duckdb"], max_rows: int | None,
                filters: dict[int, exp.Expression], view_columns: tuple[str, ...]) -> str:
        statement = self._ast.copy()
        for table in [t for t in statement.find_all(exp.Table) if SCAN_MARK in t.meta]:
            qualifier = exp.TableAlias(this=exp.to_identifier(table.alias or table.name, quoted=True))
            view = exp.Table(this=exp.to_identifier(view_name, quoted=True))
            condition = filters.get(table.meta[SCAN_MARK])
            if condition is None:
                view.set("alias", qualifier)
                table.replace(view)
            else:
                # The view keeps the name columns are qualified with, so `logs.level` still resolves.
                table.replace(exp.Subquery(this=exp.select("*").from_(view).where(condition.copy()),
                                           alias=qualifier))
        if max_rows is not None and (self.limit is None or self.limit > max_rows):
            statement.set("limit", exp.Limit(expression=exp.Literal.number(max_rows)))
        spell_markers(statement, dialect)
        if dialect == "duckdb":
            # Spark's LIKE escapes with a backslash by default, DuckDB's has no escape unless told.
            for like in list(statement.find_all(exp.Like, exp.ILike)):
                if not isinstance(like.parent, exp.Escape):
                    like.replace(exp.Escape(this=like.copy(), expression=exp.Literal.string("\\")))
        else:
            statement = subquery_filters(statement, view_columns)
        return statement.sql(dialect=dialect, identify=True)


def parse_query(sql: str, *, index_id: str, settings: IndexSettings,
                statements: list[exp.Expression | None] | None = None, now_us: int = 0) -> ParsedQuery:
    """Parses and validates one query over `index_id`. Raises QuerySyntaxError or QueryValidationError.
    `statements`: `parse_sql(sql)` when the caller parsed it already (the tree is rewritten in place); `now_us`:
    the instant `now()` stands for."""
    statement = query_statement(parse_sql(sql) if statements is None else statements)
    types = settings.field_types()
    resolution = validate(statement, index_id=index_id, types=types)
    for position, table in enumerate(resolution.tables):
        table.meta[SCAN_MARK] = position

    _name_unaliased_expressions(statement)
    neutral = Neutralizer(types, now_us)
    neutral.run(statement)
    translator = ConditionTranslator(types, settings.timestamp_field)
    # First on the statement itself, so an error names its clause; the scans then read the coerced literals.
    translator.coerce_everywhere(statement)
    scans = scan_predicates(resolution.tables, lambda node, _select: to_nnf(translator.translate(node)),
                            set(types))
    _null_on_zero_divisor(statement)
    for node in list(statement.find_all(exp.Anonymous)):
        if is_text_match(node):
            atom = text_match_atom(node, types, clause_of(node))
            node.replace(spark_expression(atom, node.expressions[0]))

    return ParsedQuery(
        index_id=index_id,
        predicate=to_nnf(disjunction(scan.predicate for scan in scans)),
        scans=tuple(scans),
        columns_needed=resolution.columns,
        has_aggregates=any(True for _ in statement.find_all(*AGGREGATES)) or any(
            s.args.get("group") is not None for s in statement.find_all(exp.Select)),
        limit=_limit(statement),
        uses_now=neutral.uses_now,
        now_us=now_us,
        local_only=neutral.local_only,
        _ast=statement,
    )


def _outermost_select(statement: exp.Query) -> exp.Select:
    while isinstance(statement, exp.SetOperation):
        statement = statement.this
    return statement  # type: ignore[return-value]


def _name_unaliased_expressions(statement: exp.Query) -> None:
    """Engines name computed columns differently (Spark `count(1)`, DuckDB `count_star()`): give every computed
    column of the result without an alias the name DuckDB gives it (its SQL text, functions in lower case,
    `count_star()` for `count(*)`), so both engines answer with DuckDB's columns."""
    select = _outermost_select(statement)
    for expression in list(select.expressions):
        if not isinstance(expression, exp.Alias | exp.Column | exp.Star):
            name = "count_star()" if isinstance(expression, exp.Count) and isinstance(expression.this, exp.Star) \
                else expression.sql(dialect=READ_DIALECT, normalize_functions="lower")
            expression.replace(exp.alias_(expression.copy(), name, quoted=True))


def _null_on_zero_divisor(statement: exp.Query) -> None:
    """x / 0 is an error in Spark's ANSI mode and infinity in DuckDB: both engines get NULL instead."""
    for node in list(statement.find_all(exp.Div, exp.Mod, exp.IntDiv)):
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
        dialect = READ_DIALECT()
        tokens = dialect.tokenize(sql)
        _check_nesting(tokens)
        return dialect.parser().parse(tokens, sql)
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


def _check_nesting(tokens: list) -> None:
    """Refuses parentheses or NOTs nested deeper than MAX_NESTING, from the tokens (read without recursion)."""
    depth = deepest = nots = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            deepest = max(deepest, depth)
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        nots = nots + 1 if token.token_type == TokenType.NOT else 0
        if deepest > MAX_NESTING or nots > MAX_NESTING:
            what = "parentheses" if deepest > MAX_NESTING else "NOTs"
            raise QueryValidationError(f"the query nests {what} more than {MAX_NESTING} deep; simplify it", "sql")


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


def _limit(statement: exp.Query) -> int | None:
    for select in statement.find_all(exp.Select, exp.SetOperation):
        offset = select.args.get("offset")
        if offset is not None and not _whole_number(offset.expression):
            raise QueryValidationError("OFFSET takes a non-negative integer", "limit")
        limit = select.args.get("limit")
        if limit is not None and (limit.args.get("offset") or limit.expressions
                                  or not _whole_number(limit.expression)):
            raise QueryValidationError("LIMIT takes a non-negative integer", "limit")
    limit = statement.args.get("limit")
    return None if limit is None else int(limit.expression.this)


def _whole_number(value: exp.Expression | None) -> bool:
    return isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()
