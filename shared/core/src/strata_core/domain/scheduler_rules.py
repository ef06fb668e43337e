"""Scheduler decisions that are not SQL (after Pyroscope's compaction scheduler): the order each queue hands its
waiting jobs out in, and how many new compaction jobs to plan when a worker reports capacity.

An order is declared here as data and turned into the ORDER BY of the queue's repository
(`LeaseQueue.waiting`), so the rule is stated once; `tests/planner/test_assignment_priority.py` reads the same
declaration in Python and checks PostgreSQL hands jobs out in exactly that order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SortKey:
    """One key of a queue's order, ascending unless `descending`; `nulls_first` puts "never set" ahead of every
    value."""

    column: str
    nulls_first: bool = False
    descending: bool = False


# Keeping up with writers that never stop (docs/architecture.md, "Priorities"):
# - final merges of closed windows first ("final" sorts before "level"): a closed window gets one, so they cannot
#   starve the rest, while a backlog of small merges in the open windows could starve them forever;
# - then small jobs: lower level;
# - then the newest window: it is where writers land and queries look, and an older open window's small splits
#   get their final merge anyway once it closes;
# - then fewer failures, then the job whose earlier lease expired first (a job never leased comes before any
#   retry), then the oldest.
COMPACTION_ASSIGNMENT_ORDER = (SortKey("kind"), SortKey("level"), SortKey("window_start", descending=True),
                               SortKey("failures"), SortKey("lease_expires_at", nulls_first=True),
                               SortKey("job_id"))
# Fewest failures, then oldest first: the indexing lag is the age of the queue's head.
INDEXING_ASSIGNMENT_ORDER = (SortKey("failures"), SortKey("created_at"), SortKey("job_id"))


def python_sort_key(order: Sequence[SortKey], value_of: Callable[[str], object]) -> tuple:
    """An order read in Python, as PostgreSQL applies it (a null last unless `nulls_first`): for what is ordered
    before it reaches the database (merge operations a planner pass creates) and for the tests that check the
    SQL against it. Descending keys must be numbers."""
    out = []
    for key in order:
        value = value_of(key.column)
        if value is None:
            out.append((0 if key.nulls_first else 1, 0))
        else:
            out.append((1 if key.nulls_first else 0, -value if key.descending else value))
    return tuple(out)


def jobs_to_plan(reported_capacity: int, live_jobs: int, unassigned_jobs: int, queue_bound: int,
                 plan_ahead: int = 1) -> int:
    """New jobs to create now. None while the jobs already waiting fill the capacity a worker just reported;
    otherwise up to `plan_ahead` times that capacity, less what waits, within the queue bound. Planning in
    batches (a pass ranks the waiting splits of its windows) and only once the queue runs low keeps the cost of
    a pass off most polls."""
    if reported_capacity <= 0 or unassigned_jobs >= reported_capacity:
        return 0
    wanted = reported_capacity * plan_ahead - unassigned_jobs
    return max(0, min(wanted, queue_bound - live_jobs))


@dataclass(frozen=True, slots=True)
class InProgressLimits:
    """Caps on jobs in progress at once: in total, per tenant (partition_id) and per index; None is no cap. A
    backlog in one tenant or index then cannot hold every worker while others wait."""

    total: int | None = None
    per_tenant: int | None = None
    per_index: int | None = None


def choose_within_limits(candidates: Sequence[T], capacity: int, limits: InProgressLimits,
                         running: Sequence[tuple[str, str]], key: Callable[[T], tuple[str, str]]) -> list[T]:
    """The candidates (in queue order) to hand out now: at most `capacity`, skipping any whose tenant or index is
    at its cap. `running` holds (index_uid, partition_id) of each job in progress; `key` gives a candidate's."""
    budget = capacity if limits.total is None else min(capacity, limits.total - len(running))
    by_tenant = Counter(tenant for _, tenant in running)
    by_index = Counter(index for index, _ in running)
    chosen: list[T] = []
    for job in candidates:
        if len(chosen) >= budget:
            break
        index, tenant = key(job)
        if limits.per_tenant is not None and by_tenant[tenant] >= limits.per_tenant:
            continue
        if limits.per_index is not None and by_index[index] >= limits.per_index:
            continue
        by_tenant[tenant] += 1
        by_index[index] += 1
        chosen.append(job)
    return chosen
