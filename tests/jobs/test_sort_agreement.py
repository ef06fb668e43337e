"""Ingestion and the merge order rows the same way (docs/architecture.md, "Sort schema": one comparator). Both
go through strata_core.domain.sort_key, but each builds the key columns its own way (ingestion from an Arrow
table, the merge from its inputs' Parquet pages), so the same rows, ingested as one batch or merged from unsorted
pieces of it, must come out in exactly the same (stable) order, and that order must be the reference
comparator's, NaN, -0.0 and nulls included."""

from __future__ import annotations

import functools
import math

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata_core.domain.sort_key import sort_indices
from strata_core.domain.sort_schema import SortColumn, SortSchema, compare_rows
from strata_jobs.merge import run_merge
from tests.helpers import examples
from tests.jobs.test_merge import WINDOW, make_spec, output_tables, write_split

COLUMNS = pa.schema([("s", pa.string()), ("i", pa.int64()), ("f", pa.float64()), ("b", pa.bool_()),
                     ("u", pa.uint64()), ("ts", pa.int64())])
VALUES = {
    "s": st.sampled_from(["", "a", "b", "é", "zz"]),
    "i": st.one_of(st.integers(-3, 3), st.integers(-(2**63), 2**63 - 1)),
    "f": st.one_of(st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf]), st.floats(-5, 5)),
    "b": st.booleans(),
    "u": st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1)),
    "ts": st.integers(WINDOW, WINDOW + 899),
}


@st.composite
def case(draw):
    names = draw(st.lists(st.sampled_from(COLUMNS.names), min_size=1, max_size=4, unique=True))
    schema = SortSchema(tuple(SortColumn(n, draw(st.booleans())) for n in names))
    rows = draw(st.lists(st.fixed_dictionaries({n: st.one_of(st.none(), v) for n, v in VALUES.items()}),
                         min_size=1, max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    return schema, rows, cuts


def _comparable(rows: list[dict]) -> list[tuple]:
    # NaN != NaN: compare rows with NaN spelled out.
    return [tuple("NaN" if isinstance(r[n], float) and r[n] != r[n] else r[n] for n in COLUMNS.names) for r in rows]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case())
def test_mc3_ingestion_and_merge_give_the_same_order(tmp_path_factory, drawn):
    schema, rows, cuts = drawn
    base = tmp_path_factory.mktemp("agree")
    table = pa.Table.from_pylist(rows, schema=COLUMNS)
    ingested = table.take(sort_indices(table, schema)).to_pylist()

    bounds = [0, *cuts, len(rows)]
    pieces = [(begin, end) for begin, end in zip(bounds, bounds[1:], strict=False) if end > begin]
    inputs = [write_split(base / "in", f"p{n}", table.slice(begin, end - begin))
              for n, (begin, end) in enumerate(pieces)]
    merged = [row for t in output_tables(run_merge(make_spec(inputs, base / "out", str(schema))))
              for row in t.to_pylist()]

    descending = [c.descending for c in schema.columns]
    key = functools.cmp_to_key(lambda a, b: compare_rows(tuple(a[c.name] for c in schema.columns),
                                                         tuple(b[c.name] for c in schema.columns), descending))
    expected = sorted(rows, key=key)  # sorted() is stable, like both orders
    assert _comparable(ingested) == _comparable(expected)
    assert _comparable(merged) == _comparable(expected)
