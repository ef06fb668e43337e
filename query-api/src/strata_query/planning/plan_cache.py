"""Plans of repeated queries, kept while nothing they read has changed.

A dashboard re-runs the same SQL every few seconds, and planning (parsing, half a dozen metastore reads, the
pruning cascade) costs more than running a small pruned plan. A plan is kept with what it was built from, read in
its own snapshot: the index incarnation and settings version, and the index's plan generation, which triggers
raise with every change of its published splits or artifact snapshots (migration 0006). Reusing it costs one
metastore read of those three; any change and the plan is built again.

A query without a time bound reads the default lookback, which moves with the clock. Its plan is reused only when
the move cannot change the result: the plan added no lookback filter (every candidate file lay inside the
lookback) and every kept file still starts inside it. A file leaving the lookback would need the filter back.

A kept plan also keeps the finished results run from it (per engine and row cap). Strata's SQL has no
nondeterministic function (the allowlist in sql/validation.py), so the same statement over the same immutable
files answers the same rows: a result holds exactly as long as its plan does, checked by the same one read, and a
repeated dashboard query is answered without reading or computing anything. The bound is on the results' Arrow
bytes, the results of the least recently used plans leaving first.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass, field

import pyarrow as pa
from sqlalchemy.ext.asyncio import AsyncSession

from strata_query.planning.planner import QueryPlan
from strata_shared.metastore.plan_state import IndexState, earliest_start, index_state

MAX_PLANS = 256
# Plans reading more files than this are not kept: their planning is a small part of their cost, and their
# file lists would hold memory. All kept plans together hold at most MAX_FILES_IN_ALL files (a file of a plan is
# about half a kilobyte: some 10 MB in all).
MAX_FILES_PER_PLAN = 2_000
MAX_FILES_IN_ALL = 20_000
# A result larger than this is not kept: a dashboard panel's answer is a few rows, and one large result would push
# many of them out.
MAX_RESULT_BYTES = 1024 * 1024
# Results of one plan by (engine, row cap): both change what a run answers (the cap cuts it; the engines agree on
# answers, but a request forcing one asks for a run there).
ResultKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class KeptResult:
    """A finished result, never one cut at its row cap, as the engine produced it."""

    schema: pa.Schema
    batches: tuple[pa.RecordBatch, ...]
    nbytes: int


@dataclass(frozen=True, slots=True)
class KeptPlan:
    plan: QueryPlan
    state: IndexState
    # For a plan on the default lookback: the lookback's start it was planned with, and the earliest start of
    # its kept files (None: it keeps none); the plan holds while the lookback's start stays at or before it.
    lookback_start: int | None
    earliest_start: int | None
    # Filled as runs of this plan finish (PlanCache.keep_result); a copy of the plan starts without them.
    results: dict[ResultKey, KeptResult] = field(default_factory=dict, init=False, compare=False)


async def keepable(session: AsyncSession, plan: QueryPlan) -> KeptPlan | None:
    """What to keep of a plan just built, read in the plan's own snapshot (`session` is the one that built it);
    None when the plan is not to be kept."""
    out = plan.out
    if out.total_files > MAX_FILES_PER_PLAN:
        return None
    state = await index_state(session, out.index_uid)
    if state is None:
        return None
    if out.time_range.source == "where":
        return KeptPlan(plan, state, None, None)
    if plan.extra_filter is not None:
        return None  # the lookback filter's bound moves with every request
    lookback_start = _lookback_start(plan)
    if lookback_start is None:
        return None
    earliest, all_timed = None, True
    if out.files:
        earliest, all_timed = await earliest_start(session, [f.split_id for f in out.files])
    if not all_timed:
        return None  # a file without timestamps: the planner's rule, not this one, decides what it needs
    return KeptPlan(plan, state, lookback_start, earliest)


def _lookback_start(plan: QueryPlan) -> int | None:
    """The lookback's start in seconds, as the plan's time range shows it (its first interval's lower bound)."""
    intervals = plan.out.time_range.intervals
    if not intervals or intervals[0][0] is None:
        return None
    lo = intervals[0][0]
    return lo if plan.out.time_range.unit == "seconds" else lo // 1_000_000


class PlanCache:
    """Plans by (SQL, tenant), least recently used dropped first, with their results."""

    def __init__(self, max_plans: int = MAX_PLANS, max_files: int = MAX_FILES_IN_ALL,
                 max_result_bytes: int = 0) -> None:
        self.max_plans = max_plans
        self.max_files = max_files
        self.max_result_bytes = max_result_bytes
        self.files = 0
        self.result_bytes = 0
        self._plans: OrderedDict[tuple[str, str | None], KeptPlan] = OrderedDict()

    def candidate(self, sql: str, tenant: str | None) -> KeptPlan | None:
        kept = self._plans.get((sql, tenant))
        if kept is not None:
            self._plans.move_to_end((sql, tenant))
        return kept

    def put(self, sql: str, tenant: str | None, kept: KeptPlan) -> None:
        self.drop(sql, tenant)
        self._plans[(sql, tenant)] = kept
        self.files += kept.plan.out.total_files
        while len(self._plans) > self.max_plans or self.files > self.max_files:
            _, oldest = self._plans.popitem(last=False)
            self._forget(oldest)

    def drop(self, sql: str, tenant: str | None) -> None:
        kept = self._plans.pop((sql, tenant), None)
        if kept is not None:
            self._forget(kept)

    @property
    def result_room(self) -> int:
        """The most bytes one result may hold to be kept (0: results are not kept)."""
        return min(MAX_RESULT_BYTES, self.max_result_bytes)

    def keep_result(self, sql: str, tenant: str | None, kept: KeptPlan, key: ResultKey, result: KeptResult
                    ) -> bool:
        """Keeps a finished result with the plan it was run from, while that plan is still the kept one and the
        result fits; older plans' results leave to make room."""
        if result.nbytes > self.result_room or self._plans.get((sql, tenant)) is not kept:
            return False
        self._drop_results(kept, [key])
        kept.results[key] = result
        self.result_bytes += result.nbytes
        for other in list(self._plans.values()):
            if self.result_bytes <= self.max_result_bytes:
                break
            self._drop_results(other, [k for k in other.results if other is not kept or k != key])
        return True

    def _forget(self, kept: KeptPlan) -> None:
        self.files -= kept.plan.out.total_files
        self._drop_results(kept, list(kept.results))

    def _drop_results(self, kept: KeptPlan, keys: list[ResultKey]) -> None:
        for key in keys:
            result = kept.results.pop(key, None)
            if result is not None:
                self.result_bytes -= result.nbytes

    def __len__(self) -> int:
        return len(self._plans)


def reuse(kept: KeptPlan, state: IndexState | None, now: float) -> QueryPlan | None:
    """The kept plan as it holds now, as a copy (callers set the engine on theirs); None when it no longer
    holds."""
    if state != kept.state:
        return None
    plan = kept.plan
    out = plan.out
    if kept.lookback_start is not None:
        lookback = out.time_range.default_lookback_secs or 0
        start = int(now) - lookback
        if kept.earliest_start is not None and start > kept.earliest_start:
            return None
        # The time range as a plan built now would show it: the lookback's start moved with the clock.
        shift = start - kept.lookback_start
        if out.time_range.unit != "seconds":
            shift *= 1_000_000
        (lo, hi), *rest = out.time_range.intervals
        if hi is not None and lo + shift > hi:
            return None
        time_range = out.time_range.model_copy(update={"intervals": [(lo + shift, hi), *rest]})
        out = out.model_copy(update={"time_range": time_range})
    else:
        out = out.model_copy()
    return dataclasses.replace(plan, out=out)
