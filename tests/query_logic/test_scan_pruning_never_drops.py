"""Pruning never changes an answer, whatever the shape of the query (CTEs, subqueries, unions, self-joins, outer
joins, windows, LIMIT): hypothesis draws conditions and query shapes, and Strata's SQL run over only the rows its
scans' predicates may need answers exactly what DuckDB answers over every row. Pure: DuckDB in process, no
service."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from strata_core.domain.index_config import IndexSettings
from strata_core.query.predicate import (
    TRUE,
    Atom,
    Const,
    Predicate,
    PredicateVisitor,
    Unknown,
    conjunction,
    disjunction,
    visit,
)
from strata_core.query.row_filter import matching_rows
from strata_core.sql.index_columns import with_partition_column
from strata_core.sql.query import parse_query
from tests.helpers import examples

SETTINGS = with_partition_column(IndexSettings.model_validate({
    "fields": [{"name": "ts", "type": "timestamp"}, {"name": "host", "type": "string"},
               {"name": "code", "type": "i64"}, {"name": "value", "type": "f64"}],
    "timestamp_field": "ts", "sort_schema": "host,ts@v1", "window_duration_secs": 900,
    "compaction_start_time": 0}))
BASE_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
HOSTS = ["a", "b", "c"]


def _rows(seed_rows: list[tuple]) -> pa.Table:
    return pa.table({
        "ts": pa.array([BASE_US + minute * 60_000_000 for minute, *_ in seed_rows], pa.timestamp("us", tz="UTC")),
        "host": pa.array([host for _, host, _, _ in seed_rows], pa.string()),
        "code": pa.array([code for *_, code, _ in seed_rows], pa.int64()),
        "value": pa.array([value for *_, value in seed_rows], pa.float64()),
    })


ROWS = st.lists(st.tuples(st.integers(0, 30), st.sampled_from(HOSTS), st.one_of(st.none(), st.integers(0, 5)),
                          st.one_of(st.none(), st.sampled_from([0.5, 1.0, 2.5, 7.0]))), min_size=1, max_size=25)


def _instant(minute: int) -> str:
    return datetime.fromtimestamp(BASE_US / 1e6 + minute * 60, UTC).strftime("'%Y-%m-%dT%H:%M:%SZ'")


def _atoms(q: str) -> st.SearchStrategy[str]:
    op = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        st.builds(lambda o, v: f"{q}code {o} {v}", op, st.integers(0, 5)),
        st.builds(lambda o, v: f"{q}value {o} {v}", op, st.sampled_from([0.5, 1.0, 3.0])),
        st.builds(lambda o, h: f"{q}host {o} '{h}'", st.sampled_from(["=", "!="]), st.sampled_from(HOSTS)),
        st.builds(lambda o, m: f"{q}ts {o} {_instant(m)}", op, st.integers(0, 30)),
        st.builds(lambda m: f"{q}ts > TIMESTAMP {_instant(m)} - INTERVAL '5 minutes'", st.integers(0, 30)),
        st.builds(lambda lo, n: f"{q}ts BETWEEN {_instant(lo)} AND {_instant(lo + n)}", st.integers(0, 30),
                  st.integers(0, 10)),
        st.builds(lambda hs: f"{q}host IN ({', '.join(repr(h) for h in hs)})",
                  st.lists(st.sampled_from(HOSTS), min_size=1, max_size=2)),
        st.builds(lambda c, n: f"{q}{c} IS {'NOT ' if n else ''}NULL", st.sampled_from(["code", "value"]),
                  st.booleans()),
    )


def conditions(q: str = "") -> st.SearchStrategy[str]:
    return st.recursive(_atoms(q), lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a} AND {b})", inner, inner),
        st.builds(lambda a, b: f"({a} OR {b})", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner)), max_leaves=4)


SHAPES = [
    "SELECT count(*) AS n, sum(code) AS s FROM t WHERE {c1}",
    "WITH x AS (SELECT * FROM t WHERE {c1}) SELECT host, count(*) AS n FROM x WHERE {c2} GROUP BY host",
    "WITH x AS (SELECT host, code, ts, value AS value FROM t) SELECT count(*) AS n FROM x WHERE {c2} "
    "AND code IS NOT NULL",
    "SELECT host FROM t WHERE {c1} UNION ALL SELECT host FROM t WHERE {c2}",
    "SELECT host, code FROM t WHERE {c1} EXCEPT SELECT host, code FROM t WHERE {c2}",
    "SELECT a.host, count(*) AS n FROM t a JOIN t b ON a.host = b.host WHERE {qa} AND {qb} GROUP BY a.host",
    "SELECT a.host, b.code FROM t a LEFT JOIN t b ON a.code = b.code AND a.host = b.host WHERE {qa} AND {qb}",
    "SELECT host, ts FROM t WHERE {c1} AND code IN (SELECT code FROM t WHERE {c2})",
    "SELECT host, code FROM t WHERE {c1} AND NOT EXISTS "
    "(SELECT 1 FROM t u WHERE u.host = t.host AND {cu})",
    "SELECT host, count(*) AS n FROM (SELECT host, code AS c, ts FROM t WHERE {c1}) s WHERE c > 1 GROUP BY host",
    "SELECT count(*) AS n FROM (SELECT host, code, ts, value FROM t) s WHERE {c1}",
    "SELECT host, code FROM (SELECT * FROM t ORDER BY ts, host, code LIMIT 4) s WHERE {c1}",
    "SELECT host, rn FROM (SELECT *, row_number() OVER (PARTITION BY host ORDER BY ts, code) AS rn "
    "FROM t) s WHERE {c1}",
    "SELECT host, count(*) AS n FROM t WHERE {c1} GROUP BY host HAVING count(*) > 1",
    "SELECT DISTINCT ON (host) host, ts, code FROM t WHERE {c1} ORDER BY host, ts DESC, code",
    "SELECT host, value FROM t WHERE value > (SELECT avg(value) FROM t WHERE {c2}) AND {c1}",
]


def _relaxed(predicate: Predicate) -> Predicate:
    """The predicate with what pruning cannot use (Unknown atoms) as TRUE: the rows the sharpest pruner keeps."""
    return visit(predicate, _Relaxed())


class _Relaxed(PredicateVisitor[Predicate]):
    # No visit_not: the parsed predicates are in negation normal form (NOT absorbed by the atoms), where relaxing
    # under a NOT would be wrong (NOT TRUE drops rows); the base class refuses one.
    def visit_const(self, value: bool) -> Predicate:
        return Const(value)

    def visit_and(self, results: Iterator[Predicate]) -> Predicate:
        return conjunction(results)

    def visit_or(self, results: Iterator[Predicate]) -> Predicate:
        return disjunction(results)

    def visit_unknown(self, pred: Unknown) -> Predicate:
        return TRUE

    def visit_atom(self, atom: Atom) -> Predicate:
        return atom


def _cell(value):
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else round(value, 9)
    return value


def _answer(connection: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return sorted((tuple(_cell(v) for v in row.values()) for row in connection.sql(sql).to_arrow_table().to_pylist()),
                  key=repr)


@pytest.mark.parametrize("shape", SHAPES)
@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=ROWS, c1=conditions(), c2=conditions(), qa=conditions("a."), qb=conditions("b."), cu=conditions("u."))
def test_scans_pruned_to_their_predicates_answer_as_every_row(rows, shape, c1, c2, qa, qb, cu):
    sql = shape.format(c1=c1, c2=c2, qa=qa, qb=qb, cu=cu)
    table = _rows(rows)
    parsed = parse_query(sql, index_id="t", settings=SETTINGS, now_us=BASE_US)
    # Row by row and scan by scan, the finest pruning there is: every file or row group the cascade keeps for a
    # scan holds at least the rows its predicate may match, and all scans read one view (the union).
    union = table.filter(pa.array(matching_rows(_relaxed(parsed.predicate), table)))
    marked = union
    for scan in parsed.scans:
        marked = marked.append_column(f"keep_{scan.position}",
                                      pa.array(matching_rows(_relaxed(scan.predicate), union)))
    connection = duckdb.connect()
    connection.register("t", table)
    connection.register("pruned", marked)
    filters = {scan.position: exp.column(f"keep_{scan.position}") for scan in parsed.scans}
    pruned_sql = parsed.sql_for("pruned", "duckdb", scan_filters=filters, view_columns=tuple(table.column_names))
    assert _answer(connection, pruned_sql) == _answer(connection, sql), (sql, [s.predicate for s in parsed.scans])
