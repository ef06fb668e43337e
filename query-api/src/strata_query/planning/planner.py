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
from dataclasses import asdict, dataclass, fields

from opentelemetry import trace
from sqlalchemy.ext.asyncio import AsyncSession
from sqlglot import exp

from strata_query.planning.caches import ArtifactCache, FooterCache
from strata_query.planning.cascade import (
    CandidateFile,
    CascadeResult,
    FilePart,
    PublishedArtifact,
    passes_split_stats,
    run_cascade,
    split_stage_count,
)
from strata_query.planning.schemas import FilePartOut, PlanOut, StageOut, TimeRangeOut
from strata_query.sql import ParsedQuery, parse_query
from strata_query.sql.errors import QueryValidationError
from strata_query.sql.query import parse_sql
from strata_query.sql.validation import statement_of
from strata_query.sql.where import timestamp_literal
from strata_shared.domain.fields import FieldType
from strata_shared.domain.index_config import FieldSpec, IndexSettings
from strata_shared.errors import InvalidInput, NotFound
from strata_shared.metastore.indexing_repository import IndexingRepository
from strata_shared.metastore.repositories import IndexRepository, SplitRepository
from strata_shared.query.predicate import And, Compare, columns_of, describe, to_nnf
from strata_shared.query.time_range import TimeRanges, extract_time_range

PARTITION_COLUMN = "partition_id"
_FILE_PART_FIELDS = tuple(f.name for f in fields(FilePart))
tracer = trace.get_tracer("strata.query")


class PlanTooLarge(InvalidInput):
    slug, title = "plan-too-large", "The query would read too many files"


@dataclass(slots=True)
class QueryPlan:
    parsed: ParsedQuery
    settings: IndexSettings
    out: PlanOut
    scan_columns: list[tuple[str, FieldType]]
    # A condition the planner adds (the default lookback), applied to the scan before the query's SQL.
    extra_filter: exp.Expression | None


def table_of(sql: str, statements: list[exp.Expression | None] | None = None) -> str:
    """The one table the query names (the index id); syntax errors surface with their position. `statements`:
    `parse_sql(sql)` when the caller has it (a plan parses its SQL once)."""
    tree = statement_of(parse_sql(sql) if statements is None else statements)
    tables = {t.name for t in tree.find_all(exp.Table)}
    if len(tables) != 1:
        raise QueryValidationError("a query reads exactly one index, named as its table", "from")
    return tables.pop()


def _query_settings(settings: IndexSettings) -> IndexSettings:
    """The index schema as queries see it: its fields plus `partition_id`, the split's tenant."""
    if any(f.name == PARTITION_COLUMN for f in settings.fields):
        return settings
    return settings.model_copy(update={"fields": [*settings.fields,
                                                  FieldSpec(name=PARTITION_COLUMN, type=FieldType.STRING)]})


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
    index = await IndexRepository(session).get_live(index_id)
    if index is None:
        raise QueryValidationError(f"there is no index {index_id!r} to query", "from") from NotFound(index_id)
    settings = IndexSettings.model_validate(index.config)
    query_settings = _query_settings(settings)
    parsed = parse_query(sql, index_id=index_id, settings=query_settings, statements=statements)
    types = query_settings.field_types()
    ts = settings.timestamp_field
    is_seconds = types[ts] is not FieldType.TIMESTAMP

    predicate = to_nnf(parsed.predicate)
    ranges = extract_time_range(predicate, ts)
    extra_filter = None
    lookback = settings.query.default_lookback_secs
    if ranges.bounded:
        source = "where"
    else:
        # No bound on time in the query: the default lookback applies, to pruning and to execution alike.
        source = "where_unbounded"
        lo = int(now) - lookback
        lookback_start = lo
        bound = lo if is_seconds else lo * 1_000_000
        predicate = to_nnf(And((predicate, Compare(ts, ">=", bound))))
        ranges = extract_time_range(predicate, ts)
        extra_filter = exp.GTE(this=exp.column(ts, quoted=True),
                               expression=exp.Literal.number(bound) if is_seconds else timestamp_literal(bound))
    seconds = _split_seconds(ranges, is_seconds)

    splits = SplitRepository(session)
    totals = await splits.published_totals(index.index_uid, tenant)
    window = settings.window_duration_secs
    lo = seconds.lower
    hi = seconds.upper
    constants = {PARTITION_COLUMN: lambda s: s.partition_id}
    # Time range and split min/max in PostgreSQL, in one statement: only the splits it cannot rule out come back
    # (a busy range has hundreds of candidates and keeps a few), with the counts of every candidate.
    stats_columns = set(columns_of(predicate)) & set(types)
    found = None if seconds.is_empty else await splits.published_candidates(
        index.index_uid, tenant, None if lo is None else lo - lo % window, hi,
        include_window_zero=seconds.includes_null, ranges=seconds, predicate=predicate,
        split_columns={PARTITION_COLUMN: "partition_id"}, stats_columns=stats_columns,
        # The timestamp's statistics are the split's time range, which `ranges` applies already: PostgreSQL skips
        # them (one index probe per candidate less), the reference below still uses them.
        prune_columns=stats_columns - {ts}, limit=max_files * 4 + 1000)
    if found is not None and found.truncated:
        raise PlanTooLarge(
            f"split statistics leave more than {max_files * 4 + 1000} files to examine, so the query would read "
            f"more than the limit of {max_files}; narrow its time range or add predicates", errors=[
                {"field": "sql", "message": f"plan exceeds the file limit of {max_files}"}])
    # The reference rule over what PostgreSQL kept: the SQL never drops a split it keeps, and where the SQL is
    # unsure (an edge of types) the reference decides, so the plan is the one the reference alone would make.
    survivors = [] if found is None else [
        m for m in found.splits if passes_split_stats(predicate, m.summary(), constants)]
    split_stage = split_stage_count(
        (0, 0, 0) if found is None else (found.files, found.row_groups, found.row_group_bytes),
        [m.summary() for m in survivors])
    published = await IndexingRepository(session).published_artifacts([m.split_id for m in survivors])
    candidates = [CandidateFile(m, None if m.split_id not in published else [
        PublishedArtifact(a.artifact_type, a.column_name, a.uri, a.content_hash) for a in published[m.split_id]])
        for m in survivors]
    if extra_filter is not None and found is not None and found.files and not found.null_time_range_starts and (
            found.min_time_range_start >= lookback_start):
        # Every candidate lies inside the lookback: the filter holds for every row, so the scan skips it (and the
        # timestamp column, unless the query names it).
        extra_filter = None
    # What the scan reads: the query's columns, plus the timestamp when the default lookback filters on it.
    needed = set(parsed.columns_needed) - {PARTITION_COLUMN}
    if extra_filter is not None or not needed:
        needed.add(ts)
    # partition_id is split metadata: prune on it at the split level only (every row of a split shares it).
    with tracer.start_as_current_span("index_prune") as span:
        cascade: CascadeResult = await asyncio.to_thread(
            run_cascade, predicate, split_stage, candidates, needed, artifacts, footers, constants)
        span.set_attribute("strata.candidate_files", 0 if found is None else found.files)
        span.set_attribute("strata.kept_files", len(cascade.files))
    if len(cascade.files) > max_files:
        raise PlanTooLarge(f"the query would read {len(cascade.files)} files, more than the limit of {max_files}; "
                           "narrow its time range or add predicates", errors=[
                               {"field": "sql", "message": f"plan exceeds the file limit of {max_files}"}])

    # In the units of every later stage (row groups, and the bytes of row groups), from the whole index's.
    stages = [StageOut(stage="time_range", files_before=totals.files, files_after=0 if found is None else found.files,
                       row_groups_before=totals.row_groups, row_groups_after=0 if found is None else found.row_groups,
                       bytes_before=totals.row_group_bytes,
                       bytes_after=0 if found is None else found.row_group_bytes)]
    stages += [StageOut(**asdict(s)) for s in cascade.stages]
    scan_columns = [(name, types[name]) for name in sorted(needed | (set(parsed.columns_needed) & {PARTITION_COLUMN}))]
    out = PlanOut(
        index_id=index_id, index_uid=index.index_uid, tenant=tenant, sql=sql, predicate=describe(predicate),
        columns=[c for c, _ in scan_columns],
        time_range=TimeRangeOut(
            column=ts, unit="seconds" if is_seconds else "microseconds",
            intervals=[(i.lo, i.hi) for i in ranges.intervals], includes_null_timestamps=ranges.includes_null,
            source="where" if source == "where" else "default_lookback",
            default_lookback_secs=None if source == "where" else lookback),
        stages=stages,
        # Shallow: asdict would deep-copy every byte range, and the model copies what it keeps anyway.
        files=[FilePartOut(**{name: getattr(f, name) for name in _FILE_PART_FIELDS}) for f in cascade.files],
        total_files=len(cascade.files), total_row_groups=sum(len(f.row_groups) for f in cascade.files),
        total_bytes=sum(f.bytes for f in cascade.files), total_rows=sum(f.rows for f in cascade.files),
        planning_ms=round((time.perf_counter() - started) * 1000, 3))
    return QueryPlan(parsed, settings, out, scan_columns, extra_filter)

