"""SQL to the query model: every supported construct, every refusal with its position or field, text_match's
Spark form, timestamp literals, and Spark SQL that parses in Spark's dialect."""

from __future__ import annotations

import math
import re

import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

from strata_core.domain.index_config import IndexSettings
from strata_core.query.predicate import (
    FALSE,
    TRUE,
    And,
    Compare,
    InList,
    IsNull,
    Like,
    Or,
    TextMatch,
    Unknown,
    evaluate_row,
)
from strata_core.sql import ParsedQuery, QuerySyntaxError, QueryValidationError, parse_query
from strata_core.sql.literals import decimal_text, parse_rfc3339_micros
from strata_core.sql.text_match import term_regex

FIELDS = [
    {"name": "service", "type": "string"},
    {"name": "host", "type": "string"},
    {"name": "ts", "type": "timestamp"},
    {"name": "msg", "type": "string"},
    {"name": "latency", "type": "f64"},
    {"name": "status", "type": "i64"},
    {"name": "bytes", "type": "u64"},
    {"name": "ok", "type": "bool"},
    {"name": "tags", "type": "string_list"},
]
SETTINGS = IndexSettings.model_validate({
    "fields": FIELDS, "timestamp_field": "ts", "sort_schema": "service,ts", "compaction_start_time": 0,
})
SECONDS_SETTINGS = IndexSettings.model_validate({
    "fields": [{"name": "metric", "type": "string"}, {"name": "timestamp_secs", "type": "i64"},
               {"name": "value", "type": "f64"}],
    "timestamp_field": "timestamp_secs", "sort_schema": "metric,timestamp_secs", "compaction_start_time": 0,
})
JAN_1_2026 = 1_767_225_600


def parse(sql: str, settings: IndexSettings = SETTINGS) -> ParsedQuery:
    return parse_query(sql, index_id="logs", settings=settings)


def where(condition: str, settings: IndexSettings = SETTINGS):
    return parse(f"SELECT * FROM logs WHERE {condition}", settings).predicate


def spark(query: ParsedQuery, view: str = "scan_view") -> str:
    text = query.sql_for(view, "spark")
    # Whatever is produced must be Spark SQL.
    assert sqlglot.parse_one(text, dialect="spark") is not None
    return text


# --- WHERE to IR -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("condition", "expected"), [
    ("status = 200", Compare("status", "=", 200)),
    ("status <> 200", Compare("status", "!=", 200)),
    ("status != 200", Compare("status", "!=", 200)),
    ("status < 200", Compare("status", "<", 200)),
    ("status <= -3", Compare("status", "<=", -3)),
    ("status > 200", Compare("status", ">", 200)),
    ("status >= 200", Compare("status", ">=", 200)),
    ("200 < status", Compare("status", ">", 200)),
    ("(status) = (200)", Compare("status", "=", 200)),
    ("service = 'api'", Compare("service", "=", "api")),
    ("service = 'it''s'", Compare("service", "=", "it's")),
    ("latency > 1.5", Compare("latency", ">", 1.5)),
    ("latency > 2", Compare("latency", ">", 2.0)),
    ("latency < 1e3", Compare("latency", "<", 1000.0)),
    ("bytes >= 18446744073709551615", Compare("bytes", ">=", 2**64 - 1)),
    ("ok", Compare("ok", "=", True)),
    ("ok = FALSE", Compare("ok", "=", False)),
    ("NOT ok", Compare("ok", "!=", True)),
    ("status BETWEEN 200 AND 299", And((Compare("status", ">=", 200), Compare("status", "<=", 299)))),
    ("status NOT BETWEEN 200 AND 299", Or((Compare("status", "<", 200), Compare("status", ">", 299)))),
    ("status IN (500, 503)", InList("status", (500, 503))),
    ("status NOT IN (500, 503)", InList("status", (500, 503), True)),
    ("NOT status IN (500)", InList("status", (500,), True)),
    ("host IS NULL", IsNull("host")),
    ("host IS NOT NULL", IsNull("host", True)),
    ("NOT host IS NULL", IsNull("host", True)),
    ("tags IS NULL", IsNull("tags")),
    ("service LIKE 'api-%'", Like("service", "api-%")),
    ("service NOT LIKE 'api\\_%'", Like("service", "api\\_%", True)),
    ("text_match(msg, 'Disk FULL, again')", TextMatch("msg", ("disk", "full", "again"))),
    ("TEXT_MATCH(msg, 'x')", TextMatch("msg", ("x",))),
    ("service = 'a' AND (host = 'b' OR NOT status = 1)",
     And((Compare("service", "=", "a"), Or((Compare("host", "=", "b"), Compare("status", "!=", 1)))))),
    ("NOT (service = 'a' OR host = 'b')", And((Compare("service", "!=", "a"), Compare("host", "!=", "b")))),
    ("TRUE", TRUE),
    ("service = 'a' AND FALSE", FALSE),
    # Comparisons with NULL are never TRUE, whatever the NOTs above them.
    ("status = NULL", FALSE),
    ("NOT status = NULL", FALSE),
    ("status IN (1, NULL)", InList("status", (1,))),
    ("status NOT IN (1, NULL)", FALSE),
    # A fraction against an integer column keeps its exact meaning.
    ("status > 2.5", Compare("status", ">=", 3)),
    ("status >= 2.5", Compare("status", ">=", 3)),
    ("status < 2.5", Compare("status", "<=", 2)),
    ("status <= -2.5", Compare("status", "<=", -3)),
    ("status = 2.5", FALSE),
    ("status != 2.5", IsNull("status", True)),
    ("status IN (2.5, 3)", InList("status", (3,))),
    ("status = 3.0", Compare("status", "=", 3)),
])
def test_where_to_ir(condition, expected):
    assert where(condition) == expected


@pytest.mark.parametrize("condition", [
    "status + 1 > 3",
    "status < bytes",
    "lower(service) = 'api'",
    "service = host",
    "status IN (1, bytes)",
    "service LIKE host",
    "coalesce(host, 'x') IS NULL",
    "ok IS TRUE",
    "NULL",
])
def test_what_the_ir_cannot_express_becomes_unknown(condition):
    pred = where(condition)
    assert isinstance(pred, Unknown)
    assert pred.expr is None


def test_unknown_parts_stay_beside_the_known_ones():
    pred = where("service = 'a' AND status + 1 > 3")
    assert isinstance(pred, And) and pred.children[0] == Compare("service", "=", "a")
    assert isinstance(pred.children[1], Unknown)


def test_not_text_match_prunes_nothing_but_keeps_its_meaning():
    pred = where("NOT text_match(msg, 'disk')")
    assert isinstance(pred, Unknown)
    assert evaluate_row(pred, {"msg": "cpu hot"}) and not evaluate_row(pred, {"msg": "disk-full"})


def test_column_names_resolve_case_insensitively():
    query = parse('SELECT SERVICE FROM logs WHERE Status = 1 AND "HOST" = \'a\'')
    assert query.predicate == And((Compare("status", "=", 1), Compare("host", "=", "a")))
    assert query.columns_needed == {"service", "status", "host"}
    assert "`service`" in spark(query)


# --- timestamps ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("literal", "micros"), [
    ("'2026-01-01T00:00:00Z'", JAN_1_2026 * 1_000_000),
    ("'2026-01-01T01:00:00+01:00'", JAN_1_2026 * 1_000_000),
    ("'2025-12-31T19:00:00-05:00'", JAN_1_2026 * 1_000_000),
    ("'2026-01-01 00:00:00.25'", JAN_1_2026 * 1_000_000 + 250_000),
    ("'2026-01-01T00:00:00.000001Z'", JAN_1_2026 * 1_000_000 + 1),
    ("'2026-01-01'", JAN_1_2026 * 1_000_000),
    ("TIMESTAMP '2026-01-01 00:00:00'", JAN_1_2026 * 1_000_000),
    ("DATE '2026-01-01'", JAN_1_2026 * 1_000_000),
    ("1767225600000000", JAN_1_2026 * 1_000_000),
    ("-5", -5),
])
def test_timestamp_column_literals_are_microseconds(literal, micros):
    query = parse(f"SELECT * FROM logs WHERE ts >= {literal}")
    assert query.predicate == Compare("ts", ">=", micros)
    # Spark gets the same instant, independent of its session time zone and of its seconds reading of integers.
    assert f"`ts` >= TIMESTAMP_MICROS({micros})" in spark(query)


@pytest.mark.parametrize(("literal", "seconds", "spark_literal"), [
    ("'2026-01-01T00:00:00Z'", JAN_1_2026, str(JAN_1_2026)),
    ("TIMESTAMP '2026-01-01 01:00:00+01:00'", JAN_1_2026, str(JAN_1_2026)),
    (str(JAN_1_2026), JAN_1_2026, str(JAN_1_2026)),
])
def test_seconds_timestamp_column_literals_are_seconds(literal, seconds, spark_literal):
    query = parse(f"SELECT * FROM logs WHERE timestamp_secs < {literal}", SECONDS_SETTINGS)
    assert query.predicate == Compare("timestamp_secs", "<", seconds)
    assert f"`timestamp_secs` < {spark_literal}" in spark(query)


def test_fractional_seconds_round_the_bound_and_stay_exact_in_spark():
    query = parse("SELECT * FROM logs WHERE timestamp_secs > '2026-01-01T00:00:00.5Z'", SECONDS_SETTINGS)
    assert query.predicate == Compare("timestamp_secs", ">=", JAN_1_2026 + 1)
    assert f"`timestamp_secs` > {JAN_1_2026}.5" in spark(query)


def test_timestamp_between_and_in_are_rewritten_everywhere():
    query = parse("SELECT ts = '2026-01-01' AS at_midnight FROM logs "
                  "WHERE ts BETWEEN '2026-01-01' AND '2026-01-02' OR ts IN ('2026-01-03')")
    base = JAN_1_2026 * 1_000_000
    day = 86_400_000_000
    assert query.predicate == Or((
        And((Compare("ts", ">=", base), Compare("ts", "<=", base + day))),
        InList("ts", (base + 2 * day,)),
    ))
    text = spark(query)
    assert "'2026" not in text
    assert f"`ts` = TIMESTAMP_MICROS({base}) AS `at_midnight`" in text


def test_rfc3339_parsing():
    assert parse_rfc3339_micros("1970-01-01T00:00:00.0000005Z") == pytest.approx(0.5)
    assert parse_rfc3339_micros("1969-12-31T23:59:59Z") == -1_000_000
    assert decimal_text(parse_rfc3339_micros("1970-01-01T00:00:01.5Z") / 1_000_000) == "1.5"
    assert decimal_text(-7) == "-7"


# --- select list, grouping, limit ------------------------------------------------------------------------------

def test_projection_columns_and_aggregates():
    query = parse("SELECT service, count(*) AS n, count(host), sum(bytes), min(latency), max(latency), avg(status) "
                  "FROM logs GROUP BY service HAVING count(*) > 1 ORDER BY n DESC, service LIMIT 5")
    assert query.columns_needed == {"service", "host", "bytes", "latency", "status"}
    assert query.has_aggregates and query.limit == 5
    assert query.predicate == TRUE
    text = spark(query)
    # DuckDB's order of NULLs (last, both ways), spelled out for Spark.
    assert "GROUP BY `service` HAVING COUNT(*) > 1 ORDER BY `n` DESC, `service` NULLS LAST LIMIT 5" in text


def test_star_reads_every_column_and_count_star_none():
    assert parse("SELECT * FROM logs").columns_needed == {f["name"] for f in FIELDS}
    assert parse("SELECT l.* FROM logs AS l").columns_needed == {f["name"] for f in FIELDS}
    counted = parse("SELECT count(*) FROM logs")
    assert counted.columns_needed == frozenset() and counted.has_aggregates and counted.limit is None


def test_expressions_and_aliases():
    query = parse("SELECT status + 1 AS next, latency * 2, -bytes, lower(host) AS h, "
                  "CASE WHEN ok THEN 'y' ELSE 'n' END AS flag FROM logs ORDER BY h LIMIT 0")
    assert query.columns_needed == {"status", "latency", "bytes", "host", "ok"}
    assert not query.has_aggregates and query.limit == 0
    spark(query)


def test_group_by_alone_is_an_aggregate():
    assert parse("SELECT service FROM logs GROUP BY service").has_aggregates
    assert not parse("SELECT service FROM logs").has_aggregates


# --- Spark SQL -------------------------------------------------------------------------------------------------

def test_spark_sql_reads_the_view_and_keeps_qualifiers_working():
    query = parse("SELECT logs.service FROM logs WHERE logs.status = 1")
    text = spark(query, "strata_scan_01")
    assert "FROM `strata_scan_01` AS `logs`" in text
    assert "`logs`.`status` = 1" in text
    aliased = parse("SELECT l.service FROM logs AS l")
    assert "FROM `v` AS `l`" in spark(aliased, "v")


@pytest.mark.parametrize("source", ["strata.indexes.logs", 'indexes."logs"', 'STRATA.Indexes.logs'])
def test_an_index_qualified_as_the_catalog_lists_it_reads_the_index(source):
    query = parse(f"SELECT {source.split('.')[-1]}.service FROM {source} WHERE status = 1")
    assert query.index_id == "logs"
    text = spark(query, "v")
    assert "FROM `v` AS `logs`" in text and "indexes" not in text.lower()


def test_spark_sql_is_repeatable():
    query = parse("SELECT * FROM logs WHERE text_match(msg, 'a')")
    assert query.sql_for("a", "spark") == query.sql_for("a", "spark")
    assert "`b`" in query.sql_for("b", "spark")


def test_text_match_becomes_exact_rlike_conjunction():
    text = spark(parse("SELECT * FROM logs WHERE NOT text_match(msg, 'Disk-full 42')"))
    expected = " AND ".join(
        f"`msg` RLIKE '(^|[^A-Za-z0-9]){body}([^A-Za-z0-9]|$)'"
        for body in ("[dD][iI][sS][kK]", "[fF][uU][lL][lL]", "42"))
    assert f"NOT ({expected})" in text
    assert "lower(" not in text.lower()


def test_text_match_in_select_is_rewritten_too():
    text = spark(parse("SELECT text_match(msg, 'x') AS hit FROM logs"))
    assert "RLIKE" in text and "TEXT_MATCH" not in text.upper()


TEXTS = st.text(alphabet=st.sampled_from(list("aAbBkK09 -_.\n\u212a\u0130é") + ["\U0001f600"]), max_size=12)


@given(TEXTS, st.lists(st.sampled_from(["a", "ab", "k", "b0", "9", "i"]), min_size=1, max_size=3))
def test_term_regexes_agree_with_the_token_contract(text, terms):
    # Python's re treats these constructs as Java's does: classes, alternation, ^ and $ (which both let $ match
    # before a final newline, itself a token boundary).
    atom = TextMatch.of("msg", " ".join(terms))
    by_regex = all(re.search(term_regex(term), text) for term in atom.terms)
    assert by_regex == evaluate_row(atom, {"msg": text})


# --- syntax errors ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("sql", "line", "column"), [
    ("SELECT x FROM logs NOT BETWEEN 1 AND 2", 1, 20),
    ("SELECT service\nFROM logs\nWHERE status = = 3", 3, 16),
    ("SELECT service FROM logs WHERE (status = 1", 1, 42),
    ("SELECT service FROM logs WHERE status = 1 AND", 1, 43),
    ("SELECT service FROM logs\nWHERE host = 'abc", 2, 14),
    ('SELECT service FROM logs WHERE "host = 1', 1, 32),
    ("   ", 1, 1),
])
def test_syntax_errors_point_at_the_token(sql, line, column):
    with pytest.raises(QuerySyntaxError) as caught:
        parse(sql)
    assert (caught.value.line, caught.value.column) == (line, column), caught.value.message
    assert caught.value.status == 400
    assert caught.value.errors[0]["field"] == "sql"


def test_unterminated_comment_is_a_syntax_error():
    with pytest.raises(QuerySyntaxError):
        parse("SELECT service /* FROM logs")


# --- validation errors -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("sql", "field", "message"), [
    ("SELECT * FROM metrics", "from", "unknown table 'metrics'"),
    ("SELECT * FROM db.logs", "from", "qualified table names"),
    ("SELECT * FROM other.indexes.logs", "from", "qualified table names"),
    ("SELECT * FROM logs JOIN metrics AS b ON logs.host = b.host", "from", "unknown table 'metrics'"),
    ("SELECT * FROM logs, read_parquet('/etc/passwd') AS b", "from", "read_parquet"),
    ("SELECT * FROM (SELECT * FROM other) AS s", "from", "unknown table 'other'"),
    ("SELECT * FROM logs WHERE status IN (SELECT status FROM pg_catalog.pg_user)", "from", "qualified table"),
    ("SELECT * FROM logs WHERE EXISTS (SELECT 1 FROM 'x.parquet')", "from", "unknown table 'x.parquet'"),
    ("WITH RECURSIVE x AS (SELECT 1 AS n FROM logs) SELECT * FROM x", "with", "recursive"),
    ("WITH logs AS (SELECT 1 AS n) SELECT * FROM logs", "with", "named like the index"),
    ("SELECT * FROM logs UNION SELECT * FROM other", "from", "unknown table 'other'"),
    ("SELECT * FROM logs WHERE count(*) > 1", "where", "HAVING"),
    ("SELECT time_bucket(INTERVAL '1 month', ts) FROM logs", "select", "no fixed length"),
    ("SELECT time_bucket(status, ts) FROM logs", "select", "constant interval"),
    ("SELECT date_bin(INTERVAL '1 minute', status) FROM logs", "select", "must be a timestamp"),
    ("SELECT quantile_cont(latency, 2) FROM logs", "select", "between 0 and 1"),
    ("SELECT first(latency) FROM logs", "select", "first(x ORDER BY ts)"),
    ("SELECT extract(century FROM ts) FROM logs", "select", "extract field"),
    ("SELECT list_value(1, 2) FROM logs", "select", "is not supported"),
    ("SELECT getvariable('x') FROM logs", "select", "is not supported"),
    ("SELECT 1", "from", "FROM logs"),
    ("DROP TABLE logs", "sql", "only SELECT"),
    ("SELECT * FROM logs; SELECT * FROM logs", "sql", "exactly one"),
    ("SELECT nope FROM logs", "nope", "unknown column 'nope'"),
    ("SELECT * FROM logs WHERE nope = 1", "nope", "unknown column 'nope'"),
    ("SELECT * FROM logs ORDER BY nope", "nope", "unknown column 'nope'"),
    ("SELECT service AS s FROM logs WHERE s = 'a'", "s", "unknown column 's'"),
    ("SELECT other.service FROM logs", "select", "unknown table 'other'"),
    ("SELECT string_agg(host, ',') FROM logs", "select", "function"),
    ("SELECT reflect('java.lang.System', 'exit', 0) FROM logs", "select", "function reflect() is not supported"),
    ("SELECT * FROM logs WHERE text_match(status, 'x')", "status", "needs a text column"),
    ("SELECT * FROM logs WHERE text_match(msg, '--')", "where", "no terms"),
    ("SELECT * FROM logs WHERE text_match(msg)", "where", "two arguments"),
    ("SELECT * FROM logs WHERE text_match('x', 'y')", "where", "must be a column"),
    ("SELECT * FROM logs WHERE text_match(msg, service)", "where", "string literal"),
    ("SELECT * FROM logs WHERE status LIKE '2%'", "status", "LIKE needs a string column"),
    ("SELECT * FROM logs WHERE service LIKE 'a\\b'", "service", "backslash"),
    ("SELECT * FROM logs WHERE service LIKE 'a!%' ESCAPE '!'", "where", "ESCAPE"),
    ("SELECT * FROM logs WHERE service = 1", "service", "compare it with a string"),
    ("SELECT * FROM logs WHERE status = 'a'", "status", "compare it with a number"),
    ("SELECT * FROM logs WHERE ok = 1", "ok", "TRUE or FALSE"),
    ("SELECT * FROM logs WHERE tags = 'a'", "tags", "string_list"),
    ("SELECT * FROM logs WHERE ts > 'yesterday'", "ts", "RFC 3339"),
    ("SELECT * FROM logs WHERE ts > '2026-02-30T00:00:00Z'", "ts", "not a valid timestamp"),
    ("SELECT * FROM logs WHERE ts > '2026-01-01T00:00:00.0000001Z'", "ts", "microsecond precision"),
    ("SELECT * FROM logs WHERE ts > 1.5", "ts", "whole epoch microseconds"),
    ("SELECT * FROM logs WHERE ts > TRUE", "ts", "RFC 3339"),
    ("SELECT count(*) FROM logs HAVING count(*) > 'a' OR status = 'x'", "status", "compare it with a number"),
    ("SELECT * FROM logs LIMIT 5 OFFSET 'a'", "limit", "OFFSET takes"),
    ("SELECT * FROM logs LIMIT 'a'", "limit", "non-negative integer"),
    ("SELECT * FROM logs WHERE status = ?", "where", "parameters"),
    ("SELECT * FROM logs WHERE status BETWEEN SYMMETRIC 1 AND 2", "where", "SYMMETRIC"),
])
def test_validation_errors_name_the_field(sql, field, message):
    with pytest.raises(QueryValidationError) as caught:
        parse(sql)
    assert caught.value.field == field, caught.value.message
    assert message in caught.value.message
    assert caught.value.status == 422
    assert caught.value.errors == [{"field": field, "message": caught.value.message}]


def test_the_table_name_is_the_index_id():
    assert parse_query("SELECT * FROM metrics_v2", index_id="metrics_v2", settings=SETTINGS).predicate == TRUE
    with pytest.raises(QueryValidationError):
        parse_query("SELECT * FROM logs", index_id="metrics_v2", settings=SETTINGS)


def test_nan_and_infinity_are_not_sql_literals_but_floats_work():
    assert where("latency >= -0.5") == Compare("latency", ">=", -0.5)
    assert not math.isnan(where("latency = 0.1").value)  # type: ignore[union-attr]


def test_parsed_query_keeps_the_sqlglot_tree_private():
    query = parse("SELECT * FROM logs")
    assert "Select" not in repr(query)
    assert isinstance(query._ast, exp.Select)
