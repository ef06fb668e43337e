"""Split pruning inside PostgreSQL (`published_candidates`, `split_pruning.may_match_sql`) against the Python
reference (`split_may_match`, the time range's `overlaps`), on real PostgreSQL, for random statistics (every
value kind, nulls, all-null and empty splits, a column whose kind differs between splits, mixed-type literals) and
random predicates:

- the SQL never drops a split the reference keeps (no false negative), so pruning never loses a matching row;
- the counts of the time-range stage are exactly the reference's;
- the reference run on what the SQL kept (as the planner does) gives exactly the reference's plan.

And on the predicates queries are made of (=, IN, ranges, LIKE prefixes over strings and numbers), the SQL alone
already prunes exactly like the reference: the work is done in PostgreSQL, not left to Python.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.split import SplitMetadata, SplitState
from strata_core.query.predicate import And, Compare, InList, IsNull, Like, Or, Predicate, to_nnf
from strata_core.query.pruning import split_may_match
from strata_core.query.time_range import Interval, TimeRanges
from strata_metastore.repositories import SplitRepository
from tests.helpers import examples
from tests.query_logic.strategies import PREDICATES

WINDOW = 3600
PARTITIONS = ("p1", "p2", "é")
CONSTANTS = {"partition_id": lambda s: s.partition_id}
STATS_COLUMNS = {"i", "f", "s", "t", "ts"}
KIND_VALUES = {
    "i64": st.integers(-5, 5),
    "u64": st.sampled_from([0, 1, 3, 2**53 + 1, 2**63 + 1, 2**64 - 1]),
    # NaN is never a bound (writers leave it out of min/max); infinities and -0.0 are.
    "f64": st.sampled_from([-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, math.inf, -math.inf]),
    "string": st.text(alphabet="ab%_\\é", max_size=3),
}
# Each column mostly has the kind of its values in the predicates, sometimes another (literals of another type).
USUAL_KIND = {"i": "i64", "f": "f64", "s": "string", "t": "string", "ts": "i64"}


@st.composite
def column_stats(draw, name: str, num_rows: int) -> ColumnStats | None:
    kind = draw(st.sampled_from([USUAL_KIND[name]] * 3 + ["i64", "u64", "f64", "string", "null", "absent"]))
    if kind == "absent":
        return None
    null_count = draw(st.integers(0, num_rows))
    if kind == "null":
        return ColumnStats(name, "null", None, None, null_count)
    if draw(st.integers(0, 9)) == 0:
        return ColumnStats(name, kind, None, None, null_count)
    low, high = sorted(draw(st.lists(KIND_VALUES[kind], min_size=2, max_size=2)))
    return ColumnStats(name, kind, low, high, null_count)


@st.composite
def splits(draw) -> list[SplitMetadata]:
    out = []
    for n in range(draw(st.integers(1, 8))):
        num_rows = draw(st.sampled_from([0, 1, 3, 5]))
        stats = {name: s for name in sorted(STATS_COLUMNS) if (s := draw(column_stats(name, num_rows))) is not None}
        if draw(st.integers(0, 4)) == 0:
            start = end = None
        else:
            start, end = sorted(draw(st.lists(st.integers(0, 40), min_size=2, max_size=2)))
        out.append(SplitMetadata(
            split_id=f"s{n:02d}", index_uid="i:1", source_id="src", partition_id=draw(st.sampled_from(PARTITIONS)),
            doc_mapping_uid="d", sort_schema="", window_start=0, window_duration_secs=WINDOW,
            time_range_start=start, time_range_end=end, num_rows=num_rows, uri=f"file:///s{n}", size_bytes=100 + n,
            row_groups=[], column_stats=stats, state=SplitState.PUBLISHED))
    return out


BOUND = st.one_of(st.none(), st.integers(-5, 45))
TIME_RANGES = st.builds(lambda intervals, nulls: TimeRanges.of(intervals, nulls),
                        st.lists(st.builds(Interval, BOUND, BOUND), max_size=3), st.booleans())
PARTITION_ATOMS = st.one_of(
    st.builds(Compare, st.just("partition_id"), st.sampled_from(["=", "!=", "<", ">="]),
              st.sampled_from([*PARTITIONS, "p", 3])),
    st.builds(InList, st.just("partition_id"), st.lists(st.sampled_from(PARTITIONS), max_size=2).map(tuple),
              st.booleans()),
    st.builds(Like, st.just("partition_id"), st.sampled_from(["p%", "p1", "%1", "é%"]), st.booleans()),
    st.builds(IsNull, st.just("partition_id"), st.booleans()),
)
# Literals of a type other than the column's (an integer against strings, a string against numbers).
MIXED_ATOMS = st.one_of(
    st.builds(Compare, st.sampled_from(["i", "s", "f"]), st.sampled_from(["=", "<", ">"]),
              st.sampled_from([1, "a", 2.5, True, 2**53 + 1, float("nan"), math.inf])),
    st.builds(InList, st.sampled_from(["i", "s"]), st.lists(st.sampled_from([1, "a", None]), min_size=1,
                                                          max_size=3).map(tuple), st.booleans()),
)
ANY_PREDICATE = st.one_of(
    PREDICATES, PARTITION_ATOMS, MIXED_ATOMS,
    st.lists(st.one_of(PREDICATES, PARTITION_ATOMS, MIXED_ATOMS), min_size=2, max_size=3).map(
        lambda c: And(tuple(c))),
    st.lists(st.one_of(PREDICATES, PARTITION_ATOMS, MIXED_ATOMS), min_size=2, max_size=3).map(
        lambda c: Or(tuple(c))))


class Database:
    """One connection on one event loop for every example: each runs in a transaction rolled back at its end."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.engine = create_async_engine(url)
        self.connection = self.loop.run_until_complete(self.engine.connect())

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    async def candidates(self, population: list[SplitMetadata], pred: Predicate, ranges: TimeRanges):
        outer = await self.connection.begin()
        session = AsyncSession(bind=self.connection, join_transaction_mode="create_savepoint")
        try:
            await session.execute(text(
                "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
                "VALUES ('i:1', 'i', 'x', '{}', 'd', 1)"))
            repo = SplitRepository(session)
            await repo.insert(population)
            return await repo.published_candidates(
                "i:1", None, None, None, include_window_zero=True, ranges=ranges, predicate=pred,
                split_columns={"partition_id": "partition_id"}, stats_columns=STATS_COLUMNS, limit=100)
        finally:
            await session.close()
            await outer.rollback()

    def close(self) -> None:
        self.run(self.connection.close())
        self.run(self.engine.dispose())
        self.loop.close()


@pytest.fixture(scope="module")
def database(repository_database):
    db = Database(repository_database)
    try:
        yield db
    finally:
        db.close()


def _reference(population: list[SplitMetadata], pred: Predicate, ranges: TimeRanges):
    in_range = [s for s in population
                if (s.time_range_start is None and ranges.includes_null)
                or (s.time_range_start is not None and ranges.overlaps(s.time_range_start, s.time_range_end))]
    return in_range, [s.split_id for s in in_range if split_may_match(pred, s.summary(), CONSTANTS)]


@settings(max_examples=examples(400), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(population=splits(), pred=ANY_PREDICATE, ranges=TIME_RANGES)
def test_sql_pruning_never_drops_a_split_the_reference_keeps(database, population, pred, ranges):
    nnf = to_nnf(pred)
    found = database.run(database.candidates(population, nnf, ranges))
    in_range, kept = _reference(population, nnf, ranges)
    sql_kept = [s.split_id for s in found.splits]
    assert set(kept) <= set(sql_kept), (kept, sql_kept)
    assert found.files == len(in_range)
    assert found.size_bytes == sum(s.size_bytes for s in in_range)
    assert found.null_time_range_starts == sum(s.time_range_start is None for s in in_range)
    # What the planner does: the reference over the SQL's survivors, with the statistics read back.
    assert [s.split_id for s in found.splits if split_may_match(nnf, s.summary(), CONSTANTS)] == kept
    assert {s.split_id: s.column_stats for s in found.splits} == {
        s.split_id: s.column_stats for s in population if s.split_id in set(sql_kept)}


QUERY_ATOMS = st.one_of(
    st.builds(Compare, st.just("s"), st.sampled_from(["=", "<", "<=", ">", ">=", "!="]), KIND_VALUES["string"]),
    st.builds(Compare, st.just("i"), st.sampled_from(["=", "<", "<=", ">", ">=", "!="]), st.integers(-6, 6)),
    st.builds(Compare, st.just("f"), st.sampled_from(["=", "<", "<="]), KIND_VALUES["f64"]),
    st.builds(InList, st.sampled_from(["s"]), st.lists(KIND_VALUES["string"], min_size=1, max_size=3).map(tuple)),
    st.builds(InList, st.just("i"), st.lists(st.integers(-6, 6), min_size=1, max_size=3).map(tuple)),
    st.builds(Like, st.just("s"), st.sampled_from(["a%", "é%", "b", "ab%"]), st.booleans()),
    st.builds(Compare, st.just("partition_id"), st.just("="), st.sampled_from(PARTITIONS)),
    st.builds(IsNull, st.sampled_from(["i", "s"]), st.booleans()),
)


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(population=splits(), atoms=st.lists(QUERY_ATOMS, min_size=1, max_size=3), ranges=TIME_RANGES)
def test_sql_prunes_query_predicates_exactly_like_the_reference(database, population, atoms, ranges):
    """Statistics of the columns' usual kinds: on them the SQL is not merely conservative, it is the rule."""
    population = [replace(s, column_stats={name: stats for name, stats in s.column_stats.items()
                                           if stats.value_type in (USUAL_KIND[name], "null")}) for s in population]
    pred = to_nnf(And(tuple(atoms)))
    found = database.run(database.candidates(population, pred, ranges))
    assert [s.split_id for s in found.splits] == _reference(population, pred, ranges)[1]
