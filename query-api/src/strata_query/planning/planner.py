"""From SQL to a shaped scan: parse and validate against the index, take the time range from the WHERE clause
(or apply the default lookback, and say so), find the candidate splits of the overlapping windows for the
caller's tenant in one consistent read, then run the pruning cascade.

Tenancy is applied here, not in the SQL: a tenant's query only ever has its own partition's splits as
candidates, and `partition_id` in the SQL reads each split's own partition, so naming another tenant's partition
selects nothing.
"""

from __future__ import annotations

import asyncio
import time

import pyarrow as pa
from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncSession
from sqlglot import exp

from strata_core.domain.fields import FieldType, arrow_schema
from strata_core.domain.index_config import IndexSettings
from strata_core.errors import InvalidInput, NotFound
from strata_core.query.predicate import And, Compare, columns_of, describe, disjunction, to_nnf
from strata_core.query.time_range import TimeRanges, extract_time_range
from strata_core.sql import parse_query
from strata_core.sql.errors import QueryValidationError
from strata_core.sql.index_columns import PARTITION_COLUMN, with_partition_column
from strata_core.sql.query import parse_sql
from strata_core.sql.validation import query_statement, refuse_recursive, refuse_source, refuse_unlisted
from strata_core.sql.where import timestamp_literal
from strata_metastore.delete_repository import DeleteRepository
from strata_metastore.repositories import IndexRepository
from strata_query.planning.caches import ArtifactCache, FooterCache
from strata_query.planning.candidates import CandidateQuery, MetastoreCandidates
from strata_query.planning.cascade import CascadeContext, CascadeResult, run_cascade
from strata_query.planning.plan import PlannedTimeRange, QueryPlan
from strata_query.planning.stages import CASCADE

tracer = trace.get_tracer("strata.query")


class PlanTooLarge(InvalidInput):
    slug, title = "plan-too-large", "The query would read too many files"


def table_of(sql: str, statements: list[exp.Expression | None] | None = None) -> str:
    """The one table the query names (the index id); syntax errors surface with their position. `statements`:
    `parse_sql(sql)` when the caller has it (a plan parses its SQL once)."""
    tree = query_statement(parse_sql(sql) if statements is None else statements)
    refuse_recursive(tree)
    ctes = {cte.alias.lower() for cte in tree.find_all(exp.CTE)}
    tables = set()
    for table in tree.find_all(exp.Table):
        refuse_source(table, "FROM names an index")
        if table.args.get("db") or table.name.lower() not in ctes:
            refuse_unlisted(table)
            tables.add(table.name)
    if len(tables) != 1:
        named = f": this one names {', '.join(repr(t) for t in sorted(tables))}" if tables else ""
        raise QueryValidationError(f"a query reads exactly one index, named as its table{named}", "from")
    return tables.pop()


def query_schema(settings: IndexSettings) -> pa.Schema:
    """The columns a query of the index can name, as Arrow types: what a catalog listing shows of it."""
    return arrow_schema((f.name, f.type) for f in with_partition_column(settings).fields)


def _split_seconds(ranges: TimeRanges, is_seconds: bool) -> TimeRanges:
    return ranges if is_seconds else ranges.coarsen(1_000_000)


async def build_plan(session: AsyncSession, sql: str, *, tenant: str | None, now: float, max_files: int,
                     artifacts: ArtifactCache, footers: FooterCache) -> QueryPlan:
    """`session` must be fresh: every read of the plan runs in one read-only REPEATABLE READ transaction, so the
    totals, the candidates and their artifacts are one snapshot and every stage's counts agree."""
    started = time.perf_counter()
    await session.connection(execution_options={"isolation_level": "REPEATABLE READ", "postgresql_readonly": True})
    statements = parse_sql(sql)
    index_id = table_of(sql, statements)
    index = await IndexRepository(session).live_config(index_id)
    if index is None:
        raise QueryValidationError(f"there is no index {index_id!r} to query", "from") from NotFound(index_id)
    settings = IndexSettings.model_validate(index.config)
    query_settings = with_partition_column(settings)
    parsed = parse_query(sql, index_id=index_id, settings=query_settings, statements=statements,
                         now_us=int(now * 1_000_000))
    types = query_settings.field_types()
    ts = settings.timestamp_field
    is_seconds = types[ts] is not FieldType.TIMESTAMP

    lookback = settings.query.default_lookback_secs
    lookback_start = int(now) - lookback
    bound = lookback_start if is_seconds else lookback_start * 1_000_000
    lookback_filter = exp.GTE(this=exp.column(ts, quoted=True),
                              expression=exp.Literal.number(bound) if is_seconds else timestamp_literal(bound))
    # Each scan of the index without a bound on time reads the default lookback, for pruning and execution alike.
    scan_predicates, unbounded = [], []
    for scan in parsed.scans:
        if extract_time_range(scan.predicate, ts).bounded:
            scan_predicates.append(scan.predicate)
        else:
            unbounded.append(scan.position)
            scan_predicates.append(to_nnf(And((scan.predicate, Compare(ts, ">=", bound)))))
    predicate = to_nnf(disjunction(scan_predicates))
    ranges = extract_time_range(predicate, ts)
    source = "where_unbounded" if unbounded else "where"
    every_scan = len(unbounded) == len(parsed.scans)
    seconds = _split_seconds(ranges, is_seconds)

    constants = {PARTITION_COLUMN: lambda s: s.partition_id}
    stats_columns = frozenset(columns_of(predicate)) & frozenset(types)
    limit = max_files * 4 + 1000
    read = await MetastoreCandidates(session, index.index_uid).read(CandidateQuery(
        tenant=tenant, ranges=seconds, predicate=predicate, window_duration_secs=settings.window_duration_secs,
        split_columns={PARTITION_COLUMN: "partition_id"}, stats_columns=stats_columns,
        # The timestamp's statistics are the split's time range, which `ranges` applies already: PostgreSQL skips
        # them (one index probe per candidate less), the reference still uses them.
        prune_columns=stats_columns - {ts}, limit=limit))
    if read.truncated:
        raise PlanTooLarge(
            f"split statistics leave more than {limit} files to examine, so the query would read "
            f"more than the limit of {max_files}; narrow its time range or add predicates", errors=[
                {"field": "sql", "message": f"plan exceeds the file limit of {max_files}"}])
    if unbounded and read.in_time_range.files and not read.null_time_range_starts and (
            read.min_time_range_start >= lookback_start):
        # Every candidate lies inside the lookback: the filter holds for every row, so the scan skips it (and the
        # timestamp column, unless the query names it).
        unbounded = []
    # Applied to the scan itself when every scan reads the lookback; else to each such scan in the query's SQL.
    extra_filter = lookback_filter if unbounded and every_scan else None
    scan_filters = {} if every_scan else {position: lookback_filter for position in unbounded}
    # Deletes in force on candidates, read in the plan's snapshot: accepted before it, so applied to its scan.
    coverage = await DeleteRepository(session).in_force([c.split.split_id for c in read.files])
    pending = {c.delete_id: c.predicate for found in coverage.values() for c in found}
    # What the scan reads: the query's columns, plus the timestamp when the default lookback filters on it, plus
    # the columns a pending delete decides on.
    needed = set(parsed.columns_needed) - {PARTITION_COLUMN}
    if unbounded or not needed:
        needed.add(ts)
    for predicate_of_delete in pending.values():
        needed |= (columns_of(predicate_of_delete) & frozenset(types)) - {PARTITION_COLUMN}
    # partition_id is split metadata: prune on it at the split level only (every row of a split shares it).
    context = CascadeContext(read, predicate, constants, frozenset(needed), artifacts, footers)
    with tracer.start_as_current_span("index_prune") as span:
        cascade: CascadeResult = await asyncio.to_thread(run_cascade, CASCADE, context)
        span.set_attribute("strata.candidate_files", read.in_time_range.files)
        span.set_attribute("strata.kept_files", len(cascade.files))
    if len(cascade.files) > max_files:
        raise PlanTooLarge(f"the query would read {len(cascade.files)} files, more than the limit of {max_files}; "
                           "narrow its time range or add predicates", errors=[
                               {"field": "sql", "message": f"plan exceeds the file limit of {max_files}"}])

    # In the index's declared order (partition_id last), so `SELECT *` answers the columns as the index lists them.
    read = needed | (set(parsed.columns_needed) & {PARTITION_COLUMN})
    scan_columns = [(name, field_type) for name, field_type in types.items() if name in read]
    time_range = PlannedTimeRange(
        column=ts, unit="seconds" if is_seconds else "microseconds",
        intervals=tuple((i.lo, i.hi) for i in ranges.intervals), includes_null_timestamps=ranges.includes_null,
        source="where" if source == "where" else "default_lookback",
        default_lookback_secs=None if source == "where" else lookback)
    files = cascade.files
    for part in files:
        part.pending_deletes = [c.delete_id for c in coverage.get(part.split_id, ())]
    pending = {d: p for d, p in pending.items() if any(d in f.pending_deletes for f in files)}
    return QueryPlan(
        index_id=index_id, index_uid=index.index_uid, tenant=tenant, sql=sql, predicate=describe(predicate),
        time_range=time_range, stages=cascade.stages, files=files,
        planning_ms=round((time.perf_counter() - started) * 1000, 3), parsed=parsed, settings=settings,
        scan_columns=scan_columns, extra_filter=extra_filter, total_files=len(files),
        total_row_groups=sum(len(f.row_groups) for f in files), total_bytes=sum(f.bytes for f in files),
        total_rows=sum(f.rows for f in files), pending_deletes=pending, scan_filters=scan_filters)
