"""`SplitRepository.published_summaries` (what a query's first stages read of every candidate) says the same as
the full metadata's `summary()`: the counts of stage 1 and of the stages after it must agree."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from strata_shared.domain.column_stats import ColumnStats
from strata_shared.domain.split import RowGroupSpan, SplitMetadata, SplitState
from strata_shared.metastore.repositories import SplitRepository
from tests.fixtures.postgres import rolled_back

WINDOW = 900


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
        await SplitRepository(session).insert([
            _split(1, partition="a", window=WINDOW, state=SplitState.PUBLISHED, spans=3),
            _split(2, partition="b", window=WINDOW, state=SplitState.PUBLISHED, spans=1),
            # A file without spans counts as one unit of its whole size.
            _split(3, partition="a", window=2 * WINDOW, state=SplitState.PUBLISHED, spans=0),
            _split(4, partition="a", window=2 * WINDOW, state=SplitState.STAGED, spans=2),
            _split(5, partition="a", window=3 * WINDOW, state=SplitState.PUBLISHED, spans=2),
            _split(6, partition="a", window=0, state=SplitState.PUBLISHED, spans=1, null_times=True),
        ])
        repo = SplitRepository(session)
        found = await repo.published_summaries("i:1", None, WINDOW, 2 * WINDOW, include_window_zero=False,
                                               limit=100, stats_columns={"host", "count"})
        full = await repo.get_many([s.split_id for s in found])
        assert [s.split_id for s in found] == ["s001", "s002", "s003"]  # published, in range, in order
        for summary in found:
            expected = full[summary.split_id].summary()
            assert summary.column_stats == {k: v for k, v in expected.column_stats.items()
                                            if k in {"host", "count"}}
            assert summary == type(summary)(**{**{f: getattr(expected, f) for f in expected.__slots__},
                                              "column_stats": summary.column_stats})
        assert found[2].num_row_groups == 0 and found[2].row_group_bytes == found[2].size_bytes

        tenant = await repo.published_summaries("i:1", "a", None, None, include_window_zero=True, limit=100,
                                                stats_columns=set())
        assert [s.split_id for s in tenant] == ["s006", "s001", "s003", "s005"]
        assert all(s.column_stats == {} for s in tenant)
        assert tenant[0].time_range_start is None
        assert [s.split_id for s in await repo.published_summaries(
            "i:1", None, None, None, include_window_zero=False, limit=2, stats_columns={"host"})] == [
            "s006", "s001"]


def test_summaries_agree_with_the_full_metadata(repository_database):
    asyncio.run(_check(repository_database))
