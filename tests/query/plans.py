"""Plans made by hand, for the plan cache and result cache tests that need a plan but no index."""

from __future__ import annotations

from strata_query.planning.plan import PlannedTimeRange, QueryPlan
from strata_query.query_cache import CachedPlan


def cached_plan(intervals: tuple[tuple[int | None, int | None], ...], *, files: int = 0,
                lookback_start: int | None = None, earliest: int | None = None) -> CachedPlan:
    """A cached plan of index `i:1` (state ("i:1", 1, 7)) over `files` files; on the default lookback (1000 s)
    when `lookback_start` is given."""
    on_lookback = lookback_start is not None
    time_range = PlannedTimeRange(column="ts", unit="seconds", intervals=intervals, includes_null_timestamps=False,
                                  source="default_lookback" if on_lookback else "where",
                                  default_lookback_secs=1000 if on_lookback else None)
    plan = QueryPlan(index_id="i", index_uid="i:1", tenant=None, sql="", predicate="", time_range=time_range,
                     stages=[], files=[], planning_ms=1.0, parsed=None, settings=None, scan_columns=[],
                     extra_filter=None, total_files=files, total_row_groups=0, total_bytes=0, total_rows=0)
    return CachedPlan(plan, ("i:1", 1, 7), lookback_start, earliest)
