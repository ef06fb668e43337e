"""The differential corpus: queries as dashboards, TSBS-style generators and notebooks write them, answered through
the HTTP API on the local engine and on Spark, and compared with DuckDB's answer to the same SQL over the same
Parquet files. Together with the catalog's examples (test_sql_catalog.py) and the TSBS types (test_tsbs_queries.py)
it is the engines' agreement on the whole dialect.

Every query runs on the local engine as written. Spark gets the same expressions in fewer queries, since each of
its queries costs about a second of fixed overhead: the grid of aggregates as the columns of one GROUP BY, the grid
of time buckets as the columns of one SELECT, the grid of filters as FILTER clauses of one SELECT (each filter's
WHERE form runs on Spark too, paired with a bucket below); every other query runs on Spark as written."""

from __future__ import annotations

import pytest

from tests.query.test_sql_catalog import (  # noqa: F401 - example_index is the fixture
    _reference,
    _run,
    _same,
    example_index,
    spark_or_refused,
)

T = "{t}"
BUCKETS = ["date_trunc('minute', ts)", "date_trunc('hour', ts)", "time_bucket(INTERVAL '5 minutes', ts)",
           "time_bucket('30 seconds', ts)", "date_bin(INTERVAL '2 minutes', ts, TIMESTAMP '2026-01-01 00:00:30')",
           "time_bucket(INTERVAL '10 minutes', ts, INTERVAL '3 minutes')", "floor(extract(epoch FROM ts) / 120) * 120",
           "epoch_ms(date_trunc('second', ts))"]
AGGREGATES = ["count(*)", "count(value)", "count(DISTINCT host)", "sum(code)", "avg(value)", "min(value)",
              "max(ts)", "stddev(value)", "var_pop(value)", "quantile_cont(value, 0.25)", "median(value)",
              "percentile_cont(0.9) WITHIN GROUP (ORDER BY value)", "percentile_cont(0.1) WITHIN GROUP (ORDER BY "
              "value DESC)", "bool_and(ok)", "bool_or(ok)", "arg_max(value, ts)", "arg_min(host, value)",
              "max_by(code, ts)", "first(value ORDER BY ts)", "last(message ORDER BY ts)",
              "count(*) FILTER (WHERE code = 500)", "sum(value) FILTER (WHERE ok)"]
FILTERS = ["host IN ('host-1', 'host-3')", "code >= 404", "value BETWEEN 10 AND 60", "message ILIKE '%disk%'",
           "regexp_matches(message, '[0-9]+')", "starts_with(service, 'ap')", "strpos(message, 'full') > 0",
           "split_part(host, '-', 2) = '2'", "ts > now() - INTERVAL '3 hours'", "NOT ok", "service IS NULL",
           "ts >= TIMESTAMP '2020-01-01' AND ts < now()", "extract(minute FROM ts) < 30",
           "date_part('second', ts) BETWEEN 10 AND 40"]

QUERIES = (
    [f"SELECT {b} AS bucket, count(*) AS n FROM {T} GROUP BY 1" for b in BUCKETS]
    + [f"SELECT host, {a} AS agg FROM {T} GROUP BY host" for a in AGGREGATES]
    + [f"SELECT count(*) AS n, sum(value) AS s FROM {T} WHERE {f}" for f in FILTERS]
    + [f"SELECT {b} AS bucket, host, avg(value) AS v FROM {T} WHERE {f} GROUP BY 1, 2"
       for b, f in zip(BUCKETS, FILTERS, strict=False)]
    + [
        # Last point and windows.
        f"SELECT DISTINCT ON (host) host, ts, value FROM {T} ORDER BY host, ts DESC",
        f"SELECT DISTINCT ON (host, service) host, service, value FROM {T} WHERE value IS NOT NULL "
        "ORDER BY host, service, value DESC",
        f"SELECT DISTINCT ON (host) * FROM {T} ORDER BY host, ts",
        f"SELECT host, ts, value, lag(value) OVER (PARTITION BY host ORDER BY ts) AS prev FROM {T}",
        f"SELECT host, ts, lead(value, 2, -1) OVER (PARTITION BY host ORDER BY ts) AS next2 FROM {T}",
        f"SELECT host, ts, row_number() OVER (PARTITION BY host ORDER BY ts DESC) AS rn FROM {T}",
        f"SELECT host, code, rank() OVER (PARTITION BY host ORDER BY code) AS r, dense_rank() OVER "
        f"(PARTITION BY host ORDER BY code) AS d FROM {T} WHERE code IS NOT NULL",
        f"SELECT host, ts, sum(value) OVER (PARTITION BY host ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND "
        f"CURRENT ROW) AS running FROM {T}",
        f"SELECT host, ts, avg(value) OVER (PARTITION BY host ORDER BY ts ROWS BETWEEN 3 PRECEDING AND 3 "
        f"FOLLOWING) AS smooth FROM {T}",
        f"SELECT host, ts, count(*) OVER (PARTITION BY host) AS per_host FROM {T}",
        f"SELECT host, ts, value FROM {T} QUALIFY row_number() OVER (PARTITION BY host ORDER BY value DESC, ts) "
        "<= 2",
        f"SELECT host, ts, value - first_value(value) OVER (PARTITION BY host ORDER BY ts) AS since_first "
        f"FROM {T}",
        f"SELECT host, max(value) AS m, row_number() OVER (ORDER BY max(value) DESC) AS place FROM {T} "
        "GROUP BY host",
        # CTEs, subqueries, unions, joins.
        f"WITH b AS (SELECT time_bucket(INTERVAL '5 minutes', ts) AS t5, host, avg(value) AS v FROM {T} "
        "GROUP BY 1, 2) SELECT t5, max(v) AS worst FROM b GROUP BY t5",
        f"WITH x AS (SELECT * FROM {T}) SELECT host, count(*) AS n FROM x WHERE code = 500 GROUP BY host",
        f"WITH x AS (SELECT * FROM {T} WHERE ok) SELECT a.host, count(*) AS n FROM x a JOIN x b "
        "ON a.host = b.host AND a.code = b.code GROUP BY a.host",
        f"WITH hot AS (SELECT host FROM {T} GROUP BY host HAVING avg(value) > 45) SELECT count(*) AS n FROM {T} "
        "WHERE host IN (SELECT host FROM hot)",
        f"SELECT host, value FROM {T} WHERE value > (SELECT quantile_cont(value, 0.95) FROM {T})",
        f"SELECT host, count(*) AS n FROM {T} t1 WHERE EXISTS (SELECT 1 FROM {T} t2 WHERE t2.host = t1.host "
        "AND t2.code = 500) GROUP BY host",
        f"SELECT host, count(*) AS n FROM {T} t1 WHERE NOT EXISTS (SELECT 1 FROM {T} t2 WHERE t2.host = t1.host "
        "AND t2.value > 99) GROUP BY host",
        f"SELECT s.host, s.n FROM (SELECT host, count(*) AS n FROM {T} GROUP BY host) s WHERE s.n > 10",
        f"SELECT host FROM {T} WHERE code = 500 UNION ALL SELECT host FROM {T} WHERE code = 404",
        f"SELECT host FROM {T} WHERE code = 500 UNION SELECT host FROM {T} WHERE code = 404",
        f"SELECT host, service FROM {T} WHERE ok INTERSECT SELECT host, service FROM {T} WHERE code = 200",
        f"SELECT host FROM {T} EXCEPT SELECT host FROM {T} WHERE value > 99.5",
        f"SELECT a.host, count(*) AS n FROM {T} a LEFT JOIN {T} b ON a.host = b.host AND b.code = 500 "
        "AND a.ts = b.ts GROUP BY a.host",
        f"SELECT a.host, b.host AS other FROM (SELECT DISTINCT host FROM {T}) a CROSS JOIN "
        f"(SELECT DISTINCT host FROM {T} WHERE host < 'host-3') b",
        f"SELECT t5, n, n - lag(n) OVER (ORDER BY t5) AS change FROM (SELECT time_bucket('5 minutes', ts) AS t5, "
        f"count(*) AS n FROM {T} GROUP BY 1) s",
        f"WITH recent AS (SELECT * FROM {T} WHERE ts > now() - INTERVAL '1 day'), old AS (SELECT * FROM {T} "
        "WHERE ts <= now() - INTERVAL '1 day') SELECT (SELECT count(*) FROM recent) AS r, "
        "(SELECT count(*) FROM old) AS o",
        # Strings, numbers, conditionals.
        f"SELECT upper(host) AS h, lower(service) AS s, length(message) AS l FROM {T} WHERE message <> ''",
        f"SELECT regexp_extract(message, '([0-9]+)', 1) AS n, count(*) AS c FROM {T} GROUP BY 1",
        f"SELECT regexp_replace(host, '-([0-9])', '_\\1', 'g') AS h, count(*) AS c FROM {T} GROUP BY 1",
        f"SELECT replace(message, ' ', '_') AS m, trim(service) AS s, left(host, 4) AS l, right(host, 1) AS r "
        f"FROM {T}",
        f"SELECT concat(host, ':', service) AS hs, host || '/' || coalesce(service, '-') AS p FROM {T}",
        f"SELECT substring(host, 2, 3) AS s, strpos(host, '-') AS p FROM {T}",
        f"SELECT greatest(code, 300) AS g, least(value, 20.5) AS l, abs(value - 50) AS a, round(value, 1) AS r "
        f"FROM {T}",
        f"SELECT CASE WHEN code >= 500 THEN 'error' WHEN code >= 400 THEN 'client' ELSE 'ok' END AS kind, "
        f"count(*) AS n FROM {T} GROUP BY 1",
        f"SELECT nullif(code, 200) AS c, count(*) AS n FROM {T} GROUP BY 1",
        # (x / 0 is NULL on both engines, where DuckDB alone answers infinity: test_query_engines pins it.)
        f"SELECT code % 7 AS b, value / 3 AS c FROM {T} WHERE code IS NOT NULL",
        f"SELECT CAST(value AS BIGINT) AS v, CAST(code AS VARCHAR) AS c, value::INTEGER AS i FROM {T} "
        "WHERE value IS NOT NULL",
        f"SELECT host IS NOT DISTINCT FROM 'host-1' AS same, count(*) AS n FROM {T} GROUP BY 1",
        f"SELECT count(*) AS n FROM {T} WHERE host NOT IN ('host-1') AND NOT (value < 10 OR value > 90)",
        f"SELECT count(*) AS n FROM {T} WHERE message NOT ILIKE '%OK%' OR message IS NULL",
        f"SELECT to_timestamp(epoch(ts)) = ts AS same, count(*) AS n FROM {T} GROUP BY 1",
        f"SELECT epoch_us(ts) % 1000000 AS micros, epoch_ms(ts) AS ms FROM {T}",
        f"SELECT extract(year FROM ts) AS y, extract(month FROM ts) AS mo, extract(day FROM ts) AS d, "
        f"extract(doy FROM ts) AS doy, extract(isodow FROM ts) AS idow, extract(week FROM ts) AS w FROM {T}",
        f"SELECT extract(millisecond FROM ts) AS ms, extract(microsecond FROM ts) AS us, extract(quarter FROM ts) "
        f"AS q FROM {T}",
        # Ordering, limits, offsets.
        f"SELECT host, ts, value FROM {T} ORDER BY value DESC, ts LIMIT 7",
        f"SELECT host, ts FROM {T} ORDER BY ts, host LIMIT 5 OFFSET 10",
        f"SELECT host, value FROM {T} ORDER BY value, ts LIMIT 12",
        f"SELECT service, count(*) AS n FROM {T} GROUP BY service ORDER BY service DESC",
        f"SELECT host, avg(value) AS v FROM {T} GROUP BY host HAVING count(*) > 20 ORDER BY v DESC LIMIT 3",
        f"SELECT DISTINCT service FROM {T}",
        f"SELECT count(*) AS n FROM {T} WHERE ts BETWEEN now() - INTERVAL '2 hours' AND now() + INTERVAL '1 hour'",
        f"SELECT time_bucket(INTERVAL '15 minutes', ts) AS w, approx_count_distinct(host) AS hosts FROM {T} "
        "GROUP BY 1",
    ]
)


# The grids, as Spark runs them: each expression still a column of its own, compared with DuckDB's answer.
GRIDS = {
    "aggregates": f"SELECT host, {', '.join(f'{a} AS a{i}' for i, a in enumerate(AGGREGATES))} FROM {T} "
                  "GROUP BY host",
    "buckets": f"SELECT {', '.join(f'{b} AS b{i}' for i, b in enumerate(BUCKETS))} FROM {T}",
    "filters": f"SELECT {', '.join(f'count(*) FILTER (WHERE {f}) AS f{i}' for i, f in enumerate(FILTERS))} "
               f"FROM {T}",
}
GRID_QUERIES = {f"SELECT {b} AS bucket, count(*) AS n FROM {T} GROUP BY 1" for b in BUCKETS} | {
    f"SELECT host, {a} AS agg FROM {T} GROUP BY host" for a in AGGREGATES} | {
    f"SELECT count(*) AS n, sum(value) AS s FROM {T} WHERE {f}" for f in FILTERS}
SPARK_QUERIES = ([pytest.param(sql, id=f"grid-{name}") for name, sql in GRIDS.items()]
                 + [sql for sql in QUERIES if sql not in GRID_QUERIES])


async def _check(query, keys, example_index, sql: str, engine: str) -> None:  # noqa: F811
    index_id, paths, _ = example_index
    concrete = sql.format(t=f'"{index_id}"')
    reference = _reference(paths, sql)
    if engine == "local":
        answer = await _run(query, keys, concrete, "local")
    else:
        # A join is refused on Spark (the local test checks its answer).
        answer = await spark_or_refused(query, keys, concrete, reference)
    assert _same(answer, reference), concrete


@pytest.mark.parametrize("sql", QUERIES)
async def test_the_corpus_answers_as_duckdb_on_the_local_engine(query, keys, example_index, sql):  # noqa: F811
    await _check(query, keys, example_index, sql, "local")


@pytest.mark.spark
@pytest.mark.parametrize("sql", SPARK_QUERIES)
async def test_the_corpus_answers_as_duckdb_on_spark(query, keys, example_index, sql):  # noqa: F811
    await _check(query, keys, example_index, sql, "spark")
