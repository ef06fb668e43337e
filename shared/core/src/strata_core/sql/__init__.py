"""SQL to a validated query model: the pruning predicate, the columns to read, and the Spark SQL to run."""

from strata_core.sql.errors import QuerySyntaxError, QueryValidationError
from strata_core.sql.query import ParsedQuery, parse_query

__all__ = ["ParsedQuery", "QuerySyntaxError", "QueryValidationError", "parse_query"]
