"""`SplitRepository.insert` writes each table's rows with one binary COPY (`metastore.column_arrays`): what it
writes reads back exactly, for every kind of column it converts on the way (JSONB, text arrays, enums, NULLs, u64
beyond BIGINT), and publishing (`publish_splits`, the use case around it) flags each window once and enqueues one
indexing job per published file, while staging does neither."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from strata_core.domain.column_stats import ColumnStats
from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState
from strata_metastore.publish_splits import publish_splits, publish_staged, stage_splits
from strata_metastore.repositories import SplitRepository
from tests.fixtures.postgres import rolled_back

WINDOW = 1_795_000_500


def _split(n: int, state: SplitState, **changes: object) -> SplitMetadata:
    split_id = f"01J{n:023d}"
    split = SplitMetadata(
        split_id=split_id, index_uid="ins:1", source_id="src", partition_id=f"p{n % 2}", doc_mapping_uid="d",
        sort_schema="host,timestamp_secs@v1", window_start=WINDOW + 900 * (n % 2), window_duration_secs=900,
        time_range_start=WINDOW + 900 * (n % 2), time_range_end=WINDOW + 900 * (n % 2) + 10, num_rows=10 + n,
        uri=f"file:///objects/{split_id}.parquet", size_bytes=1_000 + n,
        row_groups=[RowGroupSpan(0, 6, 4, 500), RowGroupSpan(6, 4 + n, 504, 400)],
        column_stats={
            "host": ColumnStats("host", "string", "a'\"\\{,}", "zz\u00e9", 0, "^(a|z)"),
            "count": ColumnStats("count", "i64", -(2**63), 2**63 - 1, 1),
            "bytes": ColumnStats("bytes", "u64", 0, 2**64 - 1, 0),
            "ratio": ColumnStats("ratio", "f64", -0.5, 1e300, 2),
            "empty": ColumnStats("empty", "null", None, None, 10 + n),
        },
        num_merge_ops=n, generation=n % 3, root_split_ids=[split_id, "01J" + "9" * 23, 'odd"id,{x}'],
        parent_split_ids=[] if n % 2 else ["01J" + "8" * 23], state=state)
    for name, value in changes.items():
        setattr(split, name, value)
    return split


async def _insert_and_read(url: str) -> None:
    async with rolled_back(url) as db:
        await db.execute(text(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ('ins:1', 'ins', 'x', '{}', 'd', 1)"))
        splits = [_split(n, SplitState.PUBLISHED) for n in range(4)]
        splits.append(_split(4, SplitState.STAGED, time_range_start=None, time_range_end=None, row_groups=[],
                             column_stats={}, sort_schema=""))
        repo = SplitRepository(db)
        await publish_splits(db, splits[:4])
        await stage_splits(db, splits[4:])

        read = await repo.get_many([s.split_id for s in splits])
        assert [read[s.split_id] for s in splits] == splits
        published_at = dict((await db.execute(text("SELECT split_id, published_at IS NOT NULL FROM splits"))).all())
        assert published_at == {s.split_id: s.state == SplitState.PUBLISHED for s in splits}

        windows = (await db.execute(text(
            "SELECT window_duration_secs, window_start, dirty, final_planned FROM compaction_windows "
            "WHERE index_uid = 'ins:1' ORDER BY window_start"))).all()
        assert [tuple(w) for w in windows] == [(900, WINDOW, True, False), (900, WINDOW + 900, True, False)]
        jobs = (await db.execute(text(
            "SELECT split_id, partition_id, reason, status::text FROM indexing_jobs ORDER BY split_id"))).all()
        assert [tuple(j) for j in jobs] == [(s.split_id, s.partition_id, "published", "unassigned")
                                            for s in splits[:4]]


def test_inserted_splits_read_back_exactly(repository_database):
    asyncio.run(_insert_and_read(repository_database))


async def _publish_staged(url: str) -> None:
    async with rolled_back(url) as db:
        await db.execute(text(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ('ins:1', 'ins', 'x', '{}', 'd', 1)"))
        # A window already planned and final: a split landing in it makes it dirty again, its final merge to plan.
        await db.execute(text(
            "INSERT INTO compaction_windows (index_uid, window_duration_secs, window_start, dirty, final_planned) "
            f"VALUES ('ins:1', 900, {WINDOW}, false, true)"))
        staged = [_split(n, SplitState.STAGED) for n in range(4)]
        await stage_splits(db, staged)
        assert (await db.execute(text("SELECT count(*) FROM indexing_jobs"))).scalar_one() == 0
        # One of them was deleted meanwhile (an index delete racing the upload): it is neither published nor queued.
        await db.execute(text(f"DELETE FROM splits WHERE split_id = '{staged[3].split_id}'"))

        assert await publish_staged(db, [s.split_id for s in staged]) == 3
        states = dict((await db.execute(text(
            "SELECT split_id, state::text || (published_at = updated_at)::text FROM splits"))).all())
        assert states == {s.split_id: "publishedtrue" for s in staged[:3]}
        windows = (await db.execute(text(
            "SELECT window_start, dirty, final_planned FROM compaction_windows WHERE index_uid = 'ins:1' "
            "ORDER BY window_start"))).all()
        assert [tuple(w) for w in windows] == [(WINDOW, True, False), (WINDOW + 900, True, False)]
        jobs = (await db.execute(text(
            "SELECT split_id, index_uid, partition_id, reason, status::text, failures, failure_log::text, "
            "skipped::text, created_at = updated_at FROM indexing_jobs ORDER BY split_id"))).all()
        assert [tuple(j) for j in jobs] == [(s.split_id, "ins:1", s.partition_id, "published", "unassigned", 0,
                                             "[]", "[]", True) for s in staged[:3]]
        assert len({j for (j,) in (await db.execute(text("SELECT job_id FROM indexing_jobs"))).all()}) == 3
        # Nothing staged is left: publishing again moves nothing and queues nothing more.
        assert await publish_staged(db, [s.split_id for s in staged]) == 0
        assert (await db.execute(text("SELECT count(*) FROM indexing_jobs"))).scalar_one() == 3


def test_publishing_staged_splits_flags_their_windows_and_queues_one_build_each(repository_database):
    asyncio.run(_publish_staged(repository_database))


async def _conflicts(url: str) -> None:
    async with rolled_back(url) as db:
        await db.execute(text(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ('ins:1', 'ins', 'x', '{}', 'd', 1)"))
        first = _split(0, SplitState.PUBLISHED)
        await publish_splits(db, [first])
        # The same split id, and another split naming the same file: refused as an INSERT's unique violation is
        # (what registration answers 409 for a concurrent registration), nothing of the batch written.
        for batch in ([_split(1, SplitState.PUBLISHED), _split(0, SplitState.PUBLISHED)],
                      [_split(2, SplitState.PUBLISHED, uri=first.uri)]):
            savepoint = await db.begin_nested()
            with pytest.raises(IntegrityError):
                await SplitRepository(db).insert(batch)
            await savepoint.rollback()
        ids = (await db.execute(text("SELECT split_id FROM splits"))).scalars().all()
        assert ids == [first.split_id]


def test_a_conflicting_insert_raises_integrity_error_and_writes_nothing(repository_database):
    asyncio.run(_conflicts(repository_database))
