"""The full-text predicate `text_match(column, 'terms ...')`: its arguments, and its exact Spark form.

Token contract: a token is a maximal run of ASCII letters and digits, lowercased; a row matches when every term
is one of its tokens. In Spark each term becomes `column RLIKE '(^|[^A-Za-z0-9])<term>([^A-Za-z0-9]|$)'` with each
letter as an `[xX]` class. Lowercasing the column first (`lower(column)`) would not be exact: Unicode lowercasing
turns some non-ASCII characters into ASCII letters (U+212A KELVIN SIGN becomes 'k'), which would join them to a
token the contract ends.
"""

from __future__ import annotations

from sqlglot import exp

from strata_core.domain.fields import FieldType
from strata_core.query.predicate import TextMatch
from strata_core.sql.errors import QueryValidationError

FUNCTION_NAME = "text_match"
_BOUNDARY_BEFORE = "(^|[^A-Za-z0-9])"
_BOUNDARY_AFTER = "([^A-Za-z0-9]|$)"


def is_text_match(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == FUNCTION_NAME


def text_match_atom(node: exp.Anonymous, types: dict[str, FieldType], clause: str) -> TextMatch:
    """The IR atom of a text_match call whose column was already resolved to its schema name."""
    args = node.expressions
    if len(args) != 2:
        raise QueryValidationError("text_match takes two arguments: text_match(column, 'terms')", clause)
    column, text = args
    if not isinstance(column, exp.Column) or column.name not in types:
        raise QueryValidationError("the first argument of text_match must be a column", clause)
    if types[column.name] is not FieldType.STRING:
        raise QueryValidationError(
            f"text_match needs a text column; {column.name!r} is {types[column.name]}", column.name)
    if not isinstance(text, exp.Literal) or not text.is_string:
        raise QueryValidationError("the second argument of text_match must be a string literal", clause)
    atom = TextMatch.of(column.name, text.this)
    if not atom.terms:
        raise QueryValidationError(
            f"text_match({column.name}, {text.this!r}) has no terms: terms are runs of ASCII letters and digits",
            clause)
    return atom


def term_regex(term: str) -> str:
    """A Java regex finding `term` as a whole token, case-insensitively for ASCII letters only."""
    body = "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in term)
    return _BOUNDARY_BEFORE + body + _BOUNDARY_AFTER


def spark_expression(atom: TextMatch, column: exp.Column) -> exp.Expression:
    """The Spark condition equal to the atom, NULL on a NULL column as the atom is."""
    conditions = [exp.RegexpLike(this=column.copy(), expression=exp.Literal.string(term_regex(term)))
                  for term in atom.terms]
    return exp.Paren(this=exp.and_(*conditions))
