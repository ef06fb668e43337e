"""`SplitRepository.published_candidates` (what a query's first two stages read, in one statement): the counts
of every candidate, and as full metadata only the candidates split statistics cannot rule out, which agree with
what `get_many` says of them."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState
from strata_core.query.predicate import TRUE, Compare, to_nnf
from strata_core.query.time_range import Interval, TimeRanges
from strata_metastore.repositories import SplitRepository
from tests.fixtures.postgres import rolled_back

WINDOW = 900
EVERYTHING = TimeRanges.everything()


def _split(n: int, *, partition: str, window: int, state: SplitState, spans: int, null_times: bool = False
           ) -> SplitMetadata:
    start = None if null_times else window + n
    return SplitMetadata(
        split_id=f"s{n:03d}", index_uid="i:1", source_id="src", partition_id=partition, doc_mapping_uid="d",
        sort_schema="", window_start=window, window_duration_secs=WINDOW, time_range_start=start,
        time_range_end=None if null_times else start + 10, num_rows=100 * (n + 1), uri=f"file:///s{n}",
        size_bytes=10_000 + n,
        row_groups=[RowGroupSpan(i * 10, 10, 4 + i * 100, 90 + n) for i in range(spans)],
        column_stats={
            "host": ColumnStats("host", "string", f"h{n:02d}", f"h{n + 5:02d}", 0),
            "value": ColumnStats("value", "f64", -1.5 * n, 2.5 * n, n),
            "count": ColumnStats("count", "u64", 2**63 + n, 2**64 - 1, 0),
        },
        state=state)


async def _check(url: str) -> None:
    async with rolled_back(url) as session:
        await session.execute(text(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ('i:1', 'i', 'x', '{}', 'd', 1)"))
        splits = [
            _split(1, partition="a", window=WINDOW, state=SplitState.PUBLISHED, spans=3),
            _split(2, partition="b", window=WINDOW, state=SplitState.PUBLISHED, spans=1),
            # A file without spans counts as one unit of its whole size.
            _split(3, partition="a", window=2 * WINDOW, state=SplitState.PUBLISHED, spans=0),
            _split(4, partition="a", window=2 * WINDOW, state=SplitState.STAGED, spans=2),
            _split(5, partition="a", window=3 * WINDOW, state=SplitState.PUBLISHED, spans=2),
            _split(6, partition="a", window=0, state=SplitState.PUBLISHED, spans=1, null_times=True),
        ]
        await SplitRepository(session).insert(splits)
        by_id = {s.split_id: s for s in splits}
        repo = SplitRepository(session)

        async def candidates(partition=None, gte=None, lte=None, zero=False, ranges=EVERYTHING, predicate=TRUE,
                             limit=100, prune_columns=None):
            return await repo.published_candidates("i:1", partition, gte, lte, include_window_zero=zero,
                                                   ranges=ranges, predicate=to_nnf(predicate),
                                                   split_columns={"partition_id": "partition_id"},
                                                   stats_columns={"host", "count"}, limit=limit,
                                                   prune_columns=prune_columns)

        found = await candidates(gte=WINDOW, lte=2 * WINDOW)
        assert [s.split_id for s in found.splits] == ["s001", "s002", "s003"]  # published, in range, in order
        full = await repo.get_many([s.split_id for s in found.splits])
        for split in found.splits:
            expected = full[split.split_id]
            assert split.column_stats == {k: v for k, v in expected.column_stats.items() if k in {"host", "count"}}
            assert split.summary() == type(split.summary())(**{
                **{f: getattr(expected.summary(), f) for f in expected.summary().__slots__},
                "column_stats": split.column_stats})
        summaries = [by_id[i].summary() for i in ("s001", "s002", "s003")]
        assert (found.files, found.row_groups) == (3, 4)
        assert found.size_bytes == sum(s.size_bytes for s in summaries)
        assert found.row_group_bytes == sum(s.row_group_bytes for s in summaries)
        assert summaries[2].row_group_bytes == summaries[2].size_bytes
        assert (found.min_time_range_start, found.null_time_range_starts, found.truncated) == (WINDOW + 1, 0, False)

        # The time range narrows what is counted, not only what comes back; the windows read stay counted as before.
        narrow = await candidates(gte=WINDOW, lte=2 * WINDOW, ranges=TimeRanges.of([Interval(WINDOW + 12, None)]))
        assert [s.split_id for s in narrow.splits] == ["s002", "s003"]
        assert (narrow.files, narrow.row_groups) == (2, 1)

        # Split statistics and the split's own partition rule out splits inside PostgreSQL; the counts stay.
        pruned = await candidates(gte=WINDOW, lte=2 * WINDOW, predicate=Compare("host", "=", "h07"))
        assert [s.split_id for s in pruned.splits] == ["s002", "s003"] and pruned.files == 3
        # A column left out of the SQL's pruning only keeps more; its statistics still come back.
        unpruned = await candidates(gte=WINDOW, lte=2 * WINDOW, predicate=Compare("host", "=", "h07"),
                                    prune_columns={"count"})
        assert [s.split_id for s in unpruned.splits] == ["s001", "s002", "s003"]
        assert all("host" in s.column_stats for s in unpruned.splits)
        tenant_b = await candidates(gte=WINDOW, lte=2 * WINDOW, predicate=Compare("partition_id", "=", "b"))
        assert [s.split_id for s in tenant_b.splits] == ["s002"]

        tenant = await candidates(partition="a", zero=True, ranges=TimeRanges.everything())
        assert [s.split_id for s in tenant.splits] == ["s006", "s001", "s003", "s005"]
        assert tenant.splits[0].time_range_start is None and tenant.null_time_range_starts == 1
        assert tenant.files == 4
        # Null timestamps only count when the range allows them.
        no_nulls = await candidates(partition="a", zero=True, ranges=TimeRanges.of([Interval(None, None)]))
        assert [s.split_id for s in no_nulls.splits] == ["s001", "s003", "s005"]

        limited = await candidates(zero=True, limit=2)
        assert [s.split_id for s in limited.splits] == ["s006", "s001"] and limited.truncated
        assert limited.files == 5

        nothing = await candidates(gte=10 * WINDOW)
        assert (nothing.files, nothing.row_groups, nothing.size_bytes, nothing.splits) == (0, 0, 0, [])


def test_candidates_are_counted_in_full_and_pruned_in_postgres(repository_database):
    asyncio.run(_check(repository_database))
