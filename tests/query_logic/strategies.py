"""Hypothesis strategies for the query-logic properties: small typed tables with nulls and NaN, and random
predicates over them (values drawn from the same small domains, so that predicates often hit real rows)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from strata_core.query.predicate import (
    FALSE,
    TRUE,
    And,
    Compare,
    InList,
    IsNull,
    Like,
    Not,
    Or,
    TextMatch,
    Unknown,
    order_key,
)

INTS = st.integers(-4, 4)
FLOATS = st.sampled_from([-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, math.inf, -math.inf, math.nan])
STRINGS = st.text(alphabet="ab%_\\é", max_size=3)
WORDS = ["error", "Error", "warn", "disk-full", "id42", "ID42", "x", "\u212aelvin", "nïce"]
TEXTS = st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join)
TERMS = st.sampled_from(["error", "warn", "disk", "full", "id42", "x", "elvin", "kelvin", "n", "ce", "nope"])
TIMESTAMPS = st.integers(-5, 40)

DOMAINS = {"i": INTS, "f": FLOATS, "s": STRINGS, "ts": TIMESTAMPS}
COLUMNS = ("i", "f", "s", "t", "ts")


def nullable(values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), values, values)


ROWS = st.fixed_dictionaries({
    "i": nullable(INTS),
    "f": nullable(FLOATS),
    "s": nullable(STRINGS),
    "t": nullable(TEXTS),
    "ts": nullable(TIMESTAMPS),
})

OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])


def _ordered_atoms(column: str, values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(Compare, st.just(column), OPS, nullable(values)),
        st.builds(InList, st.just(column), st.lists(nullable(values), max_size=3).map(tuple), st.booleans()),
        st.builds(IsNull, st.just(column), st.booleans()),
    )


ATOMS = st.one_of(
    *(_ordered_atoms(column, values) for column, values in DOMAINS.items()),
    st.builds(Like, st.just("s"), st.text(alphabet="ab%_\\é", max_size=4), st.booleans()),
    st.builds(TextMatch, st.just("t"), st.lists(TERMS, min_size=1, max_size=2).map(tuple)),
    st.builds(IsNull, st.just("t"), st.booleans()),
    st.sampled_from([TRUE, FALSE]),
)


def _with_unknowns(atom: st.SearchStrategy) -> st.SearchStrategy:
    # An Unknown that still carries its meaning, as NOT text_match does after to_nnf.
    return st.one_of(atom, atom, atom, atom.map(lambda a: Unknown("opaque", a)))


PREDICATES = st.recursive(
    _with_unknowns(ATOMS),
    lambda children: st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda c: And(tuple(c))),
        st.lists(children, min_size=1, max_size=3).map(lambda c: Or(tuple(c))),
        children.map(Not),
    ),
    max_leaves=8,
)


def value_key(value: object) -> object:
    """Membership as Spark sees it: NaN equals NaN, -0.0 equals 0.0."""
    return order_key(value)  # type: ignore[arg-type]
