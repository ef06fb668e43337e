"""What Strata's answers are checked against in the end-to-end journeys: the published files themselves, read
through the store, and DuckDB's answers to the same queries over them."""

from __future__ import annotations

import math
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

from strata_core.storage import ObjectStore

DUCK_TEXT = ("regexp_matches(lower(message), '(^|[^a-z0-9])disk([^a-z0-9]|$)') AND "
             "regexp_matches(lower(message), '(^|[^a-z0-9])full([^a-z0-9]|$)')")
# (Strata SQL, DuckDB's where it must differ); {i} is the index as a table.
QUERIES = [
    ("SELECT count(*) AS n, sum(value) AS s, min(timestamp_secs) AS t FROM {i}", None),
    ("SELECT service, count(*) AS n, max(value) AS m FROM {i} WHERE host = 'host-0003' GROUP BY service", None),
    ("SELECT metric_name, count(*) AS n FROM {i} WHERE service IN ('service_01', 'service_07') GROUP BY metric_name",
     None),
    ("SELECT host, count(*) AS n FROM {i} WHERE text_match(message, 'disk full') GROUP BY host",
     "SELECT host, count(*) AS n FROM {i} WHERE " + DUCK_TEXT + " GROUP BY host"),
]


def files_table(storage: ObjectStore, uris: list[str]) -> pa.Table:
    """The files' rows as one table, read through the store (DuckDB has no S3 access of its own here)."""
    return pa.concat_tables([pq.read_table(storage.open_input(u)) for u in uris], promote_options="default")


def row_multiset(table: pa.Table) -> Counter:
    """Every row with its multiplicity, whatever the column and row order."""
    return Counter(tuple(sorted(row.items())) for row in table.to_pylist())


def normal(rows) -> list[tuple]:
    """Answer rows in one order, floats rounded, so engines that sum in another order compare equal."""
    def cell(value):
        return round(value, 6) if isinstance(value, float) and not math.isnan(value) else value
    return sorted((tuple(cell(v) for v in row) for row in rows), key=repr)
