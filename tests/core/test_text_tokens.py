"""The token contract's one evaluator over Arrow (`strata_core.query.text_tokens.entries_holding`), which the
local scan's prefilter and the deletes' row filter both use: exact on every value, sliced arrays, 64-bit offsets,
NULLs, non-ASCII text whose Unicode case mapping is ASCII, occurrences that overlap or run across values."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.artifacts import tokenize
from strata_core.query.predicate import TextMatch
from strata_core.query.row_filter import matching_rows
from strata_core.query.text_tokens import entries_holding
from tests.helpers import examples

# Characters whose Unicode case mapping is ASCII (KELVIN SIGN, LONG S, dotless and dotted I), other non-ASCII,
# and token boundaries of every kind.
TEXT = st.text(alphabet="abAB01 -_.\n\u212a\u017f\u0131\u0130éß\U0001f600", max_size=12)


@settings(max_examples=examples(500))
@given(st.lists(st.one_of(st.none(), TEXT), max_size=12), st.data())
def test_each_value_holds_the_terms_exactly_as_the_token_contract_says(values, data):
    tokens_seen = sorted({t for v in values if v is not None for t in tokenize(v)})
    terms = tuple(data.draw(st.lists(st.sampled_from([*tokens_seen, "ab", "b", "a1", "k", "s", "i"]), min_size=1,
                                     max_size=3)))
    array = pa.array(values, pa.string())
    start = data.draw(st.integers(0, len(values)))
    stop = data.draw(st.integers(start, len(values)))
    for sliced, expected in ((array, values), (array.slice(start, stop - start), values[start:stop])):
        want = [v is not None and set(terms) <= set(tokenize(v)) for v in expected]
        assert entries_holding(sliced, terms).tolist() == want, (expected, terms)


def test_a_token_is_found_where_an_occurrence_in_the_value_before_overlaps_it():
    # The values' bytes are searched as one run: "...ab" + "abab" holds "abab" starting inside the first value,
    # overlapping the one that starts the second.
    assert entries_holding(pa.array(["xab", "abab", "ab-abab"]), ("abab",)).tolist() == [False, True, True]
    assert entries_holding(pa.array(["disk", "", "full", "FULL disk", "diskfull"]), ("disk",)).tolist() == [
        True, False, False, True, False]
    # ... and an occurrence that runs on into the next value is no token of either.
    assert entries_holding(pa.array(["a di", "sk b", "disk"]), ("disk",)).tolist() == [False, False, True]
    # 64-bit offsets read the same.
    assert entries_holding(pa.array(["a di", None, "x:DISK"], pa.large_string()), ("disk",)).tolist() == [
        False, False, True]


def test_a_term_that_is_not_a_token_is_no_values_token():
    values = pa.array(["Disk full", "disk", "ünï"])
    assert entries_holding(values, ("Disk",)).tolist() == [False, False, False]
    assert entries_holding(values, ("ünï",)).tolist() == [False, False, False]
    assert entries_holding(values, ("",)).tolist() == [False, False, False]


def test_the_deletes_row_filter_decides_text_match_on_every_string_layout():
    for layout in (pa.string(), pa.large_string(), pa.string_view()):
        table = pa.table({"m": pa.array(["Disk FULL", None, "diskfull", "a-disk-b"], layout)})
        assert matching_rows(TextMatch.of("m", "disk"), table).tolist() == [True, False, False, True], layout
        encoded = pa.table({"m": table.column("m").cast(pa.string()).dictionary_encode()})
        assert matching_rows(TextMatch.of("m", "DISK full"), encoded).tolist() == [True, False, False, False]
