"""Job status transitions as a full matrix, and the scheduler's rules with a controlled clock: lease expiry,
failure threshold, priority order, capacity-proportional planning and the queue bound."""

from __future__ import annotations

import itertools

import pytest

from strata_shared.domain.jobs import ALLOWED_TRANSITIONS, InvalidTransition, JobStatus, check_transition
from strata_shared.domain.scheduler_rules import (
    JobView,
    SchedulerConfig,
    choose_assignments,
    jobs_to_plan,
    lease_expired,
    priority_key,
    status_after_expiry,
)

EXPECTED_ALLOWED = {
    (JobStatus.UNASSIGNED, JobStatus.IN_PROGRESS),
    (JobStatus.UNASSIGNED, JobStatus.CANCELLED),
    (JobStatus.IN_PROGRESS, JobStatus.IN_PROGRESS),
    (JobStatus.IN_PROGRESS, JobStatus.UNASSIGNED),
    (JobStatus.IN_PROGRESS, JobStatus.SUCCESS),
    (JobStatus.IN_PROGRESS, JobStatus.EXCLUDED),
    (JobStatus.IN_PROGRESS, JobStatus.CANCELLED),
    (JobStatus.EXCLUDED, JobStatus.CANCELLED),
}


@pytest.mark.parametrize(("current", "target"), list(itertools.product(JobStatus, JobStatus)))
def test_transition_matrix(current, target):
    if (current, target) in EXPECTED_ALLOWED:
        check_transition(current, target)
    else:
        with pytest.raises(InvalidTransition):
            check_transition(current, target)


def test_terminal_statuses_go_nowhere_but_excluded_can_be_cancelled():
    assert ALLOWED_TRANSITIONS[JobStatus.SUCCESS] == frozenset()
    assert ALLOWED_TRANSITIONS[JobStatus.CANCELLED] == frozenset()


def _job(job_id: str, status=JobStatus.UNASSIGNED, level=0, failures=0, lease=None) -> JobView:
    return JobView(job_id, status, level, failures, lease)


def test_lease_expires_exactly_at_its_deadline():
    job = _job("a", JobStatus.IN_PROGRESS, lease=100.0)
    assert not lease_expired(job, 99.999)
    assert lease_expired(job, 100.0)
    assert not lease_expired(_job("b", JobStatus.UNASSIGNED, lease=1.0), 500.0)


def test_expired_lease_counts_as_failure_up_to_the_threshold():
    config = SchedulerConfig(max_failures=3)
    assert status_after_expiry(_job("a", JobStatus.IN_PROGRESS, failures=0, lease=1), config) is JobStatus.UNASSIGNED
    assert status_after_expiry(_job("a", JobStatus.IN_PROGRESS, failures=1, lease=1), config) is JobStatus.UNASSIGNED
    assert status_after_expiry(_job("a", JobStatus.IN_PROGRESS, failures=2, lease=1), config) is JobStatus.EXCLUDED


def test_priority_lower_level_then_fewer_failures_then_earliest_lease():
    jobs = [
        _job("l1", level=1),
        _job("l0-f1", level=0, failures=1, lease=50.0),
        _job("l0-f0-late", level=0, lease=90.0),
        _job("l0-f0-never", level=0),
        _job("l0-f0-early", level=0, lease=10.0),
        _job("running", JobStatus.IN_PROGRESS, level=0, lease=1.0),
    ]
    assert [j.job_id for j in sorted(jobs, key=priority_key)][:5] == \
        ["l0-f0-never", "running", "l0-f0-early", "l0-f0-late", "l0-f1"]
    chosen = choose_assignments(jobs, capacity=3)
    assert [j.job_id for j in chosen] == ["l0-f0-never", "l0-f0-early", "l0-f0-late"]
    assert choose_assignments(jobs, capacity=0) == []


def test_planning_follows_capacity_within_the_queue_bound():
    assert jobs_to_plan(reported_capacity=4, live_jobs=0, unassigned_jobs=0, queue_bound=100) == 4
    assert jobs_to_plan(reported_capacity=4, live_jobs=3, unassigned_jobs=3, queue_bound=100) == 1
    assert jobs_to_plan(reported_capacity=4, live_jobs=99, unassigned_jobs=0, queue_bound=100) == 1
    assert jobs_to_plan(reported_capacity=4, live_jobs=100, unassigned_jobs=0, queue_bound=100) == 0
    assert jobs_to_plan(reported_capacity=0, live_jobs=0, unassigned_jobs=0, queue_bound=100) == 0
