"""The SQL front's dialect rules, without a service: what each scan of the index may be pruned by, the instant
`now()` stands for, the neutral forms of the time functions (checked against DuckDB's own functions), Spark's
spelling of DISTINCT ON, and the regular expressions that may run on Spark."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.domain.index_config import IndexSettings
from strata_core.query.predicate import TRUE, Compare, describe
from strata_core.sql.engine_forms import java_compatible
from strata_core.sql.errors import QueryValidationError
from strata_core.sql.index_columns import with_partition_column
from strata_core.sql.query import parse_query
from tests.helpers import examples

SETTINGS = with_partition_column(IndexSettings.model_validate({
    "fields": [{"name": "ts", "type": "timestamp"}, {"name": "host", "type": "string"},
               {"name": "code", "type": "i64"}, {"name": "value", "type": "f64"}],
    "timestamp_field": "ts", "sort_schema": "host,ts@v1", "window_duration_secs": 900,
    "compaction_start_time": 0}))
NOW_US = 1_800_000_000_000_000


def parse(sql: str):
    return parse_query(sql, index_id="t", settings=SETTINGS, now_us=NOW_US)


def scans(sql: str) -> list[str]:
    return [describe(scan.predicate) for scan in parse(sql).scans]


def test_now_is_fixed_at_plan_time_and_bounds_the_scan():
    parsed = parse("SELECT count(*) FROM t WHERE ts > now() - INTERVAL '10 minutes'")
    assert parsed.uses_now
    assert parsed.scans[0].predicate == Compare("ts", ">", NOW_US - 600_000_000)
    # The executed SQL compares with the same instant.
    assert str(NOW_US - 600_000_000) in parsed.sql_for("v", "duckdb")
    assert str(NOW_US - 600_000_000) in parsed.sql_for("v", "spark")


def test_each_reference_is_pruned_by_its_own_select():
    assert scans("SELECT host FROM t WHERE code = 1 UNION ALL SELECT host FROM t WHERE code = 2") == [
        "code = 1", "code = 2"]
    assert scans("SELECT a.host FROM t a JOIN t b ON a.host = b.host WHERE a.code = 1 AND b.code = 2") == [
        "code = 1", "code = 2"]
    # A CTE that only passes rows through is pruned by its readers' conditions, OR-ed.
    assert scans("WITH x AS (SELECT * FROM t) SELECT count(*) FROM x WHERE code = 1 "
                 "UNION ALL SELECT count(*) FROM x WHERE code = 2") == ["(code = 1 OR code = 2)"]
    # Through a renaming derived table.
    assert scans("SELECT count(*) FROM (SELECT code AS c FROM t) s WHERE c > 3") == ["code > 3"]


@pytest.mark.parametrize("sql", [
    # The nullable side of an outer join: a condition on it also holds on the rows the join null-extends.
    "SELECT a.host FROM t a LEFT JOIN t b ON a.host = b.host WHERE b.code IS NULL",
    # Never across a LIMIT, a window or an aggregate.
    "SELECT * FROM (SELECT * FROM t ORDER BY ts LIMIT 5) s WHERE code = 1",
    "SELECT * FROM (SELECT *, row_number() OVER (ORDER BY ts) AS n FROM t) s WHERE code = 1",
    "SELECT * FROM (SELECT host, max(code) AS code FROM t GROUP BY host) s WHERE code = 1",
    # A condition with a subquery, or naming the outer query's columns.
    "SELECT * FROM t WHERE code = (SELECT max(code) FROM t)",
])
def test_conditions_that_would_change_the_answer_are_not_moved(sql):
    assert parse(sql).scans[-1].predicate == TRUE or "code" not in describe(parse(sql).scans[-1].predicate)


@settings(max_examples=examples(200), deadline=None)
@given(seconds=st.integers(0, 4_000_000_000), fraction=st.integers(0, 999_999),
       width=st.sampled_from(["1 second", "15 seconds", "1 minute", "5 minutes", "1 hour", "1 day", "7 days"]),
       function=st.sampled_from(["time_bucket", "date_bin"]))
def test_time_buckets_match_duckdb(seconds, fraction, width, function):
    micros = seconds * 1_000_000 + fraction
    table = pa.table({"ts": pa.array([micros], pa.timestamp("us", tz="UTC")), "host": ["a"],
                      "code": pa.array([1], pa.int64()), "value": [1.0]})
    parsed = parse(f"SELECT {function}(INTERVAL '{width}', ts) AS b, extract(epoch FROM ts) AS e, "
                   "epoch_ms(ts) AS ms, date_part('dow', ts) AS d, extract(second FROM ts) AS s FROM t")
    connection = duckdb.connect()
    connection.register("v", table)
    ours = connection.sql(f"SELECT epoch_us(b), e, ms, d, s FROM ({parsed.sql_for('v', 'duckdb')})").fetchall()[0]
    origin = "TIMESTAMPTZ '1970-01-01 00:00:00+00'" if function == "date_bin" else \
        "TIMESTAMPTZ '2000-01-03 00:00:00+00'"
    theirs = connection.sql(f"SELECT epoch_us(time_bucket(INTERVAL '{width}', ts, {origin})), epoch(ts), "
                            "epoch_ms(ts), dayofweek(ts), second(ts) FROM v").fetchall()[0]
    assert ours == theirs


def test_distinct_on_for_spark_keeps_the_columns_and_the_order():
    sql = parse("SELECT DISTINCT ON (host) host, ts, code FROM t ORDER BY host, ts DESC LIMIT 3").sql_for(
        "v", "spark", view_columns=("ts", "host", "code", "value"))
    assert sql.startswith("SELECT `host`, `ts`, `code` FROM (")
    assert "ROW_NUMBER() OVER (PARTITION BY `host` ORDER BY `host` NULLS LAST, `ts` DESC)" in sql
    assert sql.endswith("ORDER BY `__strata_o0` NULLS LAST, `__strata_o1` DESC LIMIT 3")


@pytest.mark.parametrize(("pattern", "portable"), [
    ("disk|error", True), (r"h(\d+)", True), ("[a-z]+$", True), ("(?i)err", True),
    ("(a+)+$", False), ("(a|aa)+$", False), (r"\p{L}", False), ("[a[b]]", False), ("a++", False),
])
def test_regular_expressions_run_on_spark_only_where_java_reads_them_alike(pattern, portable):
    assert java_compatible(pattern) is portable
    parsed = parse(f"SELECT count(*) FROM t WHERE regexp_matches(host, '{pattern}')")
    assert (parsed.local_only is None) is portable


@pytest.mark.parametrize("sql", [
    "SELECT " + "(" * 40 + "1" + ")" * 40 + " FROM t",
    "SELECT * FROM t WHERE " + "NOT " * 40 + "code = 1",
])
def test_deep_nesting_is_refused_before_parsing(sql):
    with pytest.raises(QueryValidationError, match="nests"):
        parse(sql)


def test_long_flat_conditions_plan():
    parsed = parse("SELECT * FROM t WHERE " + " OR ".join(f"host = 'h{i}'" for i in range(500)))
    assert len(parsed.scans[0].predicate.children) == 500


def test_integer_casts_round_on_spark_as_duckdb_rounds_them():
    # DuckDB's rule, which the Spark spelling copies: a double's ties go to even, a decimal's away from zero.
    assert duckdb.sql("SELECT CAST(2.5::DOUBLE AS BIGINT), CAST(-2.5::DOUBLE AS BIGINT), CAST(2.5 AS BIGINT), "
                      "CAST(-2.5 AS BIGINT)").fetchall() == [(2, -2, 3, -3)]
    sql = parse("SELECT CAST(value AS BIGINT) AS v, value::INTEGER AS i, CAST(2.5 AS BIGINT) AS d, "
                "CAST(round(value) AS INT) AS r FROM t").sql_for("v", "spark")
    assert "CAST(BROUND(`value`) AS BIGINT) AS `v`" in sql
    assert "CAST(BROUND(`value`) AS INT) AS `i`" in sql
    assert "CAST(ROUND(2.5) AS BIGINT) AS `d`" in sql
    assert "CAST(ROUND(`value`) AS INT) AS `r`" in sql
