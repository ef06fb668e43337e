"""A scheduler's planning pass reads only the heads of its windows (`merge_policy.group_heads`: per group, the
few smallest splits its first merges can take) and still creates exactly the jobs a pass reading every split of
those windows would: the first `budget` merges in `admission_order` are the same, over random backlogs with open
and closed windows, several scopes and levels, claimed, mature and unsorted splits. The SQL that selects the
heads on PostgreSQL is checked against the pure rule in test_planning_rules_on_postgres.py."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.domain.merge_policy import (
    MergePolicyParams,
    SplitCandidate,
    WindowRules,
    group_heads,
    head_group,
    heads_per_group,
    plan_merges,
)
from strata_core.domain.split import CompactionScope
from strata_planner.compaction.planning import admission_order
from tests.helpers import examples

NOW = 10_000_000
PARAMS = MergePolicyParams(min_level_num_docs=1000, merge_factor=3, max_merge_factor=4, maturation_period_secs=86_400,
                           target_split_num_rows=20_000, target_split_size_bytes=150_000)
RULES = WindowRules(compaction_start_time=NOW - 8 * 900, late_data_acceptance_secs=3600)
# Windows 1 and 2 are open, 6 and 7 closed, 9 before the compaction start (CS-3).
WINDOWS = [1, 2, 6, 7, 9]

backlog = st.lists(st.builds(
    lambda i, part, sort, window, rows, size, age, claimed: SplitCandidate(
        split_id=f"s{i:05d}", scope=CompactionScope("idx:1", "src", part, "dm", sort, 900),
        window_start=NOW - 900 * window, num_rows=rows, size_bytes=size, num_merge_ops=0,
        created_at_secs=NOW - age, in_live_job=claimed),
    st.integers(0, 99_999), st.sampled_from(["p1", "p2"]), st.sampled_from(["a@v1", "a@v1", "a@v1", ""]),
    st.sampled_from(WINDOWS),
    # Rows over levels 0..2 and a few mature; sizes that sometimes fill the target first.
    st.one_of(st.integers(1, 999), st.integers(1000, 8999), st.integers(19_000, 21_000)),
    st.one_of(st.integers(1, 40_000), st.integers(60_000, 80_000)),
    st.sampled_from([60, 60, 60, 90_000]), st.sampled_from([False, False, False, True]),
), max_size=150, unique_by=lambda c: c.split_id)


@settings(max_examples=examples(400), deadline=None)
@given(backlog, st.integers(1, 6))
def test_a_pass_planned_from_the_heads_admits_the_jobs_a_pass_over_every_split_would(splits, budget):
    heads = group_heads(splits, PARAMS, RULES, NOW, budget)
    per_group = Counter(head_group(s, PARAMS, RULES, NOW) for s in heads)
    assert all(n <= heads_per_group(PARAMS, budget) for n in per_group.values())
    assert not any(s.in_live_job for s in heads)

    everything = admission_order(plan_merges(splits, PARAMS, RULES, NOW).operations)[:budget]
    from_heads = admission_order(plan_merges(heads, PARAMS, RULES, NOW).operations)[:budget]
    assert from_heads == everything


def test_a_window_of_a_thousand_small_splits_yields_a_few_heads():
    splits = [SplitCandidate(f"s{i:05d}", CompactionScope("idx:1", "src", "p", "dm", "a@v1", 900), NOW - 900 * 6,
                             100 + i % 7, 1000, 0, NOW - 60) for i in range(1000)]
    heads = group_heads(splits, PARAMS, RULES, NOW, 2)
    assert len(heads) == 8
    assert admission_order(plan_merges(heads, PARAMS, RULES, NOW).operations)[:2] == \
        admission_order(plan_merges(splits, PARAMS, RULES, NOW).operations)[:2]


def test_a_later_smaller_merge_of_a_window_does_not_jump_ahead_of_its_first():
    # Four small splits make the window's first merge (400 rows); the next splits are heavier in bytes, so the
    # second merge stops at two of them (203 rows, the byte target reached). Ordered by rows alone, the second
    # would be admitted first, and a pass reading the first heads only would admit another merge than the full one.
    scope = CompactionScope("idx:1", "src", "p", "dm", "a@v1", 900)
    light = [SplitCandidate(f"a{i}", scope, NOW - 900 * 6, 100, 1000, 0, NOW - 60) for i in range(4)]
    heavy = [SplitCandidate(f"b{i}", scope, NOW - 900 * 6, 101 + i, 70_000, 0, NOW - 60) for i in range(3)]
    operations = admission_order(plan_merges(light + heavy, PARAMS, RULES, NOW).operations)
    assert [op.num_rows for op in operations] == [400, 203]
    heads = group_heads(light + heavy, PARAMS, RULES, NOW, 1)
    assert admission_order(plan_merges(heads, PARAMS, RULES, NOW).operations)[:1] == operations[:1]
