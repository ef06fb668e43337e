"""The two ways a query can be refused: it does not parse, or it parses but Strata will not run it."""

from __future__ import annotations

from strata_core.errors import BadRequest, InvalidInput


class QuerySyntaxError(BadRequest):
    """The SQL does not parse. `line` and `column` (1-based) point at the start of the offending token."""

    slug, title = "query-syntax", "SQL syntax error"

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{message} (line {line}, column {column})",
                         errors=[{"field": "sql", "message": message, "line": line, "column": column}])
        self.message = message
        self.line = line
        self.column = column


class QueryValidationError(InvalidInput):
    """The SQL parses but is not a query Strata runs. `field` names what is wrong: the column for an unknown or
    mistyped column, else the clause (`from`, `select`, `where`, `group by`, `having`, `order by`, `limit`) or
    `sql` for the statement as a whole."""

    slug, title = "query-invalid", "Unsupported or invalid query"

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message, errors=[{"field": field, "message": message}])
        self.message = message
        self.field = field
