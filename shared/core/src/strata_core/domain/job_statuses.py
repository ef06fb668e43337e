"""Job status and its explicit table of allowed transitions (after Pyroscope's compaction jobs).

A job is *live* while it is unassigned or in progress: only then does it hold its input splits. Every status
change in the system goes through `check_transition`, so a transition missing from the table cannot happen.
"""

from __future__ import annotations

import enum


class JobStatus(enum.StrEnum):
    UNASSIGNED = "unassigned"
    IN_PROGRESS = "in_progress"
    SUCCESS = "success"
    EXCLUDED = "excluded"
    CANCELLED = "cancelled"


LIVE_STATUSES = frozenset({JobStatus.UNASSIGNED, JobStatus.IN_PROGRESS})

ALLOWED_TRANSITIONS: dict[JobStatus, frozenset[JobStatus]] = {
    JobStatus.UNASSIGNED: frozenset({JobStatus.IN_PROGRESS, JobStatus.CANCELLED}),
    JobStatus.IN_PROGRESS: frozenset({
        JobStatus.IN_PROGRESS,  # reassignment after the lease expired, with a new fencing token
        JobStatus.UNASSIGNED,  # a reported failure or an expired lease, below the failure threshold
        JobStatus.SUCCESS,
        JobStatus.EXCLUDED,  # the failure threshold was reached
        JobStatus.CANCELLED,
    }),
    JobStatus.SUCCESS: frozenset(),
    # An operator cancels an excluded job to release its inputs, or retries it (back to the queue with its
    # failure count reset) once the cause is fixed.
    JobStatus.EXCLUDED: frozenset({JobStatus.CANCELLED, JobStatus.UNASSIGNED}),
    JobStatus.CANCELLED: frozenset(),
}


class InvalidTransition(ValueError):
    def __init__(self, current: JobStatus, target: JobStatus) -> None:
        super().__init__(f"a job cannot go from {current} to {target}")
        self.current = current
        self.target = target


def check_transition(current: JobStatus, target: JobStatus) -> None:
    if target not in ALLOWED_TRANSITIONS[current]:
        raise InvalidTransition(current, target)


def status_after_failure(failures_after: int, max_failures: int) -> JobStatus:
    """Where a failed attempt (reported, or an expired lease) leaves the job."""
    return JobStatus.EXCLUDED if failures_after >= max_failures else JobStatus.UNASSIGNED
