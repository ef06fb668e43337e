"""Compaction and indexing debt on PostgreSQL, exact on a constructed state: what is waiting is what the merge
policy would still merge (not mature, sorted, not before the compaction start, claimed or not), levelled as
`split_level` levels, closed windows not final counted per compaction scope, recent merges and first-merge
delays from the jobs and their inputs (a closed window is final once the policy's final packing has nothing
left to merge); and the sampled history keeps one row per bucket whoever writes it.

Each test runs in a transaction rolled back at its end, in a database no API writes to."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, text

from strata_core.domain.index_uid import split_index_uid
from strata_core.domain.merge_policy import (
    MergePolicyParams,
    SplitCandidate,
    WindowRules,
    level_starts,
    plan_merges,
    split_level,
)
from strata_core.domain.split import CompactionScope
from strata_metastore.compaction_models import CompactionJobInputRow, CompactionJobRow
from strata_metastore.indexing_models import IndexingJobRow
from strata_metastore.job_columns import new_job_values
from strata_metastore.models import IndexRow, SplitRow
from strata_planner.compaction.debt_repository import DebtRepository, DebtSample, LevelDebt
from tests.fixtures.postgres import rolled_back
from tests.helpers import examples

NOW = datetime(2026, 11, 27, 12, 7, 30, 500_000, tzinfo=UTC)
NOW_SECS = int(NOW.timestamp())
INDEX_UID = "debt:01JBZZZZZZZZZZZZZZZZZZZZZZ"
OTHER_UID = "other:01JBZZZZZZZZZZZZZZZZZZZZZZ"
PARAMS = MergePolicyParams(min_level_num_docs=100, merge_factor=3, max_merge_factor=4, maturation_period_secs=3600,
                           target_split_num_rows=1000, target_split_size_bytes=10_000)
START = 900 * 1000
RULES = WindowRules(compaction_start_time=START, late_data_acceptance_secs=600)
OPEN = NOW_SECS - NOW_SECS % 900
CLOSED_A, CLOSED_B, CLOSED_C, CLOSED_D = START + 900, START + 1800, START + 2700, START + 3600
BEFORE = START - 900


def _index(uid: str) -> dict:
    return {"index_uid": uid, "index_id": split_index_uid(uid)[0], "incarnation": split_index_uid(uid)[1], "config": {},
            "doc_mapping_uid": "d", "version": 1, "created_at": NOW, "updated_at": NOW, "deleted_at": None}


def _split(split_id: str, window: int, rows: int, size: int, age_secs: float, *, partition: str = "p",
           sort_schema: str = "a@v1", state: str = "published", merge_ops: int = 0, uid: str = INDEX_UID) -> dict:
    created_at = NOW - timedelta(seconds=age_secs)
    return {"split_id": split_id, "index_uid": uid, "source_id": "s", "partition_id": partition,
            "doc_mapping_uid": "d", "sort_schema": sort_schema, "window_start": window, "window_duration_secs": 900,
            "num_rows": rows, "size_bytes": size, "uri": f"file:///{split_id}", "row_groups": [],
            "num_merge_ops": merge_ops, "generation": merge_ops, "root_split_ids": [], "parent_split_ids": [],
            "state": state, "created_at": created_at, "updated_at": created_at, "published_at": created_at}


def _job(job_id: str, status: str, *, inputs: list[str], rows: int = 1, finished_ago: float | None = None,
         uid: str = INDEX_UID) -> dict:
    finished = None if finished_ago is None else NOW - timedelta(seconds=finished_ago)
    return {**new_job_values(NOW), "job_id": job_id, "index_uid": uid, "source_id": "s", "partition_id": "p",
            "doc_mapping_uid": "d", "sort_schema": "a@v1", "window_duration_secs": 900, "window_start": OPEN,
            "kind": "level", "level": 0, "input_split_ids": inputs, "input_rows": rows, "input_bytes": 1,
            "output_split_ids": [], "output_bytes": None, "status": status, "finished_at": finished}


SPLITS = [
    # The open window: levels 0, 1 (claimed by a live job: still waiting), 2 at its lower boundary, 2.
    _split("01JB0000000000000000000S01", OPEN, 50, 500, 100),
    _split("01JB0000000000000000000S02", OPEN, 150, 1500, 200),
    _split("01JB0000000000000000000S03", OPEN, 300, 3000, 300),
    _split("01JB0000000000000000000S04", OPEN, 899, 100, 50),
    # Not waiting: mature by rows, by bytes, by age (to the second); unsorted; marked for deletion.
    _split("01JB0000000000000000000M01", OPEN, 1000, 100, 10),
    _split("01JB0000000000000000000M02", OPEN, 10, 10_000, 10),
    _split("01JB0000000000000000000M03", OPEN, 10, 100, 3600),
    _split("01JB0000000000000000000U01", OPEN, 10, 100, 10, sort_schema=""),
    _split("01JB0000000000000000000D01", OPEN, 10, 100, 130, state="marked_for_deletion"),
    _split("01JB0000000000000000000D02", OPEN, 10, 100, 500, state="marked_for_deletion", merge_ops=1),
    _split("01JB0000000000000000000D03", OPEN, 10, 100, 600, state="marked_for_deletion"),
    _split("01JB0000000000000000000D04", OPEN, 10, 100, 1300, state="marked_for_deletion"),
    # Closed windows: two splits of one scope (a merge is due), one split (final), two splits of two tenants
    # (CS-1 keeps them apart: final too).
    _split("01JB0000000000000000000A01", CLOSED_A, 20, 200, 1000),
    _split("01JB0000000000000000000A02", CLOSED_A, 30, 300, 900),
    _split("01JB0000000000000000000B01", CLOSED_B, 40, 400, 800),
    _split("01JB0000000000000000000C01", CLOSED_C, 10, 100, 700, partition="p"),
    _split("01JB0000000000000000000C02", CLOSED_C, 10, 100, 700, partition="q"),
    # Two splits of one scope that together exceed the target rows: the final packing never merges them (final).
    _split("01JB0000000000000000000F01", CLOSED_D, 600, 100, 600),
    _split("01JB0000000000000000000F02", CLOSED_D, 600, 100, 600),
    # Before the compaction start (CS-3): never compacted, never debt.
    _split("01JB0000000000000000000E01", BEFORE, 10, 100, 400),
    _split("01JB0000000000000000000E02", BEFORE, 10, 100, 400),
    # Another index's waiting split.
    _split("01JB0000000000000000000X01", OPEN, 10, 100, 1000, uid=OTHER_UID),
]
JOBS = [
    _job("01JBJOB0000000000000000L01", "unassigned", inputs=["01JB0000000000000000000S02"]),
    _job("01JBJOB0000000000000000L02", "in_progress", inputs=[]),
    # Finished 30 s ago (in the last minute): one never-merged input created 130 s ago (delay 100 s) and one
    # merged before (not a first merge).
    _job("01JBJOB0000000000000000F01", "success", rows=500, finished_ago=30,
         inputs=["01JB0000000000000000000D01", "01JB0000000000000000000D02"]),
    # 300 s ago: outside the rate's minute, inside the delays' ten minutes (delay 300 s).
    _job("01JBJOB0000000000000000F02", "success", rows=700, finished_ago=300, inputs=["01JB0000000000000000000D03"]),
    # 700 s ago: outside both.
    _job("01JBJOB0000000000000000F03", "success", rows=900, finished_ago=700, inputs=["01JB0000000000000000000D04"]),
    _job("01JBJOB0000000000000000X01", "success", rows=50, finished_ago=10, inputs=[], uid=OTHER_UID),
]


async def _state(session) -> None:
    await session.execute(insert(IndexRow.__table__), [_index(INDEX_UID), _index(OTHER_UID)])
    await session.execute(insert(SplitRow.__table__), SPLITS)
    await session.execute(insert(CompactionJobRow.__table__), JOBS)
    await session.execute(insert(CompactionJobInputRow.__table__), [
        {"job_id": job["job_id"], "split_id": s, "live": job["status"] in ("unassigned", "in_progress")}
        for job in JOBS for s in job["input_split_ids"]])
    await session.execute(insert(IndexingJobRow.__table__), [{
        **new_job_values(NOW), "job_id": "01JBIDX0000000000000000001", "split_id": "01JB0000000000000000000S01",
        "index_uid": INDEX_UID, "partition_id": "p", "reason": "published", "artifact_count": None,
        "artifact_bytes": None, "skipped": [], "status": "in_progress"}])


def test_compaction_debt_is_exact_on_a_constructed_state(repository_database) -> None:
    async def run():
        async with rolled_back(repository_database) as session:
            await _state(session)
            repo = DebtRepository(session)
            return (await repo.compaction(INDEX_UID, PARAMS, RULES, NOW), await repo.indexing(INDEX_UID, NOW),
                    await repo.windows(INDEX_UID, PARAMS, RULES, NOW,
                                       [(900, w) for w in (OPEN, CLOSED_A, CLOSED_B, CLOSED_C, CLOSED_D,
                                                           BEFORE)]))

    debt, indexing, windows = asyncio.run(run())
    # A final window's splits are owed no merge (B01; C01 and C02 of two scopes; F01 and F02, too large to pair).
    assert debt.levels == {0: LevelDebt(3, 500 + 200 + 300), 1: LevelDebt(1, 1500), 2: LevelDebt(2, 3000 + 100)}
    assert (debt.splits_waiting, debt.bytes_waiting) == (6, 5600)
    assert debt.oldest_waiting_created_at == NOW - timedelta(seconds=1000)
    assert debt.published_splits == 17  # every published split of the index, waiting or not
    assert debt.closed_windows_not_final == 1
    assert debt.oldest_closed_window_not_final_at == CLOSED_A + 900 + 600
    assert (debt.jobs_unassigned, debt.jobs_in_progress) == (1, 1)
    assert (debt.merges_last_minute, debt.rows_merged_last_minute) == (1, 500)
    delays = debt.first_merge_delays
    assert delays.count == 2
    assert (delays.p50, delays.p90, delays.max) == pytest.approx((200.0, 280.0, 300.0))

    assert indexing.files_waiting == 17 and indexing.jobs_in_progress == 1
    assert indexing.oldest_published_at == NOW - timedelta(seconds=3600)

    assert {w: (d.splits_waiting, d.bytes_waiting, d.mergeable) for (_, w), d in windows.items()} == {
        OPEN: (4, 5100, True), CLOSED_A: (2, 500, True)}
    assert windows[(900, CLOSED_A)].oldest_waiting_created_at == NOW - timedelta(seconds=1000)


closed_splits = st.lists(st.tuples(
    st.sampled_from([CLOSED_A, CLOSED_B, CLOSED_C]),
    st.sampled_from(["p", "q"]),  # two tenants: two compaction scopes per window
    st.integers(1, 1100),  # rows, around half the target and the target
    st.integers(1, 11_000),  # bytes, likewise
), max_size=10)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(splits=closed_splits)
def test_closed_windows_not_final_are_those_the_policy_still_merges(repository_database, splits) -> None:
    """Over closed windows, a window counts as not final exactly when `plan_merges` plans a merge in it."""
    rows = [_split(f"01JB{i:022d}", window, n, size, 60, partition=partition)
            for i, (window, partition, n, size) in enumerate(splits)]

    async def run():
        async with rolled_back(repository_database) as session:
            await session.execute(insert(IndexRow.__table__), [_index(INDEX_UID)])
            if rows:
                await session.execute(insert(SplitRow.__table__), rows)
            repo = DebtRepository(session)
            return (await repo.compaction(INDEX_UID, PARAMS, RULES, NOW),
                    await repo.windows(INDEX_UID, PARAMS, RULES, NOW, [(900, w) for w in (CLOSED_A, CLOSED_B,
                                                                                          CLOSED_C)]))

    debt, windows = asyncio.run(run())
    candidates = [SplitCandidate(split_id=r["split_id"], scope=CompactionScope(INDEX_UID, "s", r["partition_id"],
                                                                                "d", "a@v1", 900),
                                 window_start=r["window_start"], num_rows=r["num_rows"], size_bytes=r["size_bytes"],
                                 num_merge_ops=0, created_at_secs=NOW_SECS - 60) for r in rows]
    merged = {op.window_start for op in plan_merges(candidates, PARAMS, RULES, NOW_SECS).operations}
    assert debt.closed_windows_not_final == len(merged)
    assert {w for (_, w), d in windows.items() if d.mergeable} == merged


def test_an_index_without_splits_or_jobs_owes_nothing(repository_database) -> None:
    async def run():
        async with rolled_back(repository_database) as session:
            await session.execute(insert(IndexRow.__table__), [_index(INDEX_UID)])
            repo = DebtRepository(session)
            return await repo.compaction(INDEX_UID, PARAMS, RULES, NOW), await repo.indexing(INDEX_UID, NOW)

    debt, indexing = asyncio.run(run())
    assert debt.levels == {} and debt.splits_waiting == 0 and debt.oldest_waiting_created_at is None
    assert debt.closed_windows_not_final == 0 and debt.oldest_closed_window_not_final_at is None
    assert debt.first_merge_delays.count == 0 and debt.first_merge_delays.p50 is None
    assert (indexing.files_waiting, indexing.oldest_published_at, indexing.jobs_in_progress) == (0, None, 0)


@pytest.mark.parametrize("params", [PARAMS, MergePolicyParams(min_level_num_docs=1000, target_split_num_rows=10**9),
                                    MergePolicyParams(min_level_num_docs=500, target_split_num_rows=400)])
def test_sql_levels_are_split_level(repository_database, params) -> None:
    """At every level boundary (and either side of it), the SQL sum of comparisons is `split_level`."""
    counts = sorted({max(0, b + d) for b in [0, *level_starts(params)] for d in (-1, 0, 1)
                     if b + d < params.target_split_num_rows})
    rules = WindowRules(compaction_start_time=0, late_data_acceptance_secs=600)

    async def run():
        async with rolled_back(repository_database) as session:
            await session.execute(insert(IndexRow.__table__), [_index(INDEX_UID)])
            await session.execute(insert(SplitRow.__table__), [
                _split(f"01JB{i:022d}", OPEN, rows, 1, 10) for i, rows in enumerate(counts)])
            return await DebtRepository(session).compaction(INDEX_UID, params, rules, NOW)

    debt = asyncio.run(run())
    assert {level: d.splits for level, d in debt.levels.items()} == Counter(split_level(c, params) for c in counts)


def test_the_debt_reads_use_the_indexes(repository_database) -> None:
    """On a few thousand splits (most of them mature by age), the waiting splits are found through the partial
    index on (index_uid, created_at), and recent merges through the one on (index_uid, finished_at)."""
    async def run():
        async with rolled_back(repository_database) as session:
            await session.execute(insert(IndexRow.__table__), [_index(INDEX_UID), _index(OTHER_UID)])
            await session.execute(insert(SplitRow.__table__), [
                _split(f"01JB{i:022d}", OPEN - 900 * (i % 50), 10, 100, 7200 + i if i % 100 else 10,
                       uid=INDEX_UID if i % 2 else OTHER_UID) for i in range(6000)])
            await session.execute(insert(CompactionJobRow.__table__), [
                _job(f"01JBJOB{i:019d}", "success", inputs=[], finished_ago=3600 + i) for i in range(3000)])
            await session.execute(text("ANALYZE splits"))
            await session.execute(text("ANALYZE compaction_jobs"))
            plans = []
            real = session.execute

            async def explained(statement, *args, **kwargs):
                if not isinstance(statement, str) and getattr(statement, "is_select", False):
                    compiled = statement.compile(dialect=session.bind.dialect,
                                                 compile_kwargs={"literal_binds": True})
                    plans.append("\n".join(r[0] for r in await real(text(f"EXPLAIN {compiled}"))))
                return await real(statement, *args, **kwargs)

            session.execute = explained
            await DebtRepository(session).compaction(INDEX_UID, PARAMS, RULES, NOW)
            return plans

    plans = asyncio.run(run())
    # The two reads of waiting splits (by level, closed windows by scope) come first.
    assert all("ix_splits_published_created" in p for p in plans[:2]), plans[:2]
    assert any("ix_compaction_jobs_index_finished" in p for p in plans), plans


def test_samples_keep_one_row_per_bucket_and_are_trimmed(repository_database) -> None:
    bucket = NOW.replace(microsecond=0, second=30)

    def sample(at: datetime, splits: int) -> DebtSample:
        return DebtSample(sampled_at=at, splits_waiting=splits, bytes_waiting=splits * 10,
                          closed_windows_not_final=1, oldest_waiting_split_age_secs=None, indexing_files_waiting=2)

    async def run():
        async with rolled_back(repository_database) as session:
            await session.execute(insert(IndexRow.__table__), [_index(INDEX_UID)])
            repo = DebtRepository(session)
            kept = [await repo.record_sample(INDEX_UID, sample(bucket - timedelta(hours=2), 1)),
                    await repo.record_sample(INDEX_UID, sample(bucket - timedelta(seconds=10), 2)),
                    await repo.record_sample(INDEX_UID, sample(bucket, 3)),
                    # A second replica in the same bucket: nothing written.
                    await repo.record_sample(INDEX_UID, sample(bucket, 4))]
            trimmed = await repo.trim_samples(NOW - timedelta(hours=1))
            return kept, trimmed, await repo.samples(INDEX_UID, NOW - timedelta(minutes=15))

    kept, trimmed, samples = asyncio.run(run())
    assert kept == [True, True, True, False] and trimmed == 1
    assert [(s.sampled_at, s.splits_waiting) for s in samples] == [(bucket - timedelta(seconds=10), 2), (bucket, 3)]
