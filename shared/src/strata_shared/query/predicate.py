"""The predicate IR of a WHERE clause, its negation normal form, and its reference semantics.

Values are Python values already coerced to the column's type: str, int, float, bool (timestamp columns as int
microseconds, i64 epoch-seconds timestamp columns as int seconds). None as a value is SQL NULL.

Semantics follow Spark SQL, which executes every query, so that pruning is judged against what Spark returns:
- three-valued logic: a comparison involving NULL is NULL, NOT NULL is NULL, and a row matches only when the
  predicate is TRUE;
- floats: NaN equals NaN and is greater than every other value, so the order on a float column is total;
- LIKE: `%` is any sequence, `_` one character, backslash escapes the next character, case-sensitive;
- text_match: every term is a token of the value, where a token is a maximal run of ASCII letters and digits,
  lowercased.

In negation normal form (`to_nnf`) NOT appears only inside `Unknown` atoms, so AND/OR are monotone: a pruning
oracle that answers every atom conservatively answers the whole predicate conservatively.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

Value = str | int | float | bool
ComparisonOp = Literal["=", "!=", "<", "<=", ">", ">="]
COMPARISON_OPS: frozenset[str] = frozenset(("=", "!=", "<", "<=", ">", ">="))
NEGATED_OP: dict[str, ComparisonOp] = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
# What `value op column` means as `column op' value`.
FLIPPED_OP: dict[str, ComparisonOp] = {"=": "=", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}

# The full-text token contract (the same one-line rule as strata_shared.artifacts.full_text, kept here so the
# predicate logic does not depend on the artifact code).
_TOKEN = re.compile(r"[A-Za-z0-9]+")


def _tokenize(text: str) -> list[str]:
    return [token.lower() for token in _TOKEN.findall(text)]


@dataclass(frozen=True, slots=True)
class Compare:
    column: str
    op: ComparisonOp
    value: Value | None

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise ValueError(f"unknown comparison operator {self.op!r}")


@dataclass(frozen=True, slots=True)
class InList:
    column: str
    values: tuple[Value | None, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class IsNull:
    column: str
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Like:
    column: str
    pattern: str
    negated: bool = False


@dataclass(frozen=True, slots=True)
class TextMatch:
    column: str
    terms: tuple[str, ...]

    @classmethod
    def of(cls, column: str, text: str) -> TextMatch:
        """The terms of free text under the token contract, deduplicated, in order of first appearance."""
        return cls(column, tuple(dict.fromkeys(_tokenize(text))))


@dataclass(frozen=True, slots=True)
class Unknown:
    """A condition pruning cannot use: it prunes nothing. `expr` keeps its meaning when the IR can state it
    (e.g. NOT text_match) so that it can still be evaluated; SQL the IR cannot express has no `expr`."""

    description: str
    expr: Predicate | None = None


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class Not:
    child: Predicate


@dataclass(frozen=True, slots=True)
class Const:
    value: bool


TRUE = Const(True)
FALSE = Const(False)

Atom = Compare | InList | IsNull | Like | TextMatch
Predicate = Atom | Unknown | And | Or | Not | Const


def operands(pred: And | Or) -> Iterator[Predicate]:
    """The operands of `pred` and of every node of the same kind directly under it, in order, found without
    recursion: a SQL parser builds `a OR b OR c` as OR(OR(a, b), c), so a host clause of 500 terms arrives 500
    levels deep, and every walk of the IR recurses per level of alternating AND/OR only, never per operand."""
    kind = type(pred)
    stack: list[Predicate] = [pred]
    while stack:
        node = stack.pop()
        if type(node) is kind:
            stack.extend(reversed(node.children))  # type: ignore[union-attr]
        else:
            yield node


def conjunction(children: Iterable[Predicate]) -> Predicate:
    """AND of the children, flattened, deduplicated, with constants folded (sound in three-valued logic)."""
    return _combine(children, And, absorbing=FALSE, neutral=TRUE)


def disjunction(children: Iterable[Predicate]) -> Predicate:
    """OR of the children, flattened, deduplicated, with constants folded (sound in three-valued logic)."""
    return _combine(children, Or, absorbing=TRUE, neutral=FALSE)


def _combine(children: Iterable[Predicate], kind: type[And] | type[Or], absorbing: Const,
             neutral: Const) -> Predicate:
    # A dict is an ordered set: deduplicating by hash keeps a chain of n terms linear (a list was quadratic).
    flat: dict[Predicate, None] = {}
    for child in children:
        for part in operands(child) if isinstance(child, kind) else (child,):
            if part == absorbing:
                return absorbing
            if part != neutral:
                flat.setdefault(part, None)
    if not flat:
        return neutral
    parts = tuple(flat)
    return parts[0] if len(parts) == 1 else kind(parts)


def to_nnf(pred: Predicate) -> Predicate:
    """The same predicate with NOT pushed down to the atoms (and absorbed by them), flattened and folded.

    The result is TRUE on exactly the rows where the input is TRUE. Atoms that can never be TRUE (a comparison
    with NULL, NOT IN a list holding NULL) become FALSE: safe only once no NOT remains above them, which is why
    this happens here and not while building the tree. Linear in the size of the predicate; recursion goes as
    deep as AND and OR alternate (a chain of one operator, NOTs included, is walked in a loop).
    """
    return _nnf(pred, False)


def _nnf(pred: Predicate, negate: bool) -> Predicate:
    while isinstance(pred, Not):
        pred, negate = pred.child, not negate
    match pred:
        case And() | Or():
            # Under NOT, AND becomes OR and OR becomes AND (De Morgan).
            conjunctive = isinstance(pred, And) != negate
            combine = conjunction if conjunctive else disjunction
            return combine(_nnf(leaf, leaf_negate) for leaf, leaf_negate in _nnf_operands(pred, negate, conjunctive))
        case Const(value):
            return Const(value != negate)
        case Compare(column, op, value):
            if value is None:
                return FALSE
            return Compare(column, NEGATED_OP[op] if negate else op, value)
        case InList(column, values, negated):
            return _normal_in_list(column, values, negated != negate)
        case IsNull(column, negated):
            return IsNull(column, negated != negate)
        case Like(column, pattern, negated):
            return Like(column, pattern, negated != negate)
        case TextMatch():
            return Unknown(f"NOT {describe(pred)}", Not(pred)) if negate else pred
        case Unknown(description, expr):
            if not negate:
                return pred
            return Unknown(f"NOT ({description})", None if expr is None else Not(expr))
    raise TypeError(f"not a predicate: {pred!r}")


def _nnf_operands(pred: And | Or, negate: bool, conjunctive: bool) -> Iterator[tuple[Predicate, bool]]:
    """The operands of the chain `pred` heads once NOTs are pushed in: every node under it (through NOTs) that
    combines with the same operator belongs to the chain; the others are its operands, with their negation."""
    stack: list[tuple[Predicate, bool]] = [(pred, negate)]
    while stack:
        node, node_negate = stack.pop()
        while isinstance(node, Not):
            node, node_negate = node.child, not node_negate
        if isinstance(node, And | Or) and (isinstance(node, And) != node_negate) == conjunctive:
            stack.extend((child, node_negate) for child in reversed(node.children))
        else:
            yield node, node_negate


def _normal_in_list(column: str, values: tuple[Value | None, ...], negated: bool) -> Predicate:
    present = tuple(dict.fromkeys(v for v in values if v is not None))
    if negated:
        # x NOT IN (.., NULL) is never TRUE; x NOT IN () is TRUE exactly when x is not null.
        if any(v is None for v in values):
            return FALSE
        return InList(column, present, True) if present else IsNull(column, True)
    # A NULL in the list can only make the result NULL instead of FALSE: the same for "is it TRUE".
    return InList(column, present, False) if present else FALSE


def is_nnf(pred: Predicate) -> bool:
    stack: list[Predicate] = [pred]
    while stack:
        node = stack.pop()
        if isinstance(node, Not):
            return False
        if isinstance(node, And | Or):
            stack.extend(node.children)
    return True


def columns_of(pred: Predicate) -> frozenset[str]:
    """Every column an atom of the predicate names (Unknown atoms name none the IR knows of)."""
    names: set[str] = set()
    stack: list[Predicate] = [pred]
    while stack:
        match stack.pop():
            case And(children) | Or(children):
                stack.extend(children)
            case Not(child):
                stack.append(child)
            case Unknown(_, expr):
                if expr is not None:
                    stack.append(expr)
            case Const():
                pass
            case atom:
                names.add(atom.column)
    return frozenset(names)


def describe(pred: Predicate) -> str:
    """A readable SQL-like rendering, for EXPLAIN and test messages."""
    match pred:
        case Compare(column, op, value):
            return f"{column} {op} {value!r}"
        case InList(column, values, negated):
            return f"{column} {'NOT IN' if negated else 'IN'} ({', '.join(repr(v) for v in values)})"
        case IsNull(column, negated):
            return f"{column} IS {'NOT NULL' if negated else 'NULL'}"
        case Like(column, pattern, negated):
            return f"{column} {'NOT LIKE' if negated else 'LIKE'} {pattern!r}"
        case TextMatch(column, terms):
            return f"text_match({column}, {' '.join(terms)!r})"
        case Unknown(description, _):
            return f"<{description}>"
        case And():
            return "(" + " AND ".join(describe(c) for c in operands(pred)) + ")"
        case Or():
            return "(" + " OR ".join(describe(c) for c in operands(pred)) + ")"
        case Not(child):
            return f"NOT {describe(child)}"
        case Const(value):
            return "TRUE" if value else "FALSE"
    raise TypeError(f"not a predicate: {pred!r}")


# --- ordering shared by evaluation and pruning ---------------------------------------------------------------


def order_key(value: Value) -> tuple[int, Value]:
    """A key that orders values the way Spark does: NaN above every number and equal to itself."""
    if isinstance(value, float) and math.isnan(value):
        return (1, 0.0)
    return (0, value)


NAN_KEY: tuple[int, Value] = (1, 0.0)


def compare_keys(left: tuple[int, Value], op: str, right: tuple[int, Value]) -> bool:
    match op:
        case "=":
            return left == right
        case "!=":
            return left != right
        case "<":
            return left < right
        case "<=":
            return left <= right
        case ">":
            return left > right
        case ">=":
            return left >= right
    raise ValueError(f"unknown comparison operator {op!r}")


# --- LIKE ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LikeShape:
    """What pruning can use of a LIKE pattern: the literal characters before the first wildcard, and whether
    the pattern is that literal exactly ("exact"), the literal followed only by `%` ("prefix"), or anything
    else ("other")."""

    prefix: str
    kind: Literal["exact", "prefix", "other"]


def like_shape(pattern: str) -> LikeShape:
    prefix: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            prefix.append(pattern[index + 1])
            index += 2
            continue
        if char in "%_":
            rest = pattern[index:]
            kind: Literal["prefix", "other"] = "prefix" if rest == "%" * len(rest) else "other"
            return LikeShape("".join(prefix), kind)
        prefix.append(char)
        index += 1
    return LikeShape("".join(prefix), "exact")


def like_regex_body(pattern: str) -> str:
    """A LIKE pattern as a regular expression of the whole value (anchor it, and let `.` match newlines): the
    one translation the reference (Python `re`) and the Arrow evaluation (RE2, `row_filter`) share."""
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            parts.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    return "".join(parts)


@functools.lru_cache(maxsize=512)
def _like_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(like_regex_body(pattern), re.DOTALL)


def like_matches(value: str, pattern: str) -> bool:
    return _like_regex(pattern).fullmatch(value) is not None


# --- reference evaluation --------------------------------------------------------------------------------------


def evaluate_row(pred: Predicate, row: Mapping[str, object]) -> bool:
    """Whether the row matches: the predicate is TRUE (not FALSE, not NULL). A column missing from the row is
    NULL, as a column missing from a file reads as nulls."""
    return _eval(pred, row) is True


def _eval(pred: Predicate, row: Mapping[str, object]) -> bool | None:
    match pred:
        case Const(value):
            return value
        case Not(child):
            result = _eval(child, row)
            return None if result is None else not result
        case And():
            results = [_eval(child, row) for child in operands(pred)]
            if False in results:
                return False
            return None if None in results else True
        case Or():
            results = [_eval(child, row) for child in operands(pred)]
            if True in results:
                return True
            return None if None in results else False
        case Unknown(description, expr):
            if expr is None:
                raise ValueError(f"cannot evaluate {description!r}: the IR does not express it")
            return _eval(expr, row)
        case IsNull(column, negated):
            return (row.get(column) is None) != negated
    return _eval_atom(pred, row.get(pred.column))


def _eval_atom(pred: Predicate, value: object) -> bool | None:
    if value is None:
        return None
    match pred:
        case Compare(_, op, literal):
            if literal is None:
                return None
            return compare_keys(order_key(value), op, order_key(literal))  # type: ignore[arg-type]
        case InList(_, values, negated):
            key = order_key(value)  # type: ignore[arg-type]
            if any(v is not None and order_key(v) == key for v in values):
                return not negated
            if any(v is None for v in values):
                return None
            return negated
        case Like(_, pattern, negated):
            return like_matches(str(value), pattern) != negated
        case TextMatch(_, terms):
            tokens = set(_tokenize(str(value)))
            return all(term in tokens for term in terms)
    raise TypeError(f"not an atom: {pred!r}")
