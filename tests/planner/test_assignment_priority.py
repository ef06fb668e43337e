"""The order queues hand jobs out in, tested on the code that runs: jobs with random levels, failures and lease
history go into PostgreSQL, `CompactionRepository.assign` picks some, and the pick must equal the declared order
(`scheduler_rules.COMPACTION_ASSIGNMENT_ORDER`) read in Python over the same jobs: the ORDER BY generated from it
(NULLS FIRST included) means what the declaration says. Each example runs in a transaction rolled back at its
end, in a database no API writes to (no other test's jobs in the queue)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert

from strata_core.domain.index_uid import split_index_uid
from strata_core.domain.job_statuses import JobStatus
from strata_core.domain.merge_policy import MergeKind
from strata_core.domain.scheduler_rules import COMPACTION_ASSIGNMENT_ORDER, SortKey, python_sort_key
from strata_metastore.compaction_models import CompactionJobRow
from strata_metastore.compaction_repository import CompactionRepository
from strata_metastore.job_columns import new_job_values
from strata_metastore.models import IndexRow
from tests.fixtures.postgres import rolled_back
from tests.helpers import examples

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
INDEX_UID = "prio:01JBZZZZZZZZZZZZZZZZZZZZZZ"

jobs_strategy = st.lists(st.tuples(
    st.integers(0, 3),  # level
    st.integers(0, 2),  # failures
    st.one_of(st.none(), st.integers(-600, 600)),  # lease expiry of an earlier attempt, seconds from NOW
    st.sampled_from([JobStatus.UNASSIGNED, JobStatus.UNASSIGNED, JobStatus.IN_PROGRESS, JobStatus.SUCCESS]),
    st.sampled_from(["level", "level", "final"]),  # kind
    st.integers(0, 3),  # window
), min_size=0, max_size=12)


def declared_order(order: tuple[SortKey, ...], job: dict) -> tuple:
    """The declaration read in Python (`python_sort_key`, what the planner orders its operations by)."""
    return python_sort_key(order, job.get)


def _job_row(i: int, level: int, failures: int, expiry: int | None, status: JobStatus, kind: str = "level",
             window: int | None = None) -> dict:
    return {**new_job_values(NOW), "job_id": f"01JB{i:022d}", "index_uid": INDEX_UID, "source_id": "s",
            "partition_id": "p", "doc_mapping_uid": "d", "sort_schema": "a@v1", "window_duration_secs": 900,
            "window_start": 900 * (i if window is None else window), "kind": kind, "level": level,
            "input_split_ids": [], "input_rows": 1,
            "input_bytes": 1, "output_split_ids": [], "output_bytes": None, "status": status, "failures": failures,
            "lease_expires_at": None if expiry is None else NOW + timedelta(seconds=expiry),
            "fencing_token": None if status is JobStatus.UNASSIGNED else i + 1}


async def _assigned(url: str, rows: list[dict], capacity: int) -> list[str]:
    async with rolled_back(url) as session:
        await session.execute(insert(IndexRow.__table__), [{
            "index_uid": INDEX_UID, "index_id": "prio", "incarnation": split_index_uid(INDEX_UID)[1], "config": {},
            "doc_mapping_uid": "d", "version": 1, "created_at": NOW, "updated_at": NOW, "deleted_at": None}])
        if rows:
            await session.execute(insert(CompactionJobRow.__table__), rows)
        jobs = await CompactionRepository(session).assign("w", capacity, NOW, timedelta(seconds=15))
        return [j.job_id for j in jobs]


def _expected(rows: list[dict], capacity: int) -> list[str]:
    waiting = [r for r in rows if r["status"] is JobStatus.UNASSIGNED]
    return [r["job_id"] for r in sorted(waiting, key=lambda r: declared_order(COMPACTION_ASSIGNMENT_ORDER, r))
            ][:max(0, capacity)]


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=jobs_strategy, capacity=st.integers(0, 6))
def test_the_repository_assigns_in_the_declared_order(repository_database, jobs, capacity) -> None:
    rows = [_job_row(i, *job) for i, job in enumerate(jobs)]
    assert asyncio.run(_assigned(repository_database, rows, capacity)) == _expected(rows, capacity)


def test_small_jobs_first_then_fewer_failures_then_the_earliest_expired_lease(repository_database) -> None:
    # (level, failures, lease expiry of an earlier attempt, status); all in one window
    jobs = {"l1": (1, 0, None), "l0-f1": (0, 1, -50), "l0-f0-late": (0, 0, 90), "l0-f0-never": (0, 0, None),
            "l0-f0-early": (0, 0, 10)}
    rows = [_job_row(i, *job, JobStatus.UNASSIGNED, window=1) for i, job in enumerate(jobs.values())]
    rows.append(_job_row(len(rows), 0, 0, 1, JobStatus.IN_PROGRESS))  # running: never handed out again
    names = {row["job_id"]: name for row, name in zip(rows, jobs, strict=False)}
    chosen = asyncio.run(_assigned(repository_database, rows, capacity=4))
    assert [names[j] for j in chosen] == ["l0-f0-never", "l0-f0-early", "l0-f0-late", "l0-f1"]


def test_final_merges_first_then_small_jobs_newest_window_first(repository_database) -> None:
    """Under a backlog of small merges in the open windows, a closed window's final merge is never starved; among
    small merges the newest window (where writers land and queries look) goes first."""
    assert MergeKind.FINAL < MergeKind.LEVEL  # what SortKey("kind") relies on
    # (level, failures, expiry, status, kind, window)
    jobs = {"w3-l0": (0, 0, None, JobStatus.UNASSIGNED, "level", 3), "w1-l0": (0, 0, None, JobStatus.UNASSIGNED,
                                                                        "level", 1),
            "w1-final-l1": (1, 0, None, JobStatus.UNASSIGNED, "final", 1),
            "w3-l1": (1, 0, None, JobStatus.UNASSIGNED, "level", 3),
            "w2-l0-failed": (0, 2, -5, JobStatus.UNASSIGNED, "level", 2)}
    rows = [_job_row(i, *job) for i, job in enumerate(jobs.values())]
    names = {row["job_id"]: name for row, name in zip(rows, jobs, strict=True)}
    chosen = asyncio.run(_assigned(repository_database, rows, capacity=5))
    assert [names[j] for j in chosen] == ["w1-final-l1", "w3-l0", "w2-l0-failed", "w1-l0", "w3-l1"]
