"""The compaction queue's priority, tested on the code that runs: jobs with random levels, failures and lease
history go into PostgreSQL, `CompactionRepository.assign` picks some, and the pick must equal the pure rule
(`scheduler_rules.choose_assignments`) over the same jobs. Each example runs in a transaction rolled back at
the end, in a database of its own (no other test's jobs in the queue)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from strata_shared.domain.jobs import JobStatus
from strata_shared.domain.scheduler_rules import JobView, choose_assignments
from strata_shared.metastore import migrate
from strata_shared.metastore.compaction_models import CompactionJobRow
from strata_shared.metastore.compaction_repository import CompactionRepository
from strata_shared.metastore.leases import new_job_values
from strata_shared.metastore.models import IndexRow

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
INDEX_UID = "prio:01JBZZZZZZZZZZZZZZZZZZZZZZ"

jobs_strategy = st.lists(st.tuples(
    st.integers(0, 3),  # level
    st.integers(0, 2),  # failures
    st.one_of(st.none(), st.integers(-600, 600)),  # lease expiry of an earlier attempt, seconds from NOW
    st.sampled_from([JobStatus.UNASSIGNED, JobStatus.UNASSIGNED, JobStatus.IN_PROGRESS, JobStatus.SUCCESS]),
), min_size=0, max_size=12)


@pytest.fixture(scope="module")
def queue_database(pg_databases) -> str:
    url = pg_databases.create("strata_priority")
    migrate.upgrade(url)
    return url


async def _assigned(url: str, jobs: list[tuple], capacity: int) -> tuple[list[str], list[str]]:
    engine = create_async_engine(url)
    try:
        async with async_sessionmaker(engine)() as session:
            await session.execute(insert(IndexRow.__table__), [{
                "index_uid": INDEX_UID, "index_id": "prio", "incarnation": INDEX_UID.split(":")[1], "config": {},
                "doc_mapping_uid": "d", "version": 1, "created_at": NOW, "updated_at": NOW, "deleted_at": None}])
            rows, views = [], []
            for i, (level, failures, expiry, status) in enumerate(jobs):
                job_id = f"01JB{i:022d}"
                lease_expires_at = None if expiry is None else NOW + timedelta(seconds=expiry)
                rows.append({**new_job_values(NOW), "job_id": job_id, "index_uid": INDEX_UID, "source_id": "s",
                             "partition_id": "p", "doc_mapping_uid": "d", "sort_schema": "a@v1",
                             "window_duration_secs": 900, "window_start": 900 * i, "kind": "level", "level": level,
                             "input_split_ids": [], "input_rows": 1, "input_bytes": 1, "output_split_ids": [],
                             "output_bytes": None, "status": status, "failures": failures,
                             "lease_expires_at": lease_expires_at,
                             "fencing_token": None if status is JobStatus.UNASSIGNED else i + 1})
                views.append(JobView(job_id, status, level, failures,
                                     None if lease_expires_at is None else lease_expires_at.timestamp()))
            if rows:
                await session.execute(insert(CompactionJobRow.__table__), rows)
            chosen = [j.job_id for j in
                      await CompactionRepository(session).assign("w", capacity, NOW, timedelta(seconds=15))]
            await session.rollback()
        return chosen, [v.job_id for v in choose_assignments(views, capacity)]
    finally:
        await engine.dispose()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=jobs_strategy, capacity=st.integers(0, 6))
def test_the_repository_assigns_in_the_order_of_the_priority_rule(queue_database, jobs, capacity) -> None:
    chosen, expected = asyncio.run(_assigned(queue_database, jobs, capacity))
    assert chosen == expected
