"""The local scan's row filter for text_match (`strata_query.execution.text_rows`): it never drops a row the WHERE
clause matches, and it decides a text_match alone exactly, on dictionaries as the RAM tier holds them (entries in
any order, unused entries, NULL entries and NULL rows, sliced arrays, non-ASCII text)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.query.predicate import And, Compare, Or, TextMatch, describe, evaluate_row, to_nnf
from strata_query.execution.text_rows import rows_that_may_match
from tests.helpers import examples
from tests.query_logic.strategies import PREDICATES, ROWS, TERMS, WORDS

REPEATS = st.integers(1, 4)
# Characters whose Unicode case mapping is ASCII (KELVIN SIGN, LONG S, dotless and dotted I), other non-ASCII,
# and token boundaries of every kind.
TEXT = st.text(alphabet="abAB01 -_.\n\u212a\u017f\u0131\u0130éß\U0001f600", max_size=12)


def _dictionary_column(values: list[str | None], unused: list[str | None], order: list[int]) -> pa.DictionaryArray:
    """`values` as a dictionary array whose dictionary also holds `unused`, entries in a drawn order."""
    entries = list(dict.fromkeys([v for v in values if v is not None] + unused))
    entries = [entries[i] for i in sorted(range(len(entries)), key=lambda i: order[i % len(order)] * 1000 + i)]
    position = {v: i for i, v in enumerate(entries) if v is not None}
    indices = pa.array([None if v is None else position[v] for v in values], pa.int32())
    return pa.DictionaryArray.from_arrays(indices, pa.array(entries, pa.string()))


@st.composite
def tables(draw, repeats=REPEATS):
    """Rows and their table; rows repeat, so that dictionaries are smaller than their columns, as in a row group."""
    rows = draw(st.lists(ROWS, min_size=1, max_size=24)) * draw(repeats)
    columns = {}
    for name in ("s", "t"):
        unused = draw(st.lists(st.one_of(st.none(), st.sampled_from(WORDS), TEXT), max_size=3))
        order = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5))
        columns[name] = _dictionary_column([row[name] for row in rows], unused, order)
    columns["i"] = pa.array([row["i"] for row in rows], pa.int64())
    return rows, pa.table(columns)


@settings(max_examples=examples(400))
@given(PREDICATES, tables())
def test_no_row_the_where_clause_matches_is_dropped(pred, drawn):
    rows, table = drawn
    keep = rows_that_may_match(to_nnf(pred), table)
    if keep is None:
        return
    assert len(keep) == len(rows)
    for row, kept in zip(rows, keep, strict=True):
        assert kept or not evaluate_row(pred, row), (describe(to_nnf(pred)), row)


@settings(max_examples=examples(300))
@given(st.lists(TERMS, min_size=1, max_size=2).map(tuple), tables(st.just(4)))
def test_a_text_match_alone_keeps_exactly_its_rows(terms, drawn):
    rows, table = drawn
    atom = TextMatch("t", terms)
    keep = rows_that_may_match(atom, table)
    if keep is None:
        # Too few rows per dictionary entry to be worth deciding here: DuckDB decides them all.
        assert 2 * len(table.column("t").chunk(0).dictionary) > len(rows)
        return
    assert keep.tolist() == [evaluate_row(atom, row) for row in rows]


def test_rows_are_kept_when_nothing_is_decided():
    plain = pa.table({"t": pa.array(["disk full", "ok"] * 4), "i": pa.array(range(8))})
    assert rows_that_may_match(TextMatch("t", ("disk",)), plain) is None  # not dictionary-encoded
    assert rows_that_may_match(Compare("i", "=", 3), plain) is None
    assert rows_that_may_match(TextMatch("absent", ("disk",)), plain) is None
    views = pa.table({"t": pa.chunked_array([pa.DictionaryArray.from_arrays(
        pa.array([0, 1] * 4, pa.int32()), pa.array(["disk full", "ok"], pa.string_view()))])})
    assert rows_that_may_match(TextMatch("t", ("disk",)), views) is None  # a layout entries_holding does not read
    encoded = pa.table({"t": plain.column("t").dictionary_encode(), "i": plain.column("i")})
    both = And((TextMatch("t", ("disk",)), Compare("i", ">", 2)))
    assert rows_that_may_match(both, encoded).tolist() == [True, False] * 4
    either = Or((TextMatch("t", ("disk",)), Compare("i", ">", 2)))
    assert rows_that_may_match(either, encoded) is None
    assert rows_that_may_match(Or((TextMatch("t", ("ok",)), TextMatch("t", ("full",)))), encoded).all()
    assert not np.any(rows_that_may_match(TextMatch("t", ("nope",)), encoded))
