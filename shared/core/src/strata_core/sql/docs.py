"""Writes docs/sql.md, the reference of the SQL Strata speaks, from the catalog (catalog.py): every entry with its
example, how each engine runs it, and the error bound of approximate functions; then the clients' spellings
(Grafana's macros as its data sources expand them). The suite checks the page is current and runs every example.

    python -m strata_core.sql.docs [docs/sql.md]
"""

from __future__ import annotations

import sys
from pathlib import Path

from strata_core.sql.catalog import CLIENT_EXAMPLES, ENTRIES, EXAMPLE_FIELDS, EXAMPLE_INDEX, GROUPS

_HEADER = """# The SQL Strata speaks

Generated from `shared/core/src/strata_core/sql/catalog.py` by `python -m strata_core.sql.docs`; do not edit by
hand. Every example below runs in the test suite (`tests/query/test_sql_catalog.py`) on both engines, and its
answer is compared with DuckDB's over the same Parquet files.

The dialect is PostgreSQL-flavoured SQL as DuckDB reads it, plus the time-series spellings of TimescaleDB
(`time_bucket`) and InfluxDB 3 / DataFusion (`date_bin`). A query reads one index, named as its table any number of
times (CTEs, subqueries, set operations, self-joins). Anything not listed here is refused with a `422` problem that
names the construct and the clause it appears in. Other tables, table functions (`read_parquet`, ...), file paths,
`SET`/`PRAGMA`/`ATTACH`/`INSTALL`/`COPY`, recursive CTEs and user functions are refused.

Rules that hold everywhere:
- Time is UTC. Timestamp literals without an offset are UTC; `now()` is fixed once per query when it is planned.
- NULLs sort last, ascending and descending (DuckDB's order); a division or modulo by zero is NULL.
- A result column without an alias is named by its SQL text.
- Pruning: each reference to the index is pruned by the conditions its own SELECT puts on it (the AND-ed
  conditions of the WHERE that reads it directly, or of the query reading a CTE or subquery that only passes its
  rows through); a reference without a bound on the timestamp column reads the index's default lookback.

The examples read the index `{index}` with the columns {fields}.
"""


def render() -> str:
    fields = ", ".join(f"`{name}` ({kind})" for name, kind in EXAMPLE_FIELDS)
    parts = [_HEADER.format(index=EXAMPLE_INDEX, fields=fields)]
    for group in GROUPS:
        parts.append(f"\n## {group}\n")
        for entry in (e for e in ENTRIES if e.group == group):
            parts.append(f"\n### {entry.title}\n\n{entry.summary}\n\n"
                         f"```sql\n{entry.example.format(t=EXAMPLE_INDEX)}\n```\n\nEngines: {entry.engines}.\n")
            if entry.approximate:
                parts.append(f"\nApproximate: {entry.approximate}.\n")
    parts.append("\n## Clients\n\nQueries as Grafana's data sources expand their macros (the time range is the "
                 "panel's; these are run by the suite with the test data's range).\n")
    for title, macro, expanded in CLIENT_EXAMPLES:
        sent = expanded.format(t=EXAMPLE_INDEX, start="2026-01-01T00:00:00Z", end="2026-01-01T01:00:00Z",
                               start_s=1767225600, end_s=1767229200)
        parts.append(f"\n### {title}\n\nAs written in the panel:\n\n```sql\n{macro.format(t=EXAMPLE_INDEX)}\n```\n\n"
                     f"As sent to Strata:\n\n```sql\n{sent}\n```\n")
    return "".join(parts)


def main(argv: list[str]) -> None:
    target = Path(argv[1] if len(argv) > 1 else "docs/sql.md")
    target.write_text(render())
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv)
