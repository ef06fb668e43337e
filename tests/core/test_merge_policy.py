"""The merge policy as a pure function: properties over random split sets (order independence, no split lost or
in two operations, no operation under two splits, never across scope or window (CS-1, CS-2), never before
compaction_start_time (CS-3), never a mature split), and the reasons it gives."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.domain.merge_policy import (
    MergeKind,
    MergePolicyParams,
    SkipReason,
    SplitCandidate,
    WindowRules,
    is_mature,
    plan_merges,
    split_level,
)
from strata_core.domain.split import CompactionScope
from tests.helpers import examples

NOW = 10_000_000
PARAMS = MergePolicyParams(min_level_num_docs=1000, merge_factor=3, max_merge_factor=4, maturation_period_secs=86_400,
                           target_split_num_rows=20_000, target_split_size_bytes=10**9)
RULES = WindowRules(compaction_start_time=NOW - 20 * 900, late_data_acceptance_secs=3600)


def scope(partition: str = "p", sort: str = "a@v1", duration: int = 900) -> CompactionScope:
    return CompactionScope("idx:1", "src", partition, "dm", sort, duration)


candidate_strategy = st.builds(
    lambda i, part, sort, window, rows, age, claimed: SplitCandidate(
        split_id=f"s{i:05d}", scope=scope(part, sort), window_start=NOW - 900 * window, num_rows=rows,
        size_bytes=rows * 10, num_merge_ops=0, created_at_secs=NOW - age, in_live_job=claimed),
    st.integers(0, 99_999), st.sampled_from(["p1", "p2"]), st.sampled_from(["a@v1", "b@v1", ""]),
    st.integers(0, 30), st.integers(1, 30_000), st.integers(0, 200_000), st.booleans(),
)
candidates_strategy = st.lists(candidate_strategy, max_size=60, unique_by=lambda c: c.split_id)


@settings(max_examples=examples(300), deadline=None)
@given(candidates_strategy, st.booleans(), st.randoms())
def test_policy_invariants(candidates, force_final, rnd):
    plan = plan_merges(candidates, PARAMS, RULES, NOW, force_final=force_final)
    by_id = {c.split_id: c for c in candidates}

    shuffled = list(candidates)
    rnd.shuffle(shuffled)
    assert plan_merges(shuffled, PARAMS, RULES, NOW, force_final=force_final) == plan, "order independent"

    seen: set[str] = set()
    for op in plan.operations:
        assert len(op.split_ids) >= 2
        members = [by_id[s] for s in op.split_ids]
        assert not seen & set(op.split_ids), "a split in two operations"
        seen |= set(op.split_ids)
        assert {m.scope for m in members} == {op.scope}, "CS-1"
        assert {m.window_start for m in members} == {op.window_start}, "CS-2 / TW-3"
        assert op.window_start >= RULES.compaction_start_time, "CS-3"
        assert not any(is_mature(m, PARAMS, NOW) for m in members), "mature split merged"
        assert not any(m.in_live_job for m in members), "claimed split merged"
        assert op.num_rows == sum(m.num_rows for m in members)
        assert len(op.split_ids) <= PARAMS.max_merge_factor
    # Every split is either in an operation or skipped with a reason, never both, never lost.
    assert seen.isdisjoint(plan.skipped)
    assert seen | set(plan.skipped) == set(by_id)


def _splits(n: int, rows: int, window: int = 1, **kw) -> list[SplitCandidate]:
    return [SplitCandidate(f"w{window}-{i:03d}", kw.get("scope", scope()), NOW - 900 * window, rows, rows * 10, 0,
                           NOW - 60) for i in range(n)]


def test_levels_grow_by_three():
    assert [split_level(n, PARAMS) for n in (1, 999, 1000, 2999, 3000, 9000)] == [0, 0, 1, 1, 2, 3]


def test_open_window_waits_for_merge_factor():
    plan = plan_merges(_splits(2, 100), PARAMS, RULES, NOW)
    assert plan.operations == []
    assert set(plan.skipped.values()) == {SkipReason.LEVEL_BELOW_MERGE_FACTOR}
    plan = plan_merges(_splits(9, 100), PARAMS, RULES, NOW)
    assert [len(op.split_ids) for op in plan.operations] == [4, 4]
    assert all(op.kind is MergeKind.LEVEL for op in plan.operations)
    assert list(plan.skipped.values()) == [SkipReason.LEVEL_BELOW_MERGE_FACTOR]


def test_closed_window_gets_a_final_merge_toward_target():
    closed = 10  # 10 windows ago: end + late window has passed
    plan = plan_merges(_splits(2, 100, window=closed), PARAMS, RULES, NOW)
    assert [op.kind for op in plan.operations] == [MergeKind.FINAL]
    forced = plan_merges(_splits(2, 100), PARAMS, RULES, NOW, force_final=True)
    assert [op.kind for op in forced.operations] == [MergeKind.FINAL]


def test_reasons_for_skipped_splits():
    old = _splits(3, 100, window=40)  # before compaction_start_time
    mature = _splits(3, 25_000, window=2)
    unsorted = _splits(3, 100, window=3, scope=scope(sort=""))
    plan = plan_merges(old + mature + unsorted, PARAMS, RULES, NOW)
    assert plan.operations == []
    assert {plan.skipped[s.split_id] for s in old} == {SkipReason.BEFORE_COMPACTION_START}
    assert {plan.skipped[s.split_id] for s in mature} == {SkipReason.MATURE}
    assert {plan.skipped[s.split_id] for s in unsorted} == {SkipReason.UNSORTED}


def test_target_size_bounds_every_operation():
    rng = random.Random(3)
    splits = [SplitCandidate(f"s{i}", scope(), NOW - 900 * 12, rng.randint(1000, 9000), 1, 0, NOW) for i in range(40)]
    plan = plan_merges(splits, PARAMS, RULES, NOW)
    assert plan.operations
    assert all(op.num_rows <= PARAMS.target_split_num_rows for op in plan.operations)
