"""The SQL Strata speaks, as one catalog: every construct and function a query may use, what it means, how each
engine runs it, and an example. It is the single source for the validator (what is allowed), the engines'
translation (engine_forms.py names the entries it rewrites), Flight SQL's GetSqlInfo function lists, and the
reference page docs/sql.md (`python -m strata_core.sql.docs` writes it; a test runs every example).

The dialect is PostgreSQL-flavoured SQL as DuckDB reads it (dialect.py). Every example reads the example index
`EXAMPLE_INDEX` of `EXAMPLE_FIELDS`; `{t}` in an example stands for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

EXAMPLE_INDEX = "metrics"
EXAMPLE_FIELDS = (("ts", "timestamp"), ("host", "string"), ("service", "string"), ("value", "f64"),
                  ("code", "i64"), ("ok", "bool"), ("message", "string"))

BOTH = "both engines run it as written"


def _present(*names: str) -> tuple[type[exp.Expression], ...]:
    """The sqlglot expressions of these names that this sqlglot has (newer ones parse more functions typed)."""
    return tuple(getattr(exp, name) for name in names if hasattr(exp, name))


@dataclass(frozen=True, slots=True)
class Entry:
    """One construct or function. `nodes`: the sqlglot expressions it admits; `names`: the function names parsed
    as named calls (dialect.OWNED_FUNCTIONS or functions sqlglot does not know). `engines` says how the local
    engine (DuckDB) and Spark run it; `approximate` the error bound of an approximate function."""

    title: str
    group: str
    summary: str
    example: str
    nodes: tuple[type[exp.Expression], ...] = ()
    names: tuple[str, ...] = ()
    engines: str = BOTH
    approximate: str | None = None
    # The example's answer depends on the engine's approximation or on ties: the suite runs it and checks only
    # its shape, not its values against DuckDB's.
    exact: bool = True
    # Kind for Flight SQL's GetSqlInfo lists: "numeric", "string", "datetime", "system" or "" (not a function).
    function_kind: str = ""


GROUPS = ("Statements", "Time buckets", "Time values and filters", "Conditions", "Aggregates", "Last point",
          "Window functions", "Scalar functions", "Strings")

ENTRIES: tuple[Entry, ...] = (
    # --- Statements
    Entry("SELECT ... FROM index", "Statements",
          "One index is the table; it may be named as listed by Flight SQL (`strata.indexes.<index>`). "
          "WHERE, GROUP BY, HAVING, ORDER BY, LIMIT and OFFSET as in PostgreSQL.",
          "SELECT host, value FROM {t} WHERE value > 50 ORDER BY value DESC, host LIMIT 5 OFFSET 1",
          nodes=(exp.Select, exp.From, exp.Where, exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit,
                 exp.Offset, exp.Distinct, exp.Star, exp.Alias, exp.Column, exp.Table, exp.TableAlias)),
    Entry("WITH (common table expressions)", "Statements",
          "Named subqueries over the index, referenced any number of times. Recursive CTEs are refused.",
          "WITH per_host AS (SELECT host, avg(value) AS v FROM {t} GROUP BY host) "
          "SELECT host, v FROM per_host WHERE v > 10 ORDER BY host",
          nodes=(exp.With, exp.CTE)),
    Entry("Subqueries", "Statements",
          "In FROM, IN, EXISTS and as scalars, over the same index.",
          "SELECT host, value FROM {t} WHERE value > (SELECT avg(value) FROM {t}) "
          "AND host IN (SELECT host FROM {t} WHERE code = 500) ORDER BY host, value LIMIT 10",
          nodes=(exp.Subquery, exp.Exists)),
    Entry("UNION ALL, UNION, INTERSECT, EXCEPT", "Statements",
          "Set operations of SELECTs over the index.",
          "SELECT host FROM {t} WHERE code = 500 UNION ALL SELECT host FROM {t} WHERE code = 404 ORDER BY host",
          nodes=(exp.Union, exp.Intersect, exp.Except)),
    Entry("Self-joins", "Statements",
          "Inner, LEFT, RIGHT, FULL and CROSS joins of the index with itself (or with a CTE over it); columns "
          "qualified by each side's alias.",
          "SELECT a.host, count(*) AS n FROM {t} a JOIN {t} b ON a.host = b.host AND a.ts = b.ts "
          "GROUP BY a.host ORDER BY a.host",
          nodes=(exp.Join,), engines="the local engine only: a join can multiply rows without bound, and Spark "
          "cannot stop a task inside a join's loop after the query's time limit, where DuckDB stops it; a plan "
          "over the local limits is refused"),
    Entry("CASE, CAST, ::, COALESCE, NULLIF, IS [NOT] DISTINCT FROM", "Statements",
          "Conditional and conversion expressions.",
          "SELECT CASE WHEN value > 50 THEN 'high' ELSE 'low' END AS level, CAST(code AS VARCHAR) AS c, "
          "coalesce(message, '') AS m FROM {t} ORDER BY ts, host LIMIT 3",
          nodes=(exp.Case, exp.If, exp.Cast, exp.TryCast, exp.Coalesce, exp.Nullif, exp.NullSafeEQ,
                 exp.NullSafeNEQ, exp.DataType, exp.DataTypeParam)),
    # --- Time buckets
    Entry("date_trunc(unit, ts)", "Time buckets",
          "The instant truncated to the unit (microseconds .. year; weeks start on Monday), in UTC.",
          "SELECT date_trunc('minute', ts) AS minute, count(*) AS n FROM {t} GROUP BY 1 ORDER BY 1",
          nodes=(exp.TimestampTrunc, exp.DateTrunc), function_kind="datetime"),
    Entry("time_bucket(width, ts [, origin | offset])", "Time buckets",
          "TimescaleDB's bucket: the start of the `width`-long bucket holding `ts`. The width is an interval of "
          "fixed length (microseconds .. weeks), as INTERVAL '5 minutes' or '5 minutes'; buckets are aligned on "
          "2000-01-03T00:00:00Z (TimescaleDB's and DuckDB's default), or on `origin`, or shifted by `offset`.",
          "SELECT time_bucket(INTERVAL '5 minutes', ts) AS bucket, max(value) AS v FROM {t} GROUP BY bucket "
          "ORDER BY bucket",
          names=("time_bucket",), engines="rewritten by Strata into integer arithmetic on epoch microseconds "
          "(DuckDB: epoch_us, make_timestamp; Spark: unix_micros, timestamp_micros)", function_kind="datetime"),
    Entry("date_bin(width, ts [, origin])", "Time buckets",
          "InfluxDB 3 / DataFusion's bucket: as time_bucket, aligned on the Unix epoch by default.",
          "SELECT date_bin(INTERVAL '10 minutes', ts) AS bucket, count(*) AS n FROM {t} GROUP BY 1 ORDER BY 1",
          names=("date_bin",), engines="rewritten by Strata as time_bucket (DuckDB has no date_bin; its "
          "time_bucket's default origin differs)", function_kind="datetime"),
    Entry("floor(extract(epoch from ts) / N) * N, epoch_col - epoch_col % N", "Time buckets",
          "Integer-epoch buckets, as Grafana's `$__timeGroup` and `$__unixEpochGroup` expand.",
          "SELECT floor(extract(epoch FROM ts) / 60) * 60 AS time, avg(value) AS v FROM {t} GROUP BY 1 ORDER BY 1",
          nodes=(exp.Floor, exp.Ceil, exp.Mod, exp.Div, exp.Mul, exp.Add, exp.Sub, exp.IntDiv, exp.Neg)),
    # --- Time values and filters
    Entry("extract(field FROM ts), date_part('field', ts)", "Time values and filters",
          "epoch (seconds, with the fraction), year, quarter, month, week (ISO), day, dow (0 = Sunday), isodow "
          "(1 = Monday), doy, hour, minute, second, millisecond and microsecond (within the minute, as DuckDB).",
          "SELECT extract(hour FROM ts) AS h, date_part('dow', ts) AS d, count(*) AS n FROM {t} "
          "GROUP BY 1, 2 ORDER BY 1, 2",
          nodes=(exp.Extract, exp.Var), names=("date_part", "datepart"),
          engines="rewritten by Strata where Spark's fields differ (epoch, second, dow, isodow, millisecond)",
          function_kind="datetime"),
    Entry("epoch(ts), epoch_ms(ts | n), epoch_us(ts), to_timestamp(seconds)", "Time values and filters",
          "Seconds (a double), milliseconds and microseconds since the Unix epoch; epoch_ms of a number and "
          "to_timestamp make an instant.",
          "SELECT epoch_ms(ts) AS ms, to_timestamp(epoch(ts)) AS again FROM {t} ORDER BY ts, host LIMIT 3",
          names=("epoch", "epoch_ms", "epoch_us", "to_timestamp"),
          engines="rewritten by Strata (Spark: unix_micros, timestamp_micros)", function_kind="datetime"),
    Entry("now(), current_timestamp", "Time values and filters",
          "The query's instant: fixed once when the query is planned, so pruning and execution see the same "
          "instant. A query that uses it is never answered from the result cache.",
          "SELECT count(*) AS n FROM {t} WHERE ts > now() - INTERVAL '1 day'",
          nodes=(exp.CurrentTimestamp,), names=("now", "get_current_timestamp", "transaction_timestamp"),
          engines="replaced by Strata with the planned instant", function_kind="datetime"),
    Entry("INTERVAL arithmetic, timestamp literals and casts", "Time values and filters",
          "`ts >= TIMESTAMP '2026-01-01 00:00:00'`, `'2026-01-01T00:00:00Z'`, `ts - INTERVAL '5 minutes'`; "
          "literals without an offset are UTC. Bounds on the timestamp column prune files and row groups.",
          "SELECT count(*) AS n FROM {t} WHERE ts BETWEEN now() - INTERVAL '2 hours' AND now()",
          nodes=(exp.Interval,)),
    # --- Conditions
    Entry("Comparisons, BETWEEN, IN, IS [NOT] NULL, AND, OR, NOT", "Conditions",
          "Bounds on columns with literals prune files, row groups and rows.",
          "SELECT count(*) AS n FROM {t} WHERE host IN ('host-1', 'host-2') AND NOT (code BETWEEN 400 AND 499) "
          "AND message IS NOT NULL",
          nodes=(exp.And, exp.Or, exp.Not, exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Between,
                 exp.In, exp.Is, exp.Paren, exp.Literal, exp.Boolean, exp.Null, exp.Tuple)),
    Entry("LIKE, ILIKE", "Conditions",
          "Patterns with % and _; a backslash escapes. ILIKE ignores case.",
          "SELECT count(*) AS n FROM {t} WHERE message ILIKE '%DISK%' AND host LIKE 'host-%'",
          nodes=(exp.Like, exp.ILike), function_kind="string"),
    Entry("text_match(column, 'terms')", "Conditions",
          "Every term is a token of the value (tokens: runs of ASCII letters and digits, lowercased); answered "
          "from the full-text artifacts where built.",
          "SELECT count(*) AS n FROM {t} WHERE text_match(message, 'disk full')",
          names=("text_match",), engines="Strata's own predicate, rendered for each engine",
          function_kind="string"),
    # --- Aggregates
    Entry("count, sum, min, max, avg, count(DISTINCT)", "Aggregates", "The usual aggregates.",
          "SELECT host, count(*) AS n, count(DISTINCT service) AS s, avg(value) AS v FROM {t} GROUP BY host "
          "ORDER BY host",
          nodes=(exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg), function_kind="numeric"),
    Entry("aggregate FILTER (WHERE ...)", "Aggregates", "An aggregate over the rows that match the condition.",
          "SELECT count(*) FILTER (WHERE code >= 500) AS errors, count(*) AS n FROM {t}",
          nodes=(exp.Filter,)),
    Entry("stddev, stddev_samp, stddev_pop, variance, var_samp, var_pop", "Aggregates",
          "Sample (stddev, variance) and population deviations.",
          "SELECT host, stddev(value) AS sd, var_pop(value) AS vp FROM {t} GROUP BY host ORDER BY host",
          nodes=(exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance, exp.VariancePop),
          function_kind="numeric"),
    Entry("quantile_cont(x, q), percentile_cont(q) WITHIN GROUP (ORDER BY x), median(x)", "Aggregates",
          "Exact percentiles with linear interpolation between the two nearest values.",
          "SELECT host, quantile_cont(value, 0.9) AS p90, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) "
          "AS p50, median(value) AS m FROM {t} GROUP BY host ORDER BY host",
          nodes=(exp.WithinGroup, exp.PercentileCont), names=("quantile_cont", "quantile", "median"),
          engines="DuckDB: quantile_cont; Spark: percentile", function_kind="numeric"),
    Entry("approx_quantile(x, q)", "Aggregates",
          "An approximate percentile.",
          "SELECT approx_quantile(value, 0.99) AS p99 FROM {t}",
          names=("approx_quantile",), engines="DuckDB: approx_quantile (t-digest); Spark: percentile_approx with "
          "accuracy 10,000",
          approximate="DuckDB's t-digest keeps 100 centroids: the value returned lies within about 1% of the "
          "rank asked for (less near the tails); Spark's percentile_approx returns a value of the data whose "
          "rank is within n/10,000 of the one asked for", exact=False, function_kind="numeric"),
    Entry("approx_count_distinct(x)", "Aggregates", "An approximate count of distinct values (HyperLogLog).",
          "SELECT approx_count_distinct(host) AS hosts FROM {t}",
          nodes=(exp.ApproxDistinct,), engines="DuckDB: HyperLogLog; Spark: HyperLogLog++ (relative standard "
          "deviation 0.05)",
          approximate="relative error about 2% (DuckDB) and at most 5% standard deviation (Spark); exact on "
          "small sets in both", exact=False, function_kind="numeric"),
    Entry("bool_and, bool_or", "Aggregates", "Whether every / any value is true.",
          "SELECT host, bool_and(ok) AS all_ok, bool_or(ok) AS any_ok FROM {t} GROUP BY host ORDER BY host",
          nodes=(exp.LogicalAnd, exp.LogicalOr)),
    Entry("arg_max(x, by), arg_min(x, by), max_by, min_by", "Aggregates",
          "The value of x on the row where `by` is largest (smallest), among the rows where x is not NULL; on "
          "ties, any of the tied rows.",
          "SELECT host, arg_max(value, ts) AS last_value FROM {t} GROUP BY host ORDER BY host",
          nodes=(exp.ArgMax, exp.ArgMin), engines="DuckDB: arg_max / arg_min; Spark: max_by / min_by over the "
          "rows where x is not NULL",
          function_kind="numeric"),
    Entry("first(x ORDER BY ts), last(x ORDER BY ts)", "Aggregates",
          "The value of x (NULL included) on the first (last) row in the given order; the ORDER BY is required.",
          "SELECT host, first(value ORDER BY ts) AS first_v, last(value ORDER BY ts) AS last_v FROM {t} "
          "GROUP BY host ORDER BY host",
          nodes=(exp.First, exp.Last), engines="rewritten by Strata as DuckDB's arg_min_null / arg_max_null "
          "(Spark: min_by / max_by)"),
    # --- Last point
    Entry("DISTINCT ON (keys)", "Last point",
          "One row per distinct key: the first in the ORDER BY, which begins with the keys (TSBS's lastpoint).",
          "SELECT DISTINCT ON (host) host, ts, value FROM {t} ORDER BY host, ts DESC",
          engines="DuckDB runs it; for Spark Strata rewrites it as row_number() = 1 in a subquery, keeping the "
          "outer order and columns"),
    # --- Window functions
    Entry("row_number, rank, dense_rank, lag, lead, first_value, last_value OVER (...)", "Window functions",
          "Window functions with PARTITION BY, ORDER BY and frames (ROWS / RANGE BETWEEN ...).",
          "SELECT host, ts, value - lag(value) OVER (PARTITION BY host ORDER BY ts) AS delta FROM {t} "
          "ORDER BY host, ts LIMIT 5",
          nodes=(exp.Window, exp.WindowSpec, exp.RowNumber, exp.Lag, exp.Lead, exp.FirstValue,
                 exp.LastValue, *_present("Rank", "DenseRank", "PercentRank", "CumeDist", "Ntile")),
          names=("rank", "dense_rank", "percent_rank", "cume_dist", "ntile")),
    Entry("sum, avg, count, min, max OVER (... ROWS BETWEEN ...)", "Window functions",
          "Running and moving aggregates.",
          "SELECT host, ts, avg(value) OVER (PARTITION BY host ORDER BY ts ROWS BETWEEN 2 PRECEDING AND "
          "CURRENT ROW) AS moving FROM {t} ORDER BY host, ts LIMIT 5"),
    Entry("QUALIFY", "Window functions", "A filter on window functions' results.",
          "SELECT host, ts, value FROM {t} QUALIFY row_number() OVER (PARTITION BY host ORDER BY ts DESC) = 1 "
          "ORDER BY host",
          nodes=(exp.Qualify,), engines="DuckDB runs it; for Spark Strata rewrites it as a subquery"),
    # --- Scalar functions
    Entry("abs, round, floor, ceil, greatest, least, +, -, *, /, %", "Scalar functions",
          "Arithmetic; a division or modulo by zero is NULL on both engines.",
          "SELECT round(value, 1) AS r, greatest(code, 200) AS g, least(value, 10) AS l FROM {t} ORDER BY ts, "
          "host LIMIT 3",
          nodes=(exp.Abs, exp.Round, exp.Greatest, exp.Least, exp.Sqrt, exp.Ln, exp.Log, exp.Exp, exp.Pow,
                 exp.Sign), function_kind="numeric"),
    # --- Strings
    Entry("lower, upper, length, concat, ||, substring, replace, trim, left, right", "Strings",
          "String functions.",
          "SELECT upper(left(host, 4)) AS h, length(message) AS len, replace(service, '-', '_') AS s, "
          "trim(message) AS m FROM {t} ORDER BY ts, host LIMIT 3",
          nodes=(exp.Lower, exp.Upper, exp.Length, exp.Concat, exp.DPipe, exp.Substring, exp.Replace, exp.Trim,
                 exp.Left, exp.Right), function_kind="string"),
    Entry("split_part, starts_with, strpos", "Strings",
          "The n-th field of a split (1-based), a prefix test, the 1-based position of a substring (0: absent).",
          "SELECT split_part(host, '-', 2) AS n, starts_with(service, 'api') AS api, strpos(message, 'disk') AS p "
          "FROM {t} ORDER BY ts, host LIMIT 3",
          nodes=(exp.SplitPart, exp.StartsWith, exp.StrPosition), function_kind="string"),
    Entry("regexp_matches, regexp_extract, regexp_replace", "Strings",
          "RE2 regular expressions, as DuckDB has them. On Spark (Java regular expressions) a pattern runs only "
          "when it means the same there: letters, escapes \\d \\w \\s \\b, classes, groups, alternation and "
          "quantifiers; other patterns run on the local engine. regexp_replace replaces the first match, or "
          "every match with the 'g' option (on Spark: only with 'g').",
          "SELECT regexp_extract(host, '([0-9]+)$', 1) AS n, regexp_replace(message, '[0-9]+', '#', 'g') AS m "
          "FROM {t} WHERE regexp_matches(message, 'disk|error') ORDER BY ts, host LIMIT 3",
          nodes=(exp.RegexpLike, exp.RegexpExtract, exp.RegexpReplace), function_kind="string",
          engines="DuckDB runs them; Spark runs the patterns whose meaning is the same in Java (else the query "
          "runs locally)"),
)

# Queries as clients write them: (title, as written in the client, as the client sends it). In the expansions
# `{t}` is the index, `{start}`/`{end}` the panel's time range (RFC 3339), `{start_s}`/`{end_s}` the same in
# epoch seconds. Grafana's PostgreSQL data source expands `$__timeFilter(c)` to `c BETWEEN '<from>' AND '<to>'`
# and `$__timeGroupAlias(c, '1m')` to `floor(extract(epoch from c)/60)*60 AS "time"`; its Flight SQL (InfluxDB
# SQL) data source expands `$__timeFilter(c)` to `c >= '<from>' AND c <= '<to>'`, `$__dateBinAlias(c)` to
# `date_bin(interval '<interval> second', c, timestamp '1970-01-01T00:00:00Z') as c_binned`, `$__timeFrom` to
# `cast('<from>' as timestamp)` and `$__timeGroupAlias(c, hour)` to `datepart('hour', c) as c_hour,...`.
CLIENT_EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("Grafana (PostgreSQL data source): a time series",
     "SELECT $__timeGroupAlias(ts, '1m'), avg(value) AS value FROM {t} WHERE $__timeFilter(ts) GROUP BY 1 "
     "ORDER BY 1",
     "SELECT floor(extract(epoch from ts)/60)*60 AS \"time\", avg(value) AS value FROM {t} WHERE ts BETWEEN "
     "'{start}' AND '{end}' GROUP BY 1 ORDER BY 1"),
    ("Grafana (PostgreSQL data source): one series per host",
     "SELECT $__timeGroupAlias(ts, '5m'), host AS metric, max(value) AS value FROM {t} WHERE $__timeFilter(ts) "
     "GROUP BY 1, 2 ORDER BY 1, 2",
     "SELECT floor(extract(epoch from ts)/300)*300 AS \"time\", host AS metric, max(value) AS value FROM {t} "
     "WHERE ts BETWEEN '{start}' AND '{end}' GROUP BY 1, 2 ORDER BY 1, 2"),
    ("Grafana (Flight SQL / InfluxDB SQL data source): date_bin",
     "SELECT $__dateBinAlias(ts), avg(value) AS value FROM {t} WHERE $__timeFilter(ts) GROUP BY 1 ORDER BY 1",
     "SELECT date_bin(interval '60 second', ts, timestamp '1970-01-01T00:00:00Z') as ts_binned, avg(value) AS "
     "value FROM {t} WHERE ts >= '{start}' AND ts <= '{end}' GROUP BY 1 ORDER BY 1"),
    ("Grafana (Flight SQL / InfluxDB SQL data source): datepart groups",
     "SELECT $__timeGroupAlias(ts, hour), count(*) AS n FROM {t} WHERE ts >= $__timeFrom AND ts <= $__timeTo "
     "GROUP BY 1, 2 ORDER BY 1, 2",
     "SELECT datepart('hour', ts) as ts_hour,datepart('minute', ts) as ts_minute, count(*) AS n FROM {t} WHERE "
     "ts >= cast('{start}' as timestamp) AND ts <= cast('{end}' as timestamp) GROUP BY 1, 2 ORDER BY 1, 2"),
    ("Grafana table panel: the last point of every host",
     "SELECT DISTINCT ON (host) host, ts, value FROM {t} WHERE $__timeFilter(ts) ORDER BY host, ts DESC",
     "SELECT DISTINCT ON (host) host, ts, value FROM {t} WHERE ts BETWEEN '{start}' AND '{end}' "
     "ORDER BY host, ts DESC"),
    ("A relative range, as notebooks write it",
     "SELECT time_bucket('1 minute', ts) AS time, count(*) AS n FROM {t} WHERE ts > now() - INTERVAL '1 day' "
     "GROUP BY 1 ORDER BY 1",
     "SELECT time_bucket('1 minute', ts) AS time, count(*) AS n FROM {t} WHERE ts > now() - INTERVAL '1 day' "
     "GROUP BY 1 ORDER BY 1"),
)

# Nodes every statement is made of, not constructs of their own.
STRUCTURE: tuple[type[exp.Expression], ...] = (exp.Identifier, exp.Select, exp.Column)


def allowed_nodes() -> tuple[type[exp.Expression], ...]:
    return tuple(dict.fromkeys(node for entry in ENTRIES for node in entry.nodes)) + STRUCTURE


def allowed_names() -> frozenset[str]:
    return frozenset(name for entry in ENTRIES for name in entry.names)


_FUNCTION = re.compile(r"\b[a-z_][a-z_0-9]*\b")
_ARGUMENTS = re.compile(r"\([^()]*\)")


def function_names(kind: str) -> list[str]:
    """The function names of one GetSqlInfo kind, upper case as Flight SQL clients show them: the names each
    entry's title spells."""
    names: set[str] = set()
    for entry in ENTRIES:
        if entry.function_kind == kind:
            title, previous = entry.title, None
            while title != previous:
                title, previous = _ARGUMENTS.sub("", title), title
            names.update(name.upper() for name in _FUNCTION.findall(title))
    return sorted(names)
