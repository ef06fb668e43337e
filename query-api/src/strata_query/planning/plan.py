"""A query's plan as query-api keeps, reuses and runs it. The API's view of it (`schemas.PlanOut`) is built from
this only in the router, where a plan leaves the service (EXPLAIN, an asynchronous plan's record)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp

from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import IndexSettings
from strata_core.object_requests import ObjectRequests
from strata_core.query.predicate import Predicate, disjunction
from strata_core.sql import ParsedQuery


@dataclass(frozen=True, slots=True)
class StageCount:
    """One stage of the pruning cascade as EXPLAIN shows it: what was left before and after it."""

    stage: str
    files_before: int
    files_after: int
    row_groups_before: int
    row_groups_after: int
    bytes_before: int
    bytes_after: int


@dataclass(slots=True)
class FilePart:
    """What a scan reads of one file: the kept row groups, their column chunks' byte ranges, the columns."""

    split_id: str
    partition_id: str
    uri: str
    row_groups: list[int]
    row_group_rows: list[int]
    byte_ranges: list[list[tuple[int, int]]]
    # Per kept row group, the (offset, length) of each GET a scan makes: the byte ranges as the reader coalesces
    # them.
    ranged_gets: list[list[tuple[int, int]]]
    columns: list[str]
    bytes: int
    rows: int
    pruned_with: str
    # Deletes in force on the split (accepted, not yet rewritten): the scan hides the rows they match.
    pending_deletes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlannedTimeRange:
    """The time range the plan reads, in the timestamp column's unit: from the WHERE clause, or the default
    lookback when the query has no bound on time."""

    column: str
    unit: Literal["seconds", "microseconds"]
    # Inclusive [lo, hi]; None is unbounded.
    intervals: tuple[tuple[int | None, int | None], ...]
    includes_null_timestamps: bool
    source: Literal["where", "default_lookback"]
    default_lookback_secs: int | None

    @property
    def lookback_start_secs(self) -> int | None:
        """On the default lookback: its start in seconds (the first interval's lower bound)."""
        if self.source != "default_lookback" or not self.intervals or self.intervals[0][0] is None:
            return None
        lo = self.intervals[0][0]
        return lo if self.unit == "seconds" else lo // 1_000_000


@dataclass(slots=True)
class QueryPlan:
    index_id: str
    index_uid: str
    tenant: str | None
    sql: str
    # The WHERE clause as planned (negation normal form, the default lookback included), for people.
    predicate: str
    time_range: PlannedTimeRange
    stages: list[StageCount]
    files: list[FilePart]
    planning_ms: float
    parsed: ParsedQuery
    settings: IndexSettings
    scan_columns: list[tuple[str, FieldType]]
    # A condition the planner adds (the default lookback), applied to the scan before the query's SQL.
    extra_filter: exp.Expression | None
    total_files: int
    total_row_groups: int
    total_bytes: int
    total_rows: int
    # Deletes in force on files of the plan, by id: each file's `pending_deletes` names those the scan applies.
    pending_deletes: dict[str, Predicate] = field(default_factory=dict)
    # The default lookback of the scans (by position in the query) that have no bound on time, when other scans
    # of the same query do: applied to each such reference in the query's SQL rather than to the shared scan.
    scan_filters: dict[int, exp.Expression] = field(default_factory=dict)

    def drop_of(self, part: FilePart) -> Predicate | None:
        """What the scan of a file hides: the rows any delete in force on it matches."""
        if not part.pending_deletes:
            return None
        return disjunction(self.pending_deletes[d] for d in part.pending_deletes)

    @property
    def columns(self) -> list[str]:
        return [name for name, _ in self.scan_columns]

    def object_requests(self) -> ObjectRequests:
        """The requests the local engine's scan of this plan makes with nothing in its RAM tier: it opens each file
        once (a HEAD) and makes the ranged GETs read shaping recorded, the footer coming from planning's cache.
        On Spark, each task also reads its file's footer: one GET more per file (two for a footer past Arrow's
        first 64 KiB read)."""
        gets = [read for part in self.files for reads in part.ranged_gets for read in reads]
        return ObjectRequests(gets=len(gets), heads=sum(1 for part in self.files if part.row_groups),
                              bytes_read=sum(length for _, length in gets))
