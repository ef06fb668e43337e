"""Scheduler decisions as pure functions of job views and a clock (after Pyroscope's compaction scheduler):
which expired leases to revoke, which jobs go to a polling worker, and how many new jobs to plan."""

from __future__ import annotations

from dataclasses import dataclass

from strata_shared.domain.jobs import JobStatus, status_after_failure


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    lease_secs: float = 15.0
    max_failures: int = 3
    queue_bound: int = 10_000


@dataclass(frozen=True, slots=True)
class JobView:
    job_id: str
    status: JobStatus
    level: int
    failures: int
    lease_expires_at: float | None
    fencing_token: int | None = None


def lease_expired(job: JobView, now: float) -> bool:
    return job.status is JobStatus.IN_PROGRESS and job.lease_expires_at is not None and job.lease_expires_at <= now


def status_after_expiry(job: JobView, config: SchedulerConfig) -> JobStatus:
    """An expired lease counts as a failure: a worker that crashes never reports one."""
    return status_after_failure(job.failures + 1, config.max_failures)


def priority_key(job: JobView) -> tuple:
    """Small jobs first: lower level, then fewer failures, then the earliest lease expiry (never leased first)."""
    expiry = float("-inf") if job.lease_expires_at is None else job.lease_expires_at
    return (job.level, job.failures, expiry, job.job_id)


def choose_assignments(jobs: list[JobView], capacity: int) -> list[JobView]:
    """The unassigned jobs a worker with `capacity` free slots gets, highest priority first."""
    if capacity <= 0:
        return []
    waiting = [j for j in jobs if j.status is JobStatus.UNASSIGNED]
    return sorted(waiting, key=priority_key)[:capacity]


def jobs_to_plan(reported_capacity: int, live_jobs: int, unassigned_jobs: int, queue_bound: int) -> int:
    """New jobs to create now: as many as the capacity a worker just reported, less what already waits for it,
    within the queue bound."""
    wanted = max(0, reported_capacity - unassigned_jobs)
    return max(0, min(wanted, queue_bound - live_jobs))
