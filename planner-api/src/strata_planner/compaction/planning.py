"""Planning: published splits of an index's windows -> merge operations (the pure policy) -> jobs.

A full pass (the plan and trigger endpoints) looks at every window in a range; an incremental pass (run when
workers report capacity) looks only at windows flagged as changed, or closed since their last final merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, func, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from strata_shared.domain.index_config import IndexSettings
from strata_shared.domain.merge_policy import (
    MergeOperation,
    MergePlan,
    MergePolicyParams,
    SkipReason,
    SplitCandidate,
    WindowRules,
    plan_merges,
)
from strata_shared.domain.split import CompactionScope, SplitState
from strata_shared.domain.windows import is_window_closed
from strata_shared.metastore.compaction_models import CompactionJobInputRow, CompactionWindowRow
from strata_shared.metastore.compaction_repository import CompactionRepository
from strata_shared.metastore.models import IndexRow, SplitRow


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


def _not_mature(params: MergePolicyParams, now: datetime):
    """SQL form of merge_policy.is_mature's negation: a mature split is never merged, so it is not loaded."""
    return and_(SplitRow.num_rows < params.target_split_num_rows,
                SplitRow.size_bytes < params.target_split_size_bytes,
                SplitRow.created_at > now - timedelta(seconds=params.maturation_period_secs))


async def load_candidates(session: AsyncSession, index_uid: str, window_range: WindowRange,
                          windows: Sequence[tuple[int, int]] | None = None, *,
                          params: MergePolicyParams, rules: WindowRules,
                          now: datetime) -> tuple[list[SplitCandidate], int]:
    """Published, not yet mature splits (and whether a job holds them) of a window range or of listed
    (duration, start) windows; and how many mature splits the same selection holds (counted, not loaded:
    at a million splits most are mature, and loading them cost seconds)."""
    if windows is not None and not windows:
        return [], 0
    claimed = exists().where(and_(CompactionJobInputRow.split_id == SplitRow.split_id, CompactionJobInputRow.live))
    selection = [SplitRow.index_uid == index_uid, SplitRow.state == SplitState.PUBLISHED]
    if window_range.start_gte is not None:
        selection.append(SplitRow.window_start >= window_range.start_gte)
    if window_range.start_lt is not None:
        selection.append(SplitRow.window_start < window_range.start_lt)
    if windows is not None:
        selection.append(tuple_(SplitRow.window_duration_secs, SplitRow.window_start).in_(list(windows)))
    not_mature = _not_mature(params, now)
    stmt = select(
        SplitRow.split_id, SplitRow.source_id, SplitRow.partition_id, SplitRow.doc_mapping_uid, SplitRow.sort_schema,
        SplitRow.window_duration_secs, SplitRow.window_start, SplitRow.num_rows, SplitRow.size_bytes,
        SplitRow.num_merge_ops, SplitRow.created_at, claimed.label("claimed"),
    ).where(*selection, not_mature)
    # Counted as the policy would skip them: only splits no earlier reason (CS-3, unsorted, claimed) takes.
    mature = await session.scalar(select(func.count()).select_from(SplitRow).where(
        *selection, ~not_mature, SplitRow.window_start >= rules.compaction_start_time, SplitRow.sort_schema != "",
        ~claimed))
    scopes: dict[tuple, CompactionScope] = {}
    candidates = []
    for r in (await session.execute(stmt)).all():
        key = (r.source_id, r.partition_id, r.doc_mapping_uid, r.sort_schema, r.window_duration_secs)
        scope = scopes.get(key)
        if scope is None:
            scope = scopes[key] = CompactionScope(index_uid, *key)
        candidates.append(SplitCandidate(
            split_id=r.split_id, scope=scope, window_start=r.window_start, num_rows=r.num_rows,
            size_bytes=r.size_bytes, num_merge_ops=r.num_merge_ops, created_at_secs=int(r.created_at.timestamp()),
            in_live_job=r.claimed))
    return candidates, int(mature or 0)


async def plan_index(session: AsyncSession, index: IndexRow, now: datetime, *, window_range: WindowRange,
                     force_final: bool, create_jobs: bool, max_new_jobs: int | None = None,
                     incremental: bool = False) -> PlanOutcome:
    settings = IndexSettings.model_validate(index.config)
    params, rules = policy_params(settings), window_rules(settings)
    windows: list[tuple[int, int]] | None = None
    if incremental:
        windows = await _changed_windows(session, index.index_uid, settings, now)
    candidates, mature = await load_candidates(session, index.index_uid, window_range, windows, params=params,
                                               rules=rules, now=now)
    plan = plan_merges(candidates, params, rules, int(now.timestamp()), force_final=force_final)
    examined = set(windows) if windows is not None else {(c.scope.window_duration_secs, c.window_start)
                                                         for c in candidates}
    outcome = PlanOutcome(plan=plan, windows_examined=len(examined), mature_splits=mature)
    if not create_jobs:
        return outcome

    ordered = _priority_order(plan.operations)
    admitted = ordered if max_new_jobs is None else ordered[:max(0, max_new_jobs)]
    deferred = {(op.scope.window_duration_secs, op.window_start) for op in ordered[len(admitted):]}
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
    await _mark_planned(session, index.index_uid, settings, examined - deferred, now, force_final)
    return outcome


def _priority_order(operations: list[MergeOperation]) -> list[MergeOperation]:
    # Small jobs first, as the scheduler does: when the queue bound cuts planning short, small merges get in.
    return sorted(operations, key=lambda op: (op.level, op.num_rows, op.window_start, op.split_ids))


async def _changed_windows(session: AsyncSession, index_uid: str, settings: IndexSettings,
                           now: datetime) -> list[tuple[int, int]]:
    now_secs = int(now.timestamp())
    late = settings.late_data_acceptance_secs
    rows = (await session.execute(
        select(CompactionWindowRow.window_duration_secs, CompactionWindowRow.window_start).where(
            CompactionWindowRow.index_uid == index_uid,
            or_(CompactionWindowRow.dirty,
                and_(~CompactionWindowRow.final_planned,
                     CompactionWindowRow.window_start + CompactionWindowRow.window_duration_secs + late <= now_secs)),
        ))).all()
    return [(d, w) for d, w in rows if w >= settings.compaction_start_time]


async def _mark_planned(session: AsyncSession, index_uid: str, settings: IndexSettings,
                        windows: set[tuple[int, int]], now: datetime, force_final: bool) -> None:
    now_secs = int(now.timestamp())
    for duration, start in windows:
        closed = force_final or is_window_closed(start, duration, settings.late_data_acceptance_secs, now_secs)
        await session.execute(
            update(CompactionWindowRow)
            .where(CompactionWindowRow.index_uid == index_uid, CompactionWindowRow.window_duration_secs == duration,
                   CompactionWindowRow.window_start == start, CompactionWindowRow.changed_at <= now)
            .values(dirty=False, planned_at=now, final_planned=closed))


def skipped_summary(plan: MergePlan, mature_splits: int = 0) -> dict[str, int]:
    counts: dict[str, int] = {str(reason): 0 for reason in SkipReason}
    for reason in plan.skipped.values():
        counts[str(reason)] += 1
    counts[str(SkipReason.MATURE)] += mature_splits
    return {k: v for k, v in counts.items() if v}
