"""Job status transitions as a full matrix, where a failed attempt leaves a job, and capacity-proportional
planning within the queue bound. The assignment order and lease expiry are SQL: they are tested on PostgreSQL
(tests/planner/test_assignment_priority.py, tests/planner/test_scheduler.py). The rules stay
importable without the database or the web stack, so `strata_jobs` could use them."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from strata_core.domain.job_statuses import (
    ALLOWED_TRANSITIONS,
    InvalidTransition,
    JobStatus,
    check_transition,
    status_after_failure,
)
from strata_core.domain.scheduler_rules import InProgressLimits, choose_within_limits, jobs_to_plan

EXPECTED_ALLOWED = {
    (JobStatus.UNASSIGNED, JobStatus.IN_PROGRESS),
    (JobStatus.UNASSIGNED, JobStatus.CANCELLED),
    (JobStatus.IN_PROGRESS, JobStatus.IN_PROGRESS),
    (JobStatus.IN_PROGRESS, JobStatus.UNASSIGNED),
    (JobStatus.IN_PROGRESS, JobStatus.SUCCESS),
    (JobStatus.IN_PROGRESS, JobStatus.EXCLUDED),
    (JobStatus.IN_PROGRESS, JobStatus.CANCELLED),
    (JobStatus.EXCLUDED, JobStatus.CANCELLED),
    (JobStatus.EXCLUDED, JobStatus.UNASSIGNED),  # an operator's retry
}


_LOADED_BY_THE_RULES = """
import json, sys
before = set(sys.modules)
import strata_core.domain.job_statuses, strata_core.domain.scheduler_rules
print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names))))
"""


def test_the_queue_rules_import_neither_the_database_nor_the_web_stack():
    # A fresh interpreter: what this test process already imported must not hide an import.
    out = subprocess.run([sys.executable, "-c", _LOADED_BY_THE_RULES], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout) == ["strata_core"]


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


def test_a_failed_attempt_requeues_the_job_until_the_threshold_excludes_it():
    # A reported failure and an expired lease (a worker that died) both count as one.
    assert [status_after_failure(n, max_failures=3) for n in (1, 2, 3, 4)] == \
        [JobStatus.UNASSIGNED, JobStatus.UNASSIGNED, JobStatus.EXCLUDED, JobStatus.EXCLUDED]


def test_planning_follows_capacity_within_the_queue_bound():
    assert jobs_to_plan(reported_capacity=4, live_jobs=0, unassigned_jobs=0, queue_bound=100) == 4
    assert jobs_to_plan(reported_capacity=4, live_jobs=3, unassigned_jobs=3, queue_bound=100) == 1
    assert jobs_to_plan(reported_capacity=4, live_jobs=99, unassigned_jobs=0, queue_bound=100) == 1
    assert jobs_to_plan(reported_capacity=4, live_jobs=100, unassigned_jobs=0, queue_bound=100) == 0
    assert jobs_to_plan(reported_capacity=0, live_jobs=0, unassigned_jobs=0, queue_bound=100) == 0


def test_jobs_are_planned_ahead_in_batches_once_the_queue_runs_low() -> None:
    # Enough waiting for what the worker asks: no pass at all (a pass reads whole windows).
    assert jobs_to_plan(reported_capacity=2, live_jobs=5, unassigned_jobs=2, queue_bound=100, plan_ahead=8) == 0
    # Running low: fill up to plan_ahead x capacity.
    assert jobs_to_plan(reported_capacity=2, live_jobs=2, unassigned_jobs=1, queue_bound=100, plan_ahead=8) == 15
    assert jobs_to_plan(reported_capacity=2, live_jobs=0, unassigned_jobs=0, queue_bound=100, plan_ahead=8) == 16
    # Never past the queue bound, never without capacity.
    assert jobs_to_plan(reported_capacity=2, live_jobs=95, unassigned_jobs=0, queue_bound=100, plan_ahead=8) == 5
    assert jobs_to_plan(reported_capacity=0, live_jobs=0, unassigned_jobs=0, queue_bound=100, plan_ahead=8) == 0


def _chosen(candidates, capacity, limits, running=()):
    return choose_within_limits(candidates, capacity, limits, list(running), key=lambda job: job)


def test_caps_on_jobs_in_progress_skip_a_full_tenant_or_index_but_keep_the_queue_order():
    # Candidates are (index_uid, partition_id), in queue order.
    queue = [("i1", "busy"), ("i1", "busy"), ("i1", "busy"), ("i2", "busy"), ("i1", "quiet"), ("i2", "quiet")]
    assert _chosen(queue, 10, InProgressLimits()) == queue
    assert _chosen(queue, 10, InProgressLimits(per_tenant=2)) == [
        ("i1", "busy"), ("i1", "busy"), ("i1", "quiet"), ("i2", "quiet")]
    assert _chosen(queue, 10, InProgressLimits(per_index=2)) == [
        ("i1", "busy"), ("i1", "busy"), ("i2", "busy"), ("i2", "quiet")]
    # What already runs counts toward the caps, and toward the total.
    assert _chosen(queue, 10, InProgressLimits(per_tenant=2), running=[("i9", "busy")]) == [
        ("i1", "busy"), ("i1", "quiet"), ("i2", "quiet")]
    assert _chosen(queue, 10, InProgressLimits(total=3, per_tenant=2), running=[("i9", "x")]) == [
        ("i1", "busy"), ("i1", "busy")]
    assert _chosen(queue, 1, InProgressLimits(per_tenant=2)) == [("i1", "busy")]
