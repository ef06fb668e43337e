"""The predicate IR as JSON: how a delete's predicate is stored in the metastore and travels to the places that
apply it (the query scan in either engine, the rewrite kernel in a Spark worker), so every one of them applies the
very predicate that was accepted, not a re-parse of its SQL under settings that may have changed since."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from strata_core.query.predicate import (
    And,
    Atom,
    Compare,
    Const,
    InList,
    IsNull,
    Like,
    Not,
    Or,
    Predicate,
    PredicateVisitor,
    TextMatch,
    Unknown,
    Value,
    visit,
)


def _value_out(value: Value | None) -> Any:
    # JSON has no NaN or infinities: floats travel tagged.
    if isinstance(value, float):
        return {"f": repr(value) if math.isfinite(value) else str(value)}
    return value


def _value_in(value: Any) -> Value | None:
    if isinstance(value, dict):
        return float(value["f"])
    return value


def predicate_to_data(pred: Predicate) -> dict[str, Any]:
    return visit(pred, _AsData())


class _AsData(PredicateVisitor[dict[str, Any]]):
    # The tree as it was built, so that it reads back equal.
    flattens = False

    def visit_const(self, value: bool) -> dict[str, Any]:
        return {"const": value}

    def visit_and(self, results: Iterator[dict[str, Any]]) -> dict[str, Any]:
        return {"and": list(results)}

    def visit_or(self, results: Iterator[dict[str, Any]]) -> dict[str, Any]:
        return {"or": list(results)}

    def visit_not(self, result: dict[str, Any]) -> dict[str, Any]:
        return {"not": result}

    def visit_unknown(self, pred: Unknown) -> dict[str, Any]:
        return {"unknown": [pred.description, None if pred.expr is None else visit(pred.expr, self)]}

    def visit_atom(self, atom: Atom) -> dict[str, Any]:
        match atom:
            case Compare(column, op, value):
                return {"compare": [column, op, _value_out(value)]}
            case InList(column, values, negated):
                return {"in": [column, [_value_out(v) for v in values], negated]}
            case IsNull(column, negated):
                return {"is_null": [column, negated]}
            case Like(column, pattern, negated):
                return {"like": [column, pattern, negated]}
            case TextMatch(column, terms):
                return {"text_match": [column, list(terms)]}
        raise TypeError(f"not a predicate: {atom!r}")


def predicate_from_data(data: dict[str, Any]) -> Predicate:
    [(kind, body)] = data.items()
    match kind:
        case "compare":
            return Compare(body[0], body[1], _value_in(body[2]))
        case "in":
            return InList(body[0], tuple(_value_in(v) for v in body[1]), bool(body[2]))
        case "is_null":
            return IsNull(body[0], bool(body[1]))
        case "like":
            return Like(body[0], body[1], bool(body[2]))
        case "text_match":
            return TextMatch(body[0], tuple(body[1]))
        case "unknown":
            return Unknown(body[0], None if body[1] is None else predicate_from_data(body[1]))
        case "and":
            return And(tuple(predicate_from_data(c) for c in body))
        case "or":
            return Or(tuple(predicate_from_data(c) for c in body))
        case "not":
            return Not(predicate_from_data(body))
        case "const":
            return Const(bool(body))
    raise ValueError(f"unknown predicate node {kind!r}")


def predicate_to_json(pred: Predicate) -> str:
    return json.dumps(predicate_to_data(pred), separators=(",", ":"), ensure_ascii=False)


def predicate_from_json(text: str) -> Predicate:
    return predicate_from_data(json.loads(text))
