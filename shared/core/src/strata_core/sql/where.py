"""Conditions of the SQL as predicate IR, with their literals coerced to the column types.

Only `column <op> literal` shapes become atoms; anything else (`a + b > 3`, `a < b`, functions) becomes an
`Unknown` atom, which prunes nothing and stays in the SQL that Spark executes. The timestamp column's literals are
also rewritten in the SQL itself, so that Spark compares exactly the values pruning used (see literals.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from strata_core.domain.fields import FieldType
from strata_core.query.predicate import (
    FLIPPED_OP,
    And,
    Compare,
    ComparisonOp,
    Const,
    InList,
    IsNull,
    Like,
    Not,
    Or,
    Predicate,
    Unknown,
    Value,
)
from strata_core.sql.errors import QueryValidationError
from strata_core.sql.literals import CoercionError, RawLiteral, coerce, decimal_text, raw_literal
from strata_core.sql.text_match import is_text_match, text_match_atom
from strata_core.sql.time_values import instant_micros
from strata_core.sql.validation import clause_of

_OPS: dict[type[exp.Expression], ComparisonOp] = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=",
                                                  exp.GT: ">", exp.GTE: ">="}
CONDITION_TYPES: tuple[type[exp.Expression], ...] = (*_OPS, exp.Between, exp.In, exp.Is, exp.Like)


@dataclass(frozen=True, slots=True)
class ConditionTranslator:
    """Turns conditions of one validated statement (columns already renamed to their declared names) into IR."""

    types: dict[str, FieldType]
    timestamp_field: str

    def translate(self, node: exp.Expression) -> Predicate:
        """The IR of a boolean expression, NOT kept as Not nodes (the caller takes the NNF). A chain of AND or OR
        (a 500-host filter) is one node with its operands, walked without recursing per operand."""
        match node:
            case exp.Paren():
                return self.translate(node.this)
            case exp.And():
                return And(tuple(self.translate(part) for part in _operands(node, exp.And)))
            case exp.Or():
                return Or(tuple(self.translate(part) for part in _operands(node, exp.Or)))
            case exp.Not():
                return Not(self.translate(node.this))
            case exp.Boolean():
                return Const(bool(node.this))
            case exp.Column():
                name = self._column(node)
                if name is not None and self.types[name] is FieldType.BOOL:
                    return Compare(name, "=", True)
            case exp.Between():
                return self._between(node)
            case exp.In():
                return self._in(node)
            case exp.Is():
                name = self._column(node.this)
                if name is not None and isinstance(node.expression, exp.Null):
                    return IsNull(name)
            case exp.Like():
                return self._like(node)
            case exp.Anonymous() if is_text_match(node):
                return text_match_atom(node, self.types, clause_of(node))
        if type(node) in _OPS:
            return self._comparison(node)
        return Unknown(_described(node))

    def coerce_everywhere(self, statement: exp.Expression) -> None:
        """Coerces (and so checks) the literals of every condition of the statement, in every clause and
        subquery, one atom at a time."""
        for node in list(statement.find_all(*CONDITION_TYPES, exp.Anonymous)):
            if not isinstance(node, exp.Anonymous) or is_text_match(node):
                self.translate(node)

    def _column(self, node: exp.Expression) -> str | None:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star) and node.name in self.types:
            return node.name
        return None

    def _comparison(self, node: exp.Expression) -> Predicate:
        op = _OPS[type(node)]
        column, literal = self._column(node.this), node.expression
        if column is None:
            column, literal, op = self._column(node.expression), node.this, FLIPPED_OP[op]
        if column is None:
            return Unknown(_described(node))
        return self._bound(column, op, literal)

    def _between(self, node: exp.Between) -> Predicate:
        column = self._column(node.this)
        if column is None:
            return Unknown(_described(node))
        low, high = node.args["low"], node.args["high"]
        return And((self._bound(column, ">=", low), self._bound(column, "<=", high)))

    def _raw(self, column: str, literal: exp.Expression) -> RawLiteral | None:
        """The literal, or the instant a constant time expression denotes against a timestamp column."""
        raw = raw_literal(literal)
        if raw is None and (self.types[column] is FieldType.TIMESTAMP or column == self.timestamp_field):
            instant = instant_micros(literal)
            if instant is not None:
                return RawLiteral("number" if self.types[column] is FieldType.TIMESTAMP else "instant", instant)
        return raw

    def _bound(self, column: str, op: ComparisonOp, literal: exp.Expression) -> Predicate:
        raw = self._raw(column, literal)
        if raw is None:
            return Unknown(f"{column} {op} {_described(literal)}")
        value = self._coerce(raw, column, literal)
        if isinstance(value, Fraction):
            return _integer_bound(column, op, value)
        return Compare(column, op, value)  # type: ignore[arg-type]

    def _in(self, node: exp.In) -> Predicate:
        column = self._column(node.this)
        if node.args.get("query") is not None:
            return Unknown(_described(node))
        raws = [None if column is None else self._raw(column, e) for e in node.expressions]
        if column is None or any(raw is None for raw in raws):
            return Unknown(_described(node))
        values = [self._coerce(raw, column, e) for raw, e in zip(raws, node.expressions, strict=True)]  # type: ignore[arg-type]
        # A fraction never equals an integer column's value: leaving it out keeps IN's meaning.
        kept: tuple[Value | None, ...] = tuple(v for v in values if not isinstance(v, Fraction))  # type: ignore[misc]
        return InList(column, kept)

    def _like(self, node: exp.Like) -> Predicate:
        column = self._column(node.this)
        pattern = node.expression
        if column is None or not isinstance(pattern, exp.Literal) or not pattern.is_string:
            return Unknown(_described(node))
        if self.types[column] is not FieldType.STRING:
            raise QueryValidationError(f"LIKE needs a string column; {column!r} is {self.types[column]}", column)
        _check_like_escapes(pattern.this, column)
        return Like(column, pattern.this, bool(node.args.get("negate")))

    def _coerce(self, raw: RawLiteral, column: str, literal: exp.Expression) -> object:
        field_type = self.types[column]
        is_timestamp_field = column == self.timestamp_field
        try:
            value = coerce(raw, column, field_type, is_timestamp_field=is_timestamp_field)
        except CoercionError as error:
            raise QueryValidationError(str(error), column) from error
        if is_timestamp_field and value is not None:
            replacement = _spark_timestamp_literal(raw, field_type, value)
            if replacement is not None:
                literal.replace(replacement)
        return value


def _operands(node: exp.Expression, kind: type[exp.Expression]) -> list[exp.Expression]:
    """The operands of a chain of one connective (sqlglot nests `a OR b OR c` to the left), iteratively."""
    operands, stack = [], [node]
    while stack:
        current = stack.pop()
        if isinstance(current, kind):
            stack.append(current.expression)
            stack.append(current.this)
        else:
            operands.append(current)
    return operands


def _described(node: exp.Expression) -> str:
    """An Unknown atom's description: its SQL, shortened (a long one is only ever shown in EXPLAIN)."""
    text = node.sql()
    return text if len(text) <= 200 else text[:197] + "..."


def _integer_bound(column: str, op: ComparisonOp, value: Fraction) -> Predicate:
    """`column op value` for an integer column and a fractional value, with the same truth on every row."""
    if op == "=":
        return InList(column, ())  # NULL on NULL, else FALSE
    if op == "!=":
        return InList(column, (), True)  # NULL on NULL, else TRUE
    if op in ("<", "<="):
        return Compare(column, "<=", math.floor(value))
    return Compare(column, ">=", math.ceil(value))


def _spark_timestamp_literal(raw: RawLiteral, field_type: FieldType, value: object) -> exp.Expression | None:
    if field_type is FieldType.TIMESTAMP:
        # Spark reads a bare integer as seconds and a string in the session time zone: neither is what we mean.
        return timestamp_literal(value)  # type: ignore[arg-type]
    if raw.kind in ("string", "timestamp", "instant"):
        return exp.Literal.number(decimal_text(value))  # type: ignore[arg-type]
    return None


def timestamp_literal(micros: int) -> exp.Expression:
    """An instant from epoch microseconds, exact in every engine (TIMESTAMP_MICROS in Spark, MAKE_TIMESTAMP in
    DuckDB)."""
    return exp.UnixToTime(this=exp.Literal.number(str(micros)), scale=exp.UnixToTime.MICROS)


def _check_like_escapes(pattern: str, column: str) -> None:
    # Spark refuses a backslash before anything but %, _ or another backslash, at run time: refuse it now.
    index = 0
    while index < len(pattern):
        if pattern[index] == "\\":
            if index + 1 >= len(pattern) or pattern[index + 1] not in "%_\\":
                raise QueryValidationError(
                    f"LIKE pattern {pattern!r}: a backslash must precede %, _ or another backslash", column)
            index += 2
            continue
        index += 1
