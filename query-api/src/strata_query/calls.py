"""What a door hands the query service and gets back, whatever its protocol (HTTP in `router.py`, Arrow Flight SQL
in `flight/`): a query as a caller asks it, its plan with the engine chosen, an index as a query sees it, and the
errors that end a query of its own accord. A door translates its protocol to and from these."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from strata_core.errors import StrataError
from strata_query.cache_directives import ResultCacheDirectives
from strata_query.execution.engine_choice import EngineChoice
from strata_query.planning.plan import QueryPlan


class QueryTimeout(StrataError):
    """The query's own limit, not a gateway's: a 4xx (retrying the same query meets the same limit), named in the
    detail; Flight SQL answers it as DEADLINE_EXCEEDED."""
    status, slug, title = 422, "query-timeout", "Query over its time limit"


class QueryCancelled(StrataError):
    status, slug, title = 409, "query-cancelled", "Query cancelled"


@dataclass(frozen=True, slots=True)
class QueryCall:
    """A query as a caller asks it."""

    tenant: str | None
    sql: str
    # An engine's name to run on instead of the one the plan's size selects.
    engine: str | None = None
    # At most the server's caps.
    max_rows: int | None = None
    timeout_secs: float | None = None
    result_cache: ResultCacheDirectives = field(default_factory=ResultCacheDirectives)


@dataclass(frozen=True, slots=True)
class IndexTable:
    """An index as a query sees it: the name to query it by and the columns it has."""

    index_id: str
    schema: pa.Schema


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    plan: QueryPlan
    engine: EngineChoice
