"""The planner's SQL says what the pure rules say, checked on PostgreSQL over random data at the boundaries:

- the splits a pass loads are exactly those `merge_policy.is_mature` calls not mature (to the second, however
  the creation time's fraction falls), and the mature ones it only counts are exactly those the policy would
  skip as mature;
- the heads a scheduler's pass loads (the smallest splits of each window and level its first merges can take) are
  exactly `merge_policy.group_heads` of every split, across levels, closing windows, maturity, claims and ties;
- the windows an incremental pass looks at are the changed ones and those `windows.is_window_closed` calls
  closed and not yet final-planned, never one before the compaction start (CS-3);
- a lease expires at its deadline, not a microsecond before, and counts as a failure.

Each example runs in a transaction rolled back at its end, in a database no API writes to.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert

from strata_core.domain.index_uid import split_index_uid
from strata_core.domain.job_statuses import JobStatus
from strata_core.domain.merge_policy import (
    MergePolicyParams,
    SkipReason,
    SplitCandidate,
    WindowRules,
    before_compaction_start,
    group_heads,
    is_mature,
    plan_merges,
)
from strata_core.domain.split import CompactionScope
from strata_core.domain.windows import is_window_closed
from strata_metastore.compaction_models import CompactionJobInputRow, CompactionJobRow, CompactionWindowRow
from strata_metastore.job_columns import new_job_values
from strata_metastore.lease_queue import LeaseQueue
from strata_metastore.models import IndexRow, SplitRow
from strata_metastore.window_repository import CompactionWindowRepository
from tests.fixtures.postgres import rolled_back
from tests.helpers import examples

NOW = datetime(2026, 11, 25, 12, 0, 0, 250_000, tzinfo=UTC)
NOW_SECS = int(NOW.timestamp())
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
INDEX_UID = "rules:01JBZZZZZZZZZZZZZZZZZZZZZZ"
PARAMS = MergePolicyParams(min_level_num_docs=100, merge_factor=3, max_merge_factor=4, maturation_period_secs=3600,
                           target_split_num_rows=1000, target_split_size_bytes=10_000)
START = 900 * 1000
RULES = WindowRules(compaction_start_time=START, late_data_acceptance_secs=600)
SETTINGS = dict(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _index(uid: str = INDEX_UID, deleted: bool = False) -> dict:
    return {"index_uid": uid, "index_id": split_index_uid(uid)[0], "incarnation": split_index_uid(uid)[1], "config": {},
            "doc_mapping_uid": "d", "version": 1, "created_at": NOW, "updated_at": NOW,
            "deleted_at": NOW if deleted else None}


splits_strategy = st.lists(st.tuples(
    st.integers(995, 1005),  # rows, around the target
    st.integers(9_995, 10_005),  # bytes, around the target
    st.integers(-2_000_000, 2_000_000),  # creation, microseconds around the maturation boundary
    st.sampled_from([START - 900, START, START + 900]),  # window start, around the compaction start (CS-3)
    st.booleans(),  # sorted
    st.booleans(),  # claimed by a live job
), min_size=1, max_size=12)


def _split_row(c: SplitCandidate) -> dict:
    created_at = EPOCH + timedelta(seconds=c.created_at_secs)
    return {
        "split_id": c.split_id, "index_uid": INDEX_UID, "source_id": c.scope.source_id,
        "partition_id": c.scope.partition_id, "doc_mapping_uid": c.scope.doc_mapping_uid,
        "sort_schema": c.scope.sort_schema, "window_start": c.window_start,
        "window_duration_secs": c.scope.window_duration_secs, "num_rows": c.num_rows, "size_bytes": c.size_bytes,
        "uri": f"file:///{c.split_id}", "row_groups": [], "num_merge_ops": 0, "generation": 0, "root_split_ids": [],
        "parent_split_ids": [], "state": "published", "created_at": created_at, "updated_at": created_at,
        "published_at": created_at}


async def _insert(session, candidates: list[SplitCandidate], created_at: dict[str, datetime] | None = None) -> None:
    """The candidates as published split rows (at `created_at`'s exact times where given), and a live job
    claiming those `in_live_job`."""
    created_at = created_at or {}
    await session.execute(insert(IndexRow.__table__), [_index()])
    rows = [_split_row(c) for c in candidates]
    for row in rows:
        if row["split_id"] in created_at:
            row["created_at"] = row["updated_at"] = row["published_at"] = created_at[row["split_id"]]
    if rows:
        await session.execute(insert(SplitRow.__table__), rows)
    claimed = [c.split_id for c in candidates if c.in_live_job]
    if claimed:
        await session.execute(insert(CompactionJobRow.__table__), [{
            **new_job_values(NOW), "job_id": "01JBJOBJOBJOBJOBJOBJOBJOBJ", "index_uid": INDEX_UID,
            "source_id": "s", "partition_id": "p", "doc_mapping_uid": "d", "sort_schema": "a@v1",
            "window_duration_secs": 900, "window_start": START, "kind": "level", "level": 0,
            "input_split_ids": claimed, "input_rows": 1, "input_bytes": 1, "output_split_ids": [],
            "output_bytes": None}])
        await session.execute(insert(CompactionJobInputRow.__table__),
                              [{"job_id": "01JBJOBJOBJOBJOBJOBJOBJOBJ", "split_id": s, "live": True}
                               for s in claimed])


async def _loaded(url: str, splits: list[tuple]) -> tuple[list[SplitCandidate], int, list[SplitCandidate]]:
    expected, created = [], {}
    for i, (num_rows, size, created_us, window, sort, claimed) in enumerate(splits):
        created_at = NOW - timedelta(seconds=PARAMS.maturation_period_secs, microseconds=created_us)
        split_id = f"01JB{i:022d}"
        created[split_id] = created_at
        expected.append(SplitCandidate(
            split_id=split_id, scope=CompactionScope(INDEX_UID, "s", "p", "d", "a@v1" if sort else "", 900),
            window_start=window, num_rows=num_rows, size_bytes=size, num_merge_ops=0,
            created_at_secs=(created_at - EPOCH) // timedelta(seconds=1), in_live_job=claimed))
    async with rolled_back(url) as session:
        await _insert(session, expected, created)
        loaded, mature = await CompactionWindowRepository(session).candidates(
            INDEX_UID, start_gte=None, start_lt=None, windows=None, params=PARAMS, rules=RULES, now_secs=NOW_SECS)
    return loaded, mature, expected


@settings(**SETTINGS)
@given(splits=splits_strategy)
def test_a_pass_loads_exactly_the_splits_the_policy_calls_not_mature(repository_database, splits) -> None:
    loaded, mature, every = asyncio.run(_loaded(repository_database, splits))
    assert sorted(loaded, key=lambda c: c.split_id) == [c for c in every if not is_mature(c, PARAMS, NOW_SECS)]
    skipped = plan_merges(every, PARAMS, RULES, NOW_SECS).skipped
    assert mature == sum(1 for reason in skipped.values() if reason is SkipReason.MATURE)


# At HEADS_NOW, windows before the compaction start (CS-3), long closed, closed to the second, still open.
HEADS_NOW = NOW_SECS + RULES.late_data_acceptance_secs
HEAD_WINDOWS = [START - 900, START, NOW_SECS - 900, NOW_SECS]
heads_strategy = st.lists(st.builds(
    lambda i, part, sort, window, rows, size, age, claimed: SplitCandidate(
        split_id=f"01JB{i:022d}", scope=CompactionScope(INDEX_UID, "s", part, "d", sort, 900),
        window_start=window, num_rows=rows, size_bytes=size, num_merge_ops=0, created_at_secs=HEADS_NOW - age,
        in_live_job=claimed),
    st.integers(0, 10**6), st.sampled_from(["p", "p", "p", "q"]), st.sampled_from(["a@v1", "a@v1", "a@v1", ""]),
    st.sampled_from(HEAD_WINDOWS),
    # Rows at the level starts (100, 300, 900) and the target (1000); ties in rows and bytes rank by split id.
    st.sampled_from([1, 99, 100, 101, 299, 300, 899, 900, 999, 1000]), st.sampled_from([10, 10, 5_000, 10_000]),
    st.sampled_from([0, 0, PARAMS.maturation_period_secs - 1, PARAMS.maturation_period_secs]),
    st.sampled_from([False, False, False, True]),
), min_size=40, max_size=80, unique_by=lambda c: c.split_id)


async def _heads(url: str, splits: list[SplitCandidate], operations: int) -> list[SplitCandidate]:
    async with rolled_back(url) as session:
        await _insert(session, splits)
        return await CompactionWindowRepository(session).candidate_heads(
            INDEX_UID, [(900, start) for start in HEAD_WINDOWS], params=PARAMS, rules=RULES, now_secs=HEADS_NOW,
            operations=operations)


@settings(**SETTINGS)
@given(splits=heads_strategy, operations=st.integers(1, 2))
def test_the_heads_a_pass_loads_are_the_policys_heads(repository_database, splits, operations) -> None:
    loaded = asyncio.run(_heads(repository_database, splits, operations))
    expected = group_heads(splits, PARAMS, RULES, HEADS_NOW, operations)
    assert sorted(loaded, key=lambda c: c.split_id) == sorted(expected, key=lambda c: c.split_id)


windows_strategy = st.dictionaries(
    st.tuples(st.sampled_from([60, 900]), st.integers(-20, 20).map(lambda k: START + 60 * k)),
    st.tuples(st.booleans(), st.booleans()),  # (dirty, final_planned)
    max_size=12)


async def _changed(url: str, windows: dict, now_secs: int) -> tuple[list[tuple[int, int]], list[str]]:
    async with rolled_back(url) as session:
        await session.execute(insert(IndexRow.__table__), [_index(), _index("gone:01JBZZZZZZZZZZZZZZZZZZZZZZ", True)])
        rows = [{"index_uid": uid, "window_duration_secs": d, "window_start": s, "dirty": dirty,
                 "final_planned": final, "changed_at": NOW}
                for uid in (INDEX_UID, "gone:01JBZZZZZZZZZZZZZZZZZZZZZZ")
                for (d, s), (dirty, final) in windows.items()]
        if rows:
            await session.execute(insert(CompactionWindowRow.__table__), rows)
        repo = CompactionWindowRepository(session)
        return (await repo.changed(INDEX_UID, RULES, now_secs),
                [index.index_uid for index in await repo.indexes_to_plan()])


@settings(**SETTINGS)
@given(windows=windows_strategy, now_offset=st.integers(-120, 120))
def test_a_pass_looks_at_changed_and_newly_closed_windows_only(repository_database, windows, now_offset) -> None:
    # Around the moment the compaction start's own window closes.
    now_secs = START + 900 + RULES.late_data_acceptance_secs + now_offset
    changed, to_plan = asyncio.run(_changed(repository_database, windows, now_secs))
    assert changed == sorted(
        (d, s) for (d, s), (dirty, final) in windows.items()
        if not before_compaction_start(s, RULES)
        and (dirty or (not final and is_window_closed(s, d, RULES.late_data_acceptance_secs, now_secs))))
    # A deleted index is never planned; a live one while any window waits for planning.
    assert to_plan == ([INDEX_UID] if any(dirty or not final for dirty, final in windows.values()) else [])


async def _expire(url: str, failures: int, at: datetime) -> CompactionJobRow:
    async with rolled_back(url) as session:
        await session.execute(insert(IndexRow.__table__), [_index()])
        await session.execute(insert(CompactionJobRow.__table__), [{
            **new_job_values(NOW), "job_id": "01JBJOBJOBJOBJOBJOBJOBJOBJ", "index_uid": INDEX_UID, "source_id": "s",
            "partition_id": "p", "doc_mapping_uid": "d", "sort_schema": "a@v1", "window_duration_secs": 900,
            "window_start": START, "kind": "level", "level": 0, "input_split_ids": [], "input_rows": 1,
            "input_bytes": 1, "output_split_ids": [], "output_bytes": None, "status": JobStatus.IN_PROGRESS,
            "fencing_token": 7, "worker_id": "w", "lease_expires_at": NOW, "failures": failures}])
        queue = LeaseQueue(session, CompactionJobRow, "compaction_paused_at")
        await queue.expire_leases(at, max_failures=3)
        return await queue.get("01JBJOBJOBJOBJOBJOBJOBJOBJ")


def test_a_lease_expires_at_its_deadline_and_counts_as_a_failure(repository_database) -> None:
    before = asyncio.run(_expire(repository_database, 0, NOW - timedelta(microseconds=1)))
    assert (before.status, before.failures) == (JobStatus.IN_PROGRESS, 0)
    at = asyncio.run(_expire(repository_database, 0, NOW))
    assert (at.status, at.failures, at.worker_id) == (JobStatus.UNASSIGNED, 1, None)
    assert "lease expired" in at.last_error
    last = asyncio.run(_expire(repository_database, 2, NOW))
    assert (last.status, last.failures) == (JobStatus.EXCLUDED, 3)
