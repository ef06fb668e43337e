"""The predicate IR of a WHERE clause, the one fold over it (`PredicateVisitor`), its negation normal form, and its
reference semantics.

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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

Value = str | int | float | bool
ComparisonOp = Literal["=", "!=", "<", "<=", ">", ">="]
COMPARISON_OPS: frozenset[str] = frozenset(("=", "!=", "<", "<=", ">", ">="))
NEGATED_OP: dict[str, ComparisonOp] = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
# What `value op column` means as `column op' value`.
FLIPPED_OP: dict[str, ComparisonOp] = {"=": "=", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}

# The full-text token contract (the same one-line rule as strata_core.artifacts.full_text, kept here so the
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


# --- the fold ----------------------------------------------------------------------------------------------

T = TypeVar("T")


class PredicateVisitor(Generic[T]):
    """One fold over the IR, which every evaluator of it subclasses (pruning, split pruning in SQL, the row filter,
    the reference evaluation, time ranges, negation normal form, JSON, descriptions, delete coverage, text rows):
    the walk is written once (`visit`), and an evaluator says only what each kind of node means to it.

    The fold is bottom-up. AND and OR get their operands' results as a lazy iterator, so `all`/`any` stop at the
    first result that decides; NOT gets its operand's result. Unknown and the atoms come as nodes (an Unknown may
    keep its meaning in `expr`, for the evaluator to visit if it wants)."""

    # Whether an AND directly under an AND (an OR under an OR) is folded into one chain; an evaluator that must give
    # the tree back as it was built (the JSON form) says no.
    flattens: bool = True

    def visit_const(self, value: bool) -> T:
        raise NotImplementedError

    def visit_and(self, results: Iterator[T]) -> T:
        raise NotImplementedError

    def visit_or(self, results: Iterator[T]) -> T:
        raise NotImplementedError

    def visit_not(self, result: T) -> T:
        raise TypeError(f"{type(self).__name__} reads predicates in negation normal form, where no NOT is left")

    def visit_unknown(self, pred: Unknown) -> T:
        raise NotImplementedError

    def visit_atom(self, atom: Atom) -> T:
        raise NotImplementedError


def visit(pred: Predicate, visitor: PredicateVisitor[T]) -> T:
    """`visitor`'s result for `pred`. Recursion goes as deep as AND and OR alternate: a chain of one operator (a
    SQL parser nests `a OR b OR c ...` one level per term) is one level when the visitor flattens, and a chain of
    NOTs is a loop."""
    negations = 0
    while type(pred) is Not:
        pred, negations = pred.child, negations + 1  # type: ignore[union-attr]
    kind = type(pred)
    if kind is And or kind is Or:
        children = operands(pred) if visitor.flattens else iter(pred.children)  # type: ignore[arg-type,union-attr]
        results = (visit(child, visitor) for child in children)
        result = visitor.visit_and(results) if kind is And else visitor.visit_or(results)
    elif kind is Const:
        result = visitor.visit_const(pred.value)  # type: ignore[union-attr]
    elif kind is Unknown:
        result = visitor.visit_unknown(pred)  # type: ignore[arg-type]
    else:
        result = visitor.visit_atom(pred)  # type: ignore[arg-type]
    for _ in range(negations):
        result = visitor.visit_not(result)
    return result


def to_nnf(pred: Predicate) -> Predicate:
    """The same predicate with NOT pushed down to the atoms (and absorbed by them), flattened and folded.

    The result is TRUE on exactly the rows where the input is TRUE. Atoms that can never be TRUE (a comparison
    with NULL, NOT IN a list holding NULL) become FALSE: safe only once no NOT remains above them, which is why
    this happens here and not while building the tree. Linear in the size of the predicate.
    """
    return visit(pred, _NegationNormalForm()).form


class _Forms:
    """A node's normal form, and its negation's, built only if a NOT above asks for it."""

    __slots__ = ("_negate", "_negated", "form")

    def __init__(self, form: Predicate, negate: Callable[[], Predicate]) -> None:
        self.form, self._negate, self._negated = form, negate, None

    @property
    def negated(self) -> Predicate:
        if self._negated is None:
            self._negated = self._negate()
        return self._negated


class _NegationNormalForm(PredicateVisitor[_Forms]):
    """Bottom-up, so a NOT only swaps a node's two forms (De Morgan: the negation of an AND is the OR of the
    negations)."""

    def visit_const(self, value: bool) -> _Forms:
        return _Forms(Const(value), lambda: Const(not value))

    def visit_and(self, results: Iterator[_Forms]) -> _Forms:
        parts = list(results)
        return _Forms(conjunction(p.form for p in parts), lambda: disjunction(p.negated for p in parts))

    def visit_or(self, results: Iterator[_Forms]) -> _Forms:
        parts = list(results)
        return _Forms(disjunction(p.form for p in parts), lambda: conjunction(p.negated for p in parts))

    def visit_not(self, result: _Forms) -> _Forms:
        return _Forms(result.negated, lambda: result.form)

    def visit_unknown(self, pred: Unknown) -> _Forms:
        return _Forms(pred, lambda: Unknown(f"NOT ({pred.description})", None if pred.expr is None else Not(pred.expr)))

    def visit_atom(self, atom: Atom) -> _Forms:
        match atom:
            case Compare(_, _, None):
                return _Forms(FALSE, lambda: FALSE)
            case Compare(column, op, value):
                return _Forms(atom, lambda: Compare(column, NEGATED_OP[op], value))
            case InList(column, values, negated):
                return _Forms(_normal_in_list(column, values, negated),
                              lambda: _normal_in_list(column, values, not negated))
            case IsNull(column, negated):
                return _Forms(atom, lambda: IsNull(column, not negated))
            case Like(column, pattern, negated):
                return _Forms(atom, lambda: Like(column, pattern, not negated))
            case TextMatch():
                return _Forms(atom, lambda: Unknown(f"NOT {describe(atom)}", Not(atom)))
        raise TypeError(f"not a predicate: {atom!r}")


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
    return visit(pred, _Columns())


class _Columns(PredicateVisitor[frozenset[str]]):
    def visit_const(self, value: bool) -> frozenset[str]:
        return frozenset()

    def visit_and(self, results: Iterator[frozenset[str]]) -> frozenset[str]:
        return frozenset().union(*results)

    visit_or = visit_and

    def visit_not(self, result: frozenset[str]) -> frozenset[str]:
        return result

    def visit_unknown(self, pred: Unknown) -> frozenset[str]:
        return frozenset() if pred.expr is None else visit(pred.expr, self)

    def visit_atom(self, atom: Atom) -> frozenset[str]:
        return frozenset((atom.column,))


def describe(pred: Predicate) -> str:
    """A readable SQL-like rendering, for EXPLAIN and test messages."""
    return visit(pred, _Description())


class _Description(PredicateVisitor[str]):
    def visit_const(self, value: bool) -> str:
        return "TRUE" if value else "FALSE"

    def visit_and(self, results: Iterator[str]) -> str:
        return "(" + " AND ".join(results) + ")"

    def visit_or(self, results: Iterator[str]) -> str:
        return "(" + " OR ".join(results) + ")"

    def visit_not(self, result: str) -> str:
        return f"NOT {result}"

    def visit_unknown(self, pred: Unknown) -> str:
        return f"<{pred.description}>"

    def visit_atom(self, atom: Atom) -> str:
        match atom:
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
        raise TypeError(f"not a predicate: {atom!r}")


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
    return visit(pred, _RowTruth(row)) is True


class _RowTruth(PredicateVisitor[bool | None]):
    """Three-valued: None is NULL."""

    def __init__(self, row: Mapping[str, object]) -> None:
        self.row = row

    def visit_const(self, value: bool) -> bool | None:
        return value

    def visit_and(self, results: Iterator[bool | None]) -> bool | None:
        seen = list(results)
        if False in seen:
            return False
        return None if None in seen else True

    def visit_or(self, results: Iterator[bool | None]) -> bool | None:
        seen = list(results)
        if True in seen:
            return True
        return None if None in seen else False

    def visit_not(self, result: bool | None) -> bool | None:
        return None if result is None else not result

    def visit_unknown(self, pred: Unknown) -> bool | None:
        if pred.expr is None:
            raise ValueError(f"cannot evaluate {pred.description!r}: the IR does not express it")
        return visit(pred.expr, self)

    def visit_atom(self, atom: Atom) -> bool | None:
        if isinstance(atom, IsNull):
            return (self.row.get(atom.column) is None) != atom.negated
        return _eval_atom(atom, self.row.get(atom.column))


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
