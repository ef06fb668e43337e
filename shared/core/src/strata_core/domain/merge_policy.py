"""The merge policy: which splits of one window merge together (after Quickwit's StableLogMergePolicy, adapted to
row counts and bytes, and scoped by window: docs/architecture.md, "Merge policy").

Pure and deterministic: candidates are sorted inside, so the plan does not depend on input order. Guarantees,
pinned by property tests: every operation lies in one compatibility scope (CS-1) and one window (CS-2); no window
before compaction_start_time is touched (CS-3); no mature split is merged; no split appears in two operations;
every operation merges at least two splits. Every split left alone gets a reason.
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from strata_core.domain.split import CompactionScope
from strata_core.domain.windows import is_window_closed

# Levels grow by this factor in rows, as in StableLogMergePolicy.
LEVEL_MULTIPLIER = 3


@dataclass(frozen=True, slots=True)
class MergePolicyParams:
    min_level_num_docs: int = 100_000
    merge_factor: int = 10
    max_merge_factor: int = 12
    maturation_period_secs: int = 48 * 3600
    target_split_num_rows: int = 10_000_000
    target_split_size_bytes: int = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class WindowRules:
    compaction_start_time: int
    late_data_acceptance_secs: int


@dataclass(frozen=True, slots=True)
class SplitCandidate:
    split_id: str
    scope: CompactionScope
    window_start: int
    num_rows: int
    size_bytes: int
    num_merge_ops: int
    created_at_secs: int
    # Set when the split is already an input of a live job: it cannot be claimed twice.
    in_live_job: bool = False


class SkipReason(enum.StrEnum):
    BEFORE_COMPACTION_START = "before_compaction_start"
    UNSORTED = "unsorted"
    MATURE = "mature"
    IN_LIVE_JOB = "in_live_job"
    LEVEL_BELOW_MERGE_FACTOR = "level_below_merge_factor"
    ALONE_IN_WINDOW = "alone_in_window"


class MergeKind(enum.StrEnum):
    LEVEL = "level"
    FINAL = "final"


@dataclass(frozen=True, slots=True)
class MergeOperation:
    scope: CompactionScope
    window_start: int
    split_ids: tuple[str, ...]
    level: int
    kind: MergeKind
    num_rows: int
    size_bytes: int


@dataclass(slots=True)
class MergePlan:
    operations: list[MergeOperation] = field(default_factory=list)
    skipped: dict[str, SkipReason] = field(default_factory=dict)


def split_level(num_rows: int, params: MergePolicyParams) -> int:
    """Level 0 holds splits under min_level_num_docs rows; each next level holds LEVEL_MULTIPLIER times more."""
    level = 0
    bound = params.min_level_num_docs
    while num_rows >= bound:
        level += 1
        bound *= LEVEL_MULTIPLIER
    return level


def level_starts(params: MergePolicyParams) -> list[int]:
    """The row counts at which levels 1, 2, ... start, below the target row count. A split that is not mature has
    fewer rows than the target, so its `split_level` is how many of these it reaches: a sum of comparisons, which
    SQL computes from a row-count column as well (the debt repository groups waiting splits by level that way)."""
    starts, bound = [], params.min_level_num_docs
    while bound < params.target_split_num_rows:
        starts.append(bound)
        bound *= LEVEL_MULTIPLIER
    return starts


def mature_when(num_rows, size_bytes, age_secs, params: MergePolicyParams):
    """Mature splits are never merged again: big enough already, or too old to be worth rewriting.

    Written with comparisons and `|` only, so the one rule serves twice: on numbers it is a bool (`is_mature`),
    on SQL column expressions it is the WHERE clause the planner's repository loads candidates with (mature
    splits are only counted there, never loaded)."""
    return ((num_rows >= params.target_split_num_rows)
            | (size_bytes >= params.target_split_size_bytes)
            | (age_secs >= params.maturation_period_secs))


def is_mature(split: SplitCandidate, params: MergePolicyParams, now_secs: int) -> bool:
    return bool(mature_when(split.num_rows, split.size_bytes, now_secs - split.created_at_secs, params))


def before_compaction_start(window_start, rules: WindowRules):
    """CS-3: windows starting before the index's compaction_start_time are never compacted (a bool on numbers,
    a SQL condition on a column expression, as `mature_when`)."""
    return window_start < rules.compaction_start_time


def plan_merges(
    candidates: list[SplitCandidate],
    params: MergePolicyParams,
    rules: WindowRules,
    now_secs: int,
    *,
    force_final: bool = False,
) -> MergePlan:
    """Merge operations for the given published splits; `force_final` treats every window as closed."""
    plan = MergePlan()
    groups: dict[tuple[CompactionScope, int], list[SplitCandidate]] = defaultdict(list)
    for split in sorted(candidates, key=lambda s: s.split_id):
        reason = _exclusion(split, params, rules, now_secs)
        if reason is not None:
            plan.skipped[split.split_id] = reason
            continue
        groups[(split.scope, split.window_start)].append(split)

    for (scope, window_start) in sorted(groups, key=_group_order):
        splits = groups[(scope, window_start)]
        closed = force_final or is_window_closed(window_start, scope.window_duration_secs,
                                                 rules.late_data_acceptance_secs, now_secs)
        if closed:
            _plan_final(scope, window_start, splits, params, plan)
        else:
            _plan_levels(scope, window_start, splits, params, plan)
    return plan


def head_group(split: SplitCandidate, params: MergePolicyParams, rules: WindowRules, now_secs: int) -> tuple:
    """The group of splits whose merges a plan takes from the smallest up: a scope's window, and in an open window
    one level of it (a closed window's final merges pack across levels, `_plan_final`)."""
    closed = is_window_closed(split.window_start, split.scope.window_duration_secs,
                              rules.late_data_acceptance_secs, now_secs)
    return (split.scope, split.window_start, None if closed else split_level(split.num_rows, params))


def heads_per_group(params: MergePolicyParams, operations: int) -> int:
    """How many of a group's smallest splits its first `operations` merges can take (each at most
    max_merge_factor): a pass that creates a few jobs needs these only, not the whole backlog of a window."""
    return max(1, operations) * params.max_merge_factor


def group_heads(candidates: list[SplitCandidate], params: MergePolicyParams, rules: WindowRules, now_secs: int,
                operations: int) -> list[SplitCandidate]:
    """The candidates `plan_merges` takes the first `operations` merges of every group from: those it would not
    skip for a reason of their own (`_exclusion`), at most `heads_per_group` per `head_group`, smallest first. The
    planner's repository selects the same in SQL; planned from these, each group's first `operations` merges are
    the ones planned from every candidate (each batch reads at most max_merge_factor splits past its start)."""
    groups: dict[tuple, list[SplitCandidate]] = defaultdict(list)
    for split in candidates:
        if _exclusion(split, params, rules, now_secs) is None:
            groups[head_group(split, params, rules, now_secs)].append(split)
    limit = heads_per_group(params, operations)
    return [split for group in groups.values() for split in sorted(group, key=_size_order)[:limit]]


def windows_cut_short(heads: list[SplitCandidate], params: MergePolicyParams, rules: WindowRules, now_secs: int,
                      operations: int) -> set[tuple[int, int]]:
    """(duration, start) of the windows where a group's heads filled `heads_per_group`: more of its splits may
    wait beyond them, so a pass that planned from the heads has not seen all the window's merges."""
    sizes = Counter(head_group(split, params, rules, now_secs) for split in heads)
    limit = heads_per_group(params, operations)
    return {(scope.window_duration_secs, start) for (scope, start, _level), n in sizes.items() if n >= limit}


def _group_order(key: tuple[CompactionScope, int]) -> tuple:
    scope, window_start = key
    return (scope.index_uid, scope.source_id, scope.partition_id, scope.doc_mapping_uid, scope.sort_schema,
            scope.window_duration_secs, window_start)


def _exclusion(split: SplitCandidate, params: MergePolicyParams, rules: WindowRules,
               now_secs: int) -> SkipReason | None:
    if before_compaction_start(split.window_start, rules):
        return SkipReason.BEFORE_COMPACTION_START
    if not split.scope.sort_schema:
        # No claimed order (a file registered without a sort schema): merging it would break MC-3 for the output.
        return SkipReason.UNSORTED
    if split.in_live_job:
        return SkipReason.IN_LIVE_JOB
    if is_mature(split, params, now_secs):
        return SkipReason.MATURE
    return None


def _size_order(split: SplitCandidate) -> tuple:
    return (split.num_rows, split.size_bytes, split.split_id)


def _fits(rows: int, size: int, params: MergePolicyParams) -> bool:
    return rows <= params.target_split_num_rows and size <= params.target_split_size_bytes


def _plan_levels(scope: CompactionScope, window_start: int, splits: list[SplitCandidate],
                 params: MergePolicyParams, plan: MergePlan) -> None:
    """Open window: merge within a level once merge_factor splits wait there (small jobs first)."""
    by_level: dict[int, list[SplitCandidate]] = defaultdict(list)
    for split in splits:
        by_level[split_level(split.num_rows, params)].append(split)
    for level in sorted(by_level):
        waiting = sorted(by_level[level], key=_size_order)
        while waiting:
            batch, full = _take_batch(waiting, params, params.max_merge_factor)
            # A batch that already fills the target size is worth merging even below merge_factor.
            if len(batch) >= params.merge_factor or (len(batch) >= 2 and full):
                plan.operations.append(_operation(scope, window_start, batch, level, MergeKind.LEVEL))
                waiting = waiting[len(batch):]
                continue
            for split in waiting:
                plan.skipped[split.split_id] = SkipReason.LEVEL_BELOW_MERGE_FACTOR
            break


def _plan_final(scope: CompactionScope, window_start: int, splits: list[SplitCandidate],
                params: MergePolicyParams, plan: MergePlan) -> None:
    """Closed window: pack whatever remains toward the target size (a major compaction, as in Apache Druid)."""
    waiting = sorted(splits, key=_size_order)
    while waiting:
        batch, _ = _take_batch(waiting, params, params.max_merge_factor)
        if len(batch) < 2:
            plan.skipped[batch[0].split_id] = SkipReason.ALONE_IN_WINDOW
            waiting = waiting[1:]
            continue
        level = max(split_level(s.num_rows, params) for s in batch)
        plan.operations.append(_operation(scope, window_start, batch, level, MergeKind.FINAL))
        waiting = waiting[len(batch):]


def _take_batch(waiting: list[SplitCandidate], params: MergePolicyParams,
                limit: int) -> tuple[list[SplitCandidate], bool]:
    """The longest prefix of `waiting` (at most `limit` splits) whose merge stays within the target size, at
    least one split; and whether the target size is what stopped it."""
    batch = [waiting[0]]
    rows, size = waiting[0].num_rows, waiting[0].size_bytes
    for split in waiting[1:limit]:
        if not _fits(rows + split.num_rows, size + split.size_bytes, params):
            return batch, True
        batch.append(split)
        rows += split.num_rows
        size += split.size_bytes
    return batch, False


def _operation(scope: CompactionScope, window_start: int, batch: list[SplitCandidate], level: int,
               kind: MergeKind) -> MergeOperation:
    return MergeOperation(
        scope=scope,
        window_start=window_start,
        split_ids=tuple(s.split_id for s in batch),
        level=level,
        kind=kind,
        num_rows=sum(s.num_rows for s in batch),
        size_bytes=sum(s.size_bytes for s in batch),
    )
