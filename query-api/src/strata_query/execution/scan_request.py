"""What an engine runs for a plan: the shaped scan (files, row groups, columns), a filter the planner adds, and
the query's SQL over the scan's view, all rendered in that engine's dialect; and the WHERE clause as a predicate,
with which the in-process scan drops rows that cannot match before the engine reads them."""

from __future__ import annotations

from dataclasses import dataclass

from strata_core.domain.fields import FieldType
from strata_core.query.predicate import TRUE, Predicate
from strata_core.query.predicate_json import predicate_to_json
from strata_core.sql.index_columns import PARTITION_COLUMN
from strata_jobs.pruned_scan import ScanTask
from strata_query.execution.result_stream import engine_limit
from strata_query.planning.plan import QueryPlan

VIEW = "{view}"


@dataclass(frozen=True, slots=True)
class ScanRequest:
    query_id: str
    tasks: list[ScanTask]
    columns: list[tuple[str, FieldType]]
    # The user's query over the placeholder view name, in the engine's dialect, its LIMIT lowered for the cap.
    sql_template: str
    # The planner's own condition (the default lookback) in the engine's dialect.
    extra_filter: str | None
    row_cap: int | None = None
    # Rows of the kept row groups (the plan's count); None when unknown.
    rows: int | None = None
    # The query's WHERE clause in negation normal form (the SQL applies it in full either way).
    predicate: Predicate = TRUE
    # Fault injection for tests: scans wait this long before reading, so a query can be caught running.
    scan_delay_secs: float = 0.0

    @property
    def tag(self) -> str:
        return f"strata-query-{self.query_id}"

    @property
    def view(self) -> str:
        return f"strata_scan_{self.query_id.lower()}"

    @property
    def sql(self) -> str:
        return self.sql_template.replace(VIEW, self.view)


def scan_request(query_id: str, plan: QueryPlan, dialect: str, row_cap: int | None = None,
                 scan_delay_secs: float = 0.0) -> ScanRequest:
    """The plan's scan in `dialect` (an engine's, e.g. "duckdb", "spark")."""
    tasks = [ScanTask(uri=f.uri, row_groups=f.row_groups, constants={PARTITION_COLUMN: f.partition_id},
                      drop=None if (drop := plan.drop_of(f)) is None else predicate_to_json(drop))
             for f in plan.files]
    extra = None if plan.extra_filter is None else plan.extra_filter.sql(dialect=dialect, identify=True)
    return ScanRequest(query_id=query_id, tasks=tasks, columns=plan.scan_columns,
                       sql_template=plan.parsed.sql_for(VIEW, dialect, engine_limit(row_cap), plan.scan_filters,
                                                         tuple(plan.columns)), extra_filter=extra,
                       row_cap=row_cap, rows=plan.total_rows, predicate=plan.parsed.predicate,
                       scan_delay_secs=scan_delay_secs)
