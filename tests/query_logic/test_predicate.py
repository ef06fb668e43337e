"""The predicate IR: negation normal form keeps the meaning, three-valued logic, Spark's NaN order, LIKE."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
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
    columns_of,
    conjunction,
    describe,
    disjunction,
    evaluate_row,
    is_nnf,
    like_matches,
    like_shape,
    to_nnf,
)
from tests.helpers import examples
from tests.query_logic.strategies import PREDICATES, ROWS


@settings(max_examples=examples(400))
@given(PREDICATES, st.lists(ROWS, min_size=1, max_size=6))
def test_nnf_matches_the_same_rows(pred, rows):
    nnf = to_nnf(pred)
    assert is_nnf(nnf)
    for row in rows:
        assert evaluate_row(nnf, row) == evaluate_row(pred, row), (describe(pred), describe(nnf), row)


def test_not_pushes_into_atoms():
    pred = Not(And((Compare("a", "=", 1), Or((InList("b", (1, 2)), IsNull("c"), Like("s", "x%"))))))
    assert to_nnf(pred) == Or((
        Compare("a", "!=", 1),
        And((InList("b", (1, 2), True), IsNull("c", True), Like("s", "x%", True))),
    ))
    assert to_nnf(Not(Not(Compare("a", "<", 3)))) == Compare("a", "<", 3)
    assert to_nnf(Not(Compare("a", "<", 3))) == Compare("a", ">=", 3)
    assert to_nnf(Not(TRUE)) == FALSE


def test_not_text_match_becomes_an_unknown_that_still_evaluates():
    match = TextMatch.of("m", "Disk FULL!")
    assert match.terms == ("disk", "full")
    negated = to_nnf(Not(match))
    assert isinstance(negated, Unknown)
    assert evaluate_row(negated, {"m": "all good"})
    assert not evaluate_row(negated, {"m": "disk-full"})
    # NOT of NULL is NULL: a null text matches neither.
    assert not evaluate_row(negated, {"m": None})
    assert not evaluate_row(match, {"m": None})


def test_never_true_atoms_fold_to_false_only_after_negations_are_gone():
    # a = NULL is NULL, and so is NOT (a = NULL): neither matches any row.
    assert to_nnf(Compare("a", "=", None)) == FALSE
    assert to_nnf(Not(Compare("a", "=", None))) == FALSE
    assert not evaluate_row(Not(Compare("a", "=", None)), {"a": 1})
    # x NOT IN (1, NULL) is never TRUE; x IN (1, NULL) is TRUE only for 1.
    assert to_nnf(InList("x", (1, None), True)) == FALSE
    assert to_nnf(InList("x", (1, 1), True)) == InList("x", (1,), True)
    assert to_nnf(Not(InList("x", (1, None)))) == FALSE
    assert to_nnf(InList("x", (1, None))) == InList("x", (1,))
    assert to_nnf(InList("x", ())) == FALSE
    assert to_nnf(InList("x", (), True)) == IsNull("x", True)


def test_three_valued_logic():
    row = {"a": None, "b": 1}
    assert not evaluate_row(Compare("a", "=", 1), row)
    assert not evaluate_row(Compare("a", "!=", 1), row)
    assert not evaluate_row(Not(Compare("a", "=", 1)), row)
    assert evaluate_row(Or((Compare("a", "=", 1), Compare("b", "=", 1))), row)
    assert not evaluate_row(And((Compare("a", "=", 1), Compare("b", "=", 1))), row)
    # NOT (NULL AND FALSE) = NOT FALSE = TRUE.
    assert evaluate_row(Not(And((Compare("a", "=", 1), Compare("b", "=", 2)))), row)
    assert evaluate_row(IsNull("a"), row) and evaluate_row(IsNull("missing"), row)


def test_nan_orders_above_every_number_and_equals_itself():
    row = {"f": math.nan}
    assert evaluate_row(Compare("f", "=", math.nan), row)
    assert evaluate_row(Compare("f", ">", math.inf), row)
    assert not evaluate_row(Compare("f", "<", 1.0), row)
    assert evaluate_row(InList("f", (1.0, math.nan)), row)
    assert evaluate_row(Compare("f", "=", 0.0), {"f": -0.0})


@pytest.mark.parametrize(("value", "pattern", "expected"), [
    ("abc", "abc", True),
    ("abc", "a%", True),
    ("abc", "%c", True),
    ("abc", "a_c", True),
    ("abc", "a_", False),
    ("a%c", "a\\%c", True),
    ("abc", "a\\%c", False),
    ("a_c", "a\\_c", True),
    ("abc", "a\\_c", False),
    ("line\nbreak", "line%", True),
    ("ABC", "abc", False),
    ("", "%", True),
    ("", "_", False),
    ("a.c", "a.c", True),
    ("abc", "a.c", False),
])
def test_like(value, pattern, expected):
    assert like_matches(value, pattern) is expected


@pytest.mark.parametrize(("pattern", "prefix", "kind"), [
    ("abc", "abc", "exact"),
    ("abc%", "abc", "prefix"),
    ("abc%%", "abc", "prefix"),
    ("ab_c", "ab", "other"),
    ("ab%c", "ab", "other"),
    ("%abc", "", "other"),
    ("%", "", "prefix"),
    ("a\\%b%", "a%b", "prefix"),
    ("", "", "exact"),
])
def test_like_shape(pattern, prefix, kind):
    shape = like_shape(pattern)
    assert (shape.prefix, shape.kind) == (prefix, kind)


@given(st.text(alphabet="ab%_\\", max_size=5), st.text(alphabet="ab%_\\", max_size=5))
def test_like_prefix_is_a_prefix_of_every_match(value, pattern):
    shape = like_shape(pattern)
    if like_matches(value, pattern):
        assert value.startswith(shape.prefix)
        if shape.kind == "exact":
            assert value == shape.prefix
    if shape.kind == "prefix" and value.startswith(shape.prefix):
        assert like_matches(value, pattern)


def test_conjunction_and_disjunction_fold_constants():
    a, b = Compare("a", "=", 1), Compare("b", "=", 2)
    assert conjunction([a, TRUE, And((b, a))]) == And((a, b))
    assert conjunction([a, FALSE]) == FALSE
    assert conjunction([]) == TRUE
    assert disjunction([a, FALSE]) == a
    assert disjunction([a, TRUE]) == TRUE
    assert disjunction([]) == FALSE


def test_columns_of():
    pred = And((Compare("a", "=", 1), Or((IsNull("b"), Unknown("x + y > 1"))), Unknown("n", TextMatch("c", ("z",)))))
    assert columns_of(pred) == {"a", "b", "c"}


def test_unknown_without_meaning_cannot_be_evaluated():
    with pytest.raises(ValueError, match="x \\+ y"):
        evaluate_row(Unknown("x + y > 1"), {})


def test_compare_rejects_unknown_operator():
    with pytest.raises(ValueError):
        Compare("a", "<>", 1)  # type: ignore[arg-type]


# --- long chains: a SQL parser builds `a OR b OR c` as OR(OR(a, b), c), so a host clause over 2,000 hosts arrives
# 2,000 levels deep, past Python's recursion limit. The IR walks a chain of one operator in a loop and deduplicates
# by hash: the shapes below pin that (the time it takes is measured in the issue, never asserted here).

def _left_deep(kind, parts):
    node = parts[0]
    for part in parts[1:]:
        node = kind((node, part))
    return node


HOSTS = [Compare("hostname", "=", f"host_{i}") for i in range(2000)]


def test_a_left_deep_chain_becomes_one_flat_node_in_order():
    nnf = to_nnf(_left_deep(Or, HOSTS))
    assert nnf == Or(tuple(HOSTS))


def test_a_negated_chain_becomes_one_flat_node_of_negated_atoms():
    nnf = to_nnf(Not(_left_deep(Or, HOSTS)))
    assert nnf == And(tuple(Compare("hostname", "!=", f"host_{i}") for i in range(2000)))


def test_nots_inside_a_chain_keep_it_one_node():
    # NOT (NOT a AND NOT b) is a OR b: the chain continues through double negation and De Morgan.
    a, b, c = HOSTS[:3]
    assert to_nnf(Or((Not(And((Not(a), Not(b)))), c))) == Or((a, b, c))
    assert to_nnf(Not(Not(Not(Not(_left_deep(And, HOSTS)))))) == And(tuple(HOSTS))


def test_a_chain_keeps_the_first_of_repeated_terms():
    repeated = _left_deep(Or, [*HOSTS, *reversed(HOSTS)])
    assert to_nnf(repeated) == Or(tuple(HOSTS))
    assert disjunction([*HOSTS, TRUE, *HOSTS]) == TRUE


def test_alternating_chains_stay_nested_once_per_alternation():
    ands = [_left_deep(And, [Compare("a", "=", i), Compare("b", "=", i)]) for i in range(1000)]
    nnf = to_nnf(_left_deep(Or, ands))
    assert isinstance(nnf, Or) and len(nnf.children) == 1000
    assert all(child == And((Compare("a", "=", i), Compare("b", "=", i))) for i, child in enumerate(nnf.children))


def test_every_walk_takes_a_left_deep_chain():
    chain = _left_deep(Or, HOSTS)
    assert is_nnf(chain)
    assert columns_of(chain) == {"hostname"}
    assert describe(chain) == "(" + " OR ".join(f"hostname = 'host_{i}'" for i in range(2000)) + ")"
    assert evaluate_row(chain, {"hostname": "host_1999"})
    assert not evaluate_row(chain, {"hostname": "host_2000"})
