"""Planning: published splits of an index's windows -> merge operations (the pure policy) -> jobs.

A full pass (the plan and trigger endpoints) looks at every window in a range; an incremental pass (run when
workers report capacity) looks only at windows flagged as changed, or closed since their last final merge.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.index_config import IndexSettings
from strata_core.domain.merge_policy import (
    MergeOperation,
    MergePlan,
    MergePolicyParams,
    SkipReason,
    SplitCandidate,
    WindowRules,
    plan_merges,
    windows_cut_short,
)
from strata_core.domain.scheduler_rules import COMPACTION_ASSIGNMENT_ORDER, python_sort_key
from strata_core.domain.windows import is_window_closed
from strata_metastore.compaction_repository import CompactionRepository
from strata_metastore.models import IndexRow
from strata_metastore.window_repository import CompactionWindowRepository


@dataclass(frozen=True, slots=True)
class WindowRange:
    start_gte: int | None = None
    start_lt: int | None = None


@dataclass(slots=True)
class PlanOutcome:
    plan: MergePlan
    windows_examined: int
    # Mature splits are counted in SQL rather than listed one by one in plan.skipped.
    mature_splits: int = 0
    created_job_ids: list[str] = field(default_factory=list)
    operations_not_created: int = 0


def policy_params(settings: IndexSettings) -> MergePolicyParams:
    policy = settings.merge_policy
    return MergePolicyParams(
        min_level_num_docs=policy.min_level_num_docs,
        merge_factor=policy.merge_factor,
        max_merge_factor=policy.max_merge_factor,
        maturation_period_secs=policy.maturation_period_secs,
        target_split_num_rows=policy.target_split_num_rows,
        target_split_size_bytes=policy.target_split_size_bytes,
    )


def window_rules(settings: IndexSettings) -> WindowRules:
    return WindowRules(settings.compaction_start_time, settings.late_data_acceptance_secs)


async def load_candidates(session: AsyncSession, index_uid: str, window_range: WindowRange,
                          windows: Sequence[tuple[int, int]] | None = None, *,
                          params: MergePolicyParams, rules: WindowRules,
                          now: datetime) -> tuple[list[SplitCandidate], int]:
    """Published, not yet mature splits of a window range or of listed (duration, start) windows, and how many
    mature splits the same selection holds."""
    return await CompactionWindowRepository(session).candidates(
        index_uid, start_gte=window_range.start_gte, start_lt=window_range.start_lt, windows=windows,
        params=params, rules=rules, now_secs=int(now.timestamp()))


async def plan_index(session: AsyncSession, index: IndexRow, now: datetime, *, window_range: WindowRange,
                     force_final: bool, create_jobs: bool, max_new_jobs: int | None = None,
                     incremental: bool = False) -> PlanOutcome:
    settings = IndexSettings.model_validate(index.config)
    params, rules = policy_params(settings), window_rules(settings)
    windows: list[tuple[int, int]] | None = None
    if incremental:
        windows = await _changed_windows(session, index.index_uid, rules, now)
    # Windows whose merges this pass could not all see: planned again by the next pass, not marked done.
    unseen: set[tuple[int, int]] = set()
    if incremental and create_jobs and max_new_jobs is not None and not force_final:
        # A scheduler's pass creates a few jobs: it reads the few splits of each window those can take, not a
        # backlog of thousands each time (the plan it reports is then of those splits, and counts no mature).
        now_secs = int(now.timestamp())
        candidates, mature = await CompactionWindowRepository(session).candidate_heads(
            index.index_uid, windows, params=params, rules=rules, now_secs=now_secs, operations=max_new_jobs), 0
        unseen = windows_cut_short(candidates, params, rules, now_secs, max_new_jobs)
    else:
        candidates, mature = await load_candidates(session, index.index_uid, window_range, windows,
                                                   params=params, rules=rules, now=now)
    plan = plan_merges(candidates, params, rules, int(now.timestamp()), force_final=force_final)
    # Only where the heads made a merge can more wait beyond them: a group whose smallest splits make none (below
    # the merge factor, or no two within the target) makes none from larger ones either.
    unseen &= {(op.scope.window_duration_secs, op.window_start) for op in plan.operations}
    examined = set(windows) if windows is not None else {(c.scope.window_duration_secs, c.window_start)
                                                         for c in candidates}
    outcome = PlanOutcome(plan=plan, windows_examined=len(examined), mature_splits=mature)
    if not create_jobs:
        return outcome

    ordered = admission_order(plan.operations)
    admitted = ordered if max_new_jobs is None else ordered[:max(0, max_new_jobs)]
    deferred = unseen | {(op.scope.window_duration_secs, op.window_start) for op in ordered[len(admitted):]}
    outcome.operations_not_created = len(ordered) - len(admitted)
    repo = CompactionRepository(session)
    created = await repo.create_jobs(admitted, now)
    if created is None:
        # A concurrent pass claimed some of these splits first: create what still can be, one job at a time;
        # the windows of the others are looked at again next pass.
        created = []
        for op in admitted:
            job_id = await repo.create_job(op, now)
            if job_id is None:
                outcome.operations_not_created += 1
                deferred.add((op.scope.window_duration_secs, op.window_start))
            else:
                created.append(job_id)
    outcome.created_job_ids = created
    await _mark_planned(session, index.index_uid, rules, examined - deferred, now, force_final)
    return outcome


async def create_planned_jobs(session: AsyncSession, index: IndexRow, now: datetime, *, window_range: WindowRange,
                              force_final: bool, max_new_jobs: int | None) -> PlanOutcome:
    """An operator's trigger: the index planned as `plan_index` does, and the jobs it creates committed."""
    outcome = await plan_index(session, index, now, window_range=window_range, force_final=force_final,
                               create_jobs=True, max_new_jobs=max_new_jobs)
    await session.commit()
    return outcome


def admission_order(operations: list[MergeOperation]) -> list[MergeOperation]:
    """Operations in the order the scheduler hands jobs out, so that when the budget cuts planning short, what it
    would run first gets in; then by a merge's place among its window's (the policy plans a window's merges from
    its smallest splits up, so a pass planned from `merge_policy.group_heads` admits exactly the merges a pass
    planned from every split would); then the smaller job, and a stable order."""
    places: dict[tuple, int] = defaultdict(int)
    keys = {}
    for op in operations:
        group = (op.scope, op.window_start)
        scheduled = python_sort_key(COMPACTION_ASSIGNMENT_ORDER, lambda column, op=op: getattr(op, column, None))
        keys[op.split_ids] = (scheduled, places[group], op.num_rows, op.split_ids)
        places[group] += 1
    return sorted(operations, key=lambda op: keys[op.split_ids])


async def _changed_windows(session: AsyncSession, index_uid: str, rules: WindowRules,
                           now: datetime) -> list[tuple[int, int]]:
    return await CompactionWindowRepository(session).changed(index_uid, rules, int(now.timestamp()))


async def _mark_planned(session: AsyncSession, index_uid: str, rules: WindowRules,
                        windows: set[tuple[int, int]], now: datetime, force_final: bool) -> None:
    """The windows a pass planned are done until something changes; a closed one (or any, under `final`) has had
    its final merge."""
    now_secs = int(now.timestamp())
    planned = [(duration, start, force_final or is_window_closed(start, duration, rules.late_data_acceptance_secs,
                                                                 now_secs))
               for duration, start in sorted(windows)]
    await CompactionWindowRepository(session).mark_planned(index_uid, planned, now)


def skipped_summary(plan: MergePlan, mature_splits: int = 0) -> dict[str, int]:
    counts: dict[str, int] = {str(reason): 0 for reason in SkipReason}
    for reason in plan.skipped.values():
        counts[str(reason)] += 1
    counts[str(SkipReason.MATURE)] += mature_splits
    return {k: v for k, v in counts.items() if v}
