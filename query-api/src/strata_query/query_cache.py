"""The plan cache and the result cache: what a repeated query skips, its planning and its run, for as long as
nothing its plan read has changed. One mechanism: a result is cached with the plan it was run from, checked by the
same read, and leaves with it.

A dashboard re-runs the same SQL every few seconds, and planning (parsing, half a dozen metastore reads, the
pruning cascade) costs more than running a small pruned plan. A plan is kept with what it was built from, read in
its own snapshot: the index incarnation and settings version, and the index's plan generation, which triggers
raise with every change of its published splits or artifact snapshots (migration 0006). Reusing it costs one
metastore read of those three; any change and the plan is built again.

A query without a time bound reads the default lookback, which moves with the clock. Its plan is reused only when
the move cannot change the result: the plan added no lookback filter (every candidate file lay inside the
lookback) and every kept file still starts inside it. A file leaving the lookback would need the filter back.

The result cache holds the finished results run from a cached plan (per engine and row cap). Strata's SQL reads
no clock but `now()` (the SQL catalog, sql/catalog.py), and a plan whose query reads it is never kept, so the same
statement over the same immutable files answers the same rows: a result holds exactly as long as its plan does,
checked by the same one read, and a repeated dashboard query is answered without reading or computing anything.
The bound is on the results' Arrow bytes, the results of the least recently used plans leaving first.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass, field

import pyarrow as pa
from sqlalchemy.ext.asyncio import AsyncSession

from strata_query.plan_state import IndexState, earliest_start, index_state
from strata_query.planning.plan import QueryPlan

# How many plans and files are kept, and the largest result, are settings (`STRATA_QUERY_PLAN_CACHE_*`,
# `STRATA_QUERY_RESULT_CACHE_*`). A plan reading more than a tenth of all the files the cache may hold is not kept:
# its planning is a small part of its cost, and its file list would push many plans out.
PLAN_SHARE_OF_FILES = 10
# Results of one plan by (engine, row cap): both change what a run answers (the cap cuts it; the engines agree on
# answers, but a request forcing one asks for a run there).
ResultKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class CachedResult:
    """A finished result, never one cut at its row cap, as the engine produced it."""

    schema: pa.Schema
    batches: tuple[pa.RecordBatch, ...]
    nbytes: int


@dataclass(frozen=True, slots=True)
class CachedPlan:
    plan: QueryPlan
    state: IndexState
    # For a plan on the default lookback: the lookback's start it was planned with, and the earliest start of
    # its kept files (None: it keeps none); the plan holds while the lookback's start stays at or before it.
    lookback_start: int | None
    earliest_start: int | None
    # The result cache of this plan, filled as its runs finish (PlanCache.cache_result).
    results: dict[ResultKey, CachedResult] = field(default_factory=dict, init=False, compare=False)


async def cacheable(session: AsyncSession, plan: QueryPlan, cache: PlanCache) -> CachedPlan | None:
    """What to cache of a plan just built, read in the plan's own snapshot (`session` is the one that built it);
    None when the plan is not to be cached."""
    if plan.total_files > cache.max_files // PLAN_SHARE_OF_FILES:
        return None
    if plan.parsed.uses_now or plan.scan_filters:
        # now() and a per-scan lookback move with every request: the plan (and its answer) with them.
        return None
    state = await index_state(session, plan.index_uid)
    if state is None:
        return None
    if plan.time_range.source == "where":
        return CachedPlan(plan, state, None, None)
    if plan.extra_filter is not None:
        return None  # the lookback filter's bound moves with every request
    lookback_start = plan.time_range.lookback_start_secs
    if lookback_start is None:
        return None
    earliest, all_timed = None, True
    if plan.files:
        earliest, all_timed = await earliest_start(session, [f.split_id for f in plan.files])
    if not all_timed:
        return None  # a file without timestamps: the planner's rule, not this one, decides what it needs
    return CachedPlan(plan, state, lookback_start, earliest)


class PlanCache:
    """Plans by (SQL, tenant), least recently used dropped first, with their cached results."""

    def __init__(self, max_plans: int = 256, max_files: int = 20_000, max_result_bytes: int = 0,
                 max_one_result_bytes: int = 1024 * 1024) -> None:
        self.max_plans = max_plans
        self.max_files = max_files
        self.max_result_bytes = max_result_bytes
        self.max_one_result_bytes = max_one_result_bytes
        self.files = 0
        self.result_bytes = 0
        self._plans: OrderedDict[tuple[str, str | None], CachedPlan] = OrderedDict()

    def candidate(self, sql: str, tenant: str | None) -> CachedPlan | None:
        kept = self._plans.get((sql, tenant))
        if kept is not None:
            self._plans.move_to_end((sql, tenant))
        return kept

    def put(self, sql: str, tenant: str | None, kept: CachedPlan) -> None:
        self.drop(sql, tenant)
        self._plans[(sql, tenant)] = kept
        self.files += kept.plan.total_files
        while len(self._plans) > self.max_plans or self.files > self.max_files:
            _, oldest = self._plans.popitem(last=False)
            self._forget(oldest)

    def drop(self, sql: str, tenant: str | None) -> None:
        kept = self._plans.pop((sql, tenant), None)
        if kept is not None:
            self._forget(kept)

    @property
    def result_room(self) -> int:
        """The most bytes one result may hold to be cached (0: results are not cached)."""
        return min(self.max_one_result_bytes, self.max_result_bytes)

    def cache_result(self, sql: str, tenant: str | None, kept: CachedPlan, key: ResultKey, result: CachedResult
                     ) -> bool:
        """Caches a finished result with the plan it was run from, while that plan is still the cached one and the
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

    def _forget(self, kept: CachedPlan) -> None:
        self.files -= kept.plan.total_files
        self._drop_results(kept, list(kept.results))

    def _drop_results(self, kept: CachedPlan, keys: list[ResultKey]) -> None:
        for key in keys:
            result = kept.results.pop(key, None)
            if result is not None:
                self.result_bytes -= result.nbytes

    def __len__(self) -> int:
        return len(self._plans)


def reuse(kept: CachedPlan, state: IndexState | None, now: float) -> QueryPlan | None:
    """The cached plan as it holds now, as a copy (callers set its planning time on theirs); None when it no
    longer holds."""
    if state != kept.state:
        return None
    plan = kept.plan
    time_range = plan.time_range
    if kept.lookback_start is not None:
        lookback = time_range.default_lookback_secs or 0
        start = int(now) - lookback
        if kept.earliest_start is not None and start > kept.earliest_start:
            return None
        # The time range as a plan built now would show it: the lookback's start moved with the clock.
        shift = start - kept.lookback_start
        if time_range.unit != "seconds":
            shift *= 1_000_000
        (lo, hi), *rest = time_range.intervals
        if hi is not None and lo + shift > hi:
            return None
        time_range = dataclasses.replace(time_range, intervals=((lo + shift, hi), *rest))
    return dataclasses.replace(plan, time_range=time_range)
