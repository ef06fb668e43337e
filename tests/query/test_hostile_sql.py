"""SQL written by a hostile user, through query-api's HTTP API on both engines: files and table functions, statements
that write or reconfigure, other tables and other indexes, other tenants' rows, conditions nested or chained to
exhaust the planner, and queries built to exhaust the engines.

Invariants pinned:
- HS-1 every hostile attempt answers a 4xx problem+json, never a 5xx and never rows;
- HS-2 no detail shows internals: no Python class or object repr, no Spark Connect address, no stack trace;
- HS-3 a tenant's key answers only the tenant's own rows, however the SQL reaches for another partition;
- HS-4 long conditions (400-term OR and AND chains, IN lists of 5,000 and 10,000 values) plan and answer exactly;
- HS-5 the engines are locked behind the validator: the local engine's DuckDB reads no file, loads no extension and
  takes no configuration change, and a local query's memory is bounded, a query over it answered 422 naming the
  limit.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from strata_core.domain.fields import FieldType
from strata_core.storage import ObjectStore
from strata_frame.web.problems import public_detail
from strata_jobs.pruned_scan import ScanTask
from strata_query.execution.hot_tier import HotTier
from strata_query.execution.local_query import LocalEngine, QueryMemoryExceeded
from strata_query.execution.scan_request import VIEW, ScanRequest
from strata_query.planning.caches import FooterCache
from strata_services.sample_data import metrics_index_config
from tests.helpers import delete_index, unique_index_id
from tests.indexer.indexing_helpers import ingest, rows_for
from tests.planner.compaction_helpers import open_window

pytestmark = [pytest.mark.postgres, pytest.mark.spark]

ENGINES = ["local", "spark"]
DEFAULT_ROWS, ACME_ROWS = 300, 200


class Hostile:
    def __init__(self, index_id: str, other_id: str, window: int) -> None:
        self.index_id, self.other_id, self.window = index_id, other_id, window

    def sql(self, template: str) -> str:
        return template.replace("{i}", f'"{self.index_id}"').replace("{o}", f'"{self.other_id}"').replace(
            "{w}", str(self.window))


@pytest.fixture(scope="module")
async def hostile(indexer, keys):
    window = open_window() - 1800
    index_id, other_id = unique_index_id("hostile"), unique_index_id("other")
    for name in (index_id, other_id):
        config = metrics_index_config(name, messages=True, query={"default_lookback_secs": 3 * 86400})
        response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
        assert response.status_code == 201, response.text
    await ingest(indexer, keys, index_id, rows_for(window, DEFAULT_ROWS, seed=1))
    await ingest(indexer, keys, index_id, rows_for(window, ACME_ROWS, seed=2), partition="acme")
    await ingest(indexer, keys, other_id, rows_for(window, 100, seed=3))
    yield Hostile(index_id, other_id, window)
    for name in (index_id, other_id):
        await delete_index(indexer, keys, name)


_INTERNALS = re.compile(r"<class '|object at 0x|sc://|Traceback|JVM stacktrace|\bat org\.|\bat java\.|sqlglot\.|"
                        r"_duckdb|pyspark\.|py4j|grpc", re.IGNORECASE)


def assert_refused(response, sql: str) -> dict:
    """HS-1, HS-2: a 4xx problem whose detail says something, and nothing of the internals."""
    assert 400 <= response.status_code < 500, (sql[:200], response.status_code, response.text[:500])
    assert response.headers["content-type"] == "application/problem+json", response.text[:500]
    problem = response.json()
    assert problem["detail"].strip(), problem
    shown = " ".join([problem["detail"], *(e.get("message", "") for e in problem.get("errors", []))])
    assert not _INTERNALS.search(shown), (sql[:200], shown)
    return problem


def _nested(depth: int, inner: str, open_: str, close: str) -> str:
    return open_ * depth + inner + close * depth


# Each attempt and what its refusal must name (case-insensitive), so a refusal is one a person can act on.
FILES = [
    ("SELECT * FROM read_parquet('/etc/passwd')", "read_parquet"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "read_csv_auto"),
    ("SELECT * FROM read_text('/etc/passwd')", "read_text"),
    ("SELECT * FROM '/etc/passwd'", "/etc/passwd"),
    ("SELECT * FROM 'splits.parquet'", "splits.parquet"),
    ("SELECT * FROM glob('/etc/*')", "glob"),
    ("SELECT * FROM parquet.`/tmp/x`", ""),
    ("SELECT count(*) FROM {i} WHERE host IN (SELECT * FROM read_csv_auto('/etc/hosts'))", "read_csv_auto"),
    ("SELECT * FROM {i} JOIN read_parquet('/tmp/*.parquet') USING (host)", "read_parquet"),
    ("SELECT * FROM {i}, (SELECT * FROM '/etc/passwd') AS p", "/etc/passwd"),
]
STATEMENTS = [
    ("COPY (SELECT * FROM {i}) TO '/tmp/out.csv'", ""),
    ("ATTACH '/tmp/x.db' AS x", ""),
    ("INSTALL httpfs", ""),
    ("LOAD httpfs", ""),
    ("SET threads = 64", ""),
    ("SET spark.sql.runSQLOnFiles = true", ""),
    ("PRAGMA threads = 64", ""),
    ("RESET threads", ""),
    ("CREATE TABLE t AS SELECT * FROM {i}", ""),
    ("DROP TABLE {i}", ""),
    ("INSERT INTO {i} (host) VALUES ('x')", ""),
    ("CREATE MACRO twice(x) AS x * 2", ""),
    ("CREATE FUNCTION twice(x INT) RETURNS INT RETURN x * 2", ""),
    ("CREATE TEMP VIEW v AS SELECT 1", ""),
    ("EXPORT DATABASE '/tmp/db'", ""),
    ("CALL pragma_version()", ""),
]
FUNCTIONS = [
    ("SELECT reflect('java.lang.System', 'getenv') FROM {i}", "reflect"),
    ("SELECT java_method('java.lang.System', 'getenv') FROM {i}", "java_method"),
    ("SELECT current_setting('threads') FROM {i}", "current_setting"),
    ("SELECT getvariable('x') FROM {i}", "getvariable"),
    ("SELECT getenv('HOME') FROM {i}", "getenv"),
    ("SELECT count(*) FROM {i} WHERE host = twice(host)", "twice"),
]
OTHER_TABLES = [
    ("SELECT * FROM duckdb_settings()", "duckdb_settings"),
    ("SELECT * FROM information_schema.tables", "information_schema"),
    ("SELECT * FROM pg_catalog.pg_tables", "pg_catalog"),
    ("SELECT count(*) FROM {i} WHERE host IN (SELECT host FROM {o})", ""),
    ("SELECT host FROM {i} UNION ALL SELECT host FROM {o}", ""),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r", "recursive"),
]
MULTIPLE = [
    ("SELECT count(*) FROM {i}; DROP TABLE {i}", ""),
    ("SELECT count(*) FROM {i}; SELECT * FROM read_parquet('/etc/passwd')", ""),
    ("SELECT count(*) FROM {i} /* ; */ ; COPY {i} TO '/tmp/x.csv'", ""),
    ("SELECT count(*) FROM {i} -- a comment\n; ATTACH '/tmp/x.db'", ""),
]
BLOW_UPS = [
    ("SELECT count(*) FROM range(1000000000000)", "range"),
    ("SELECT count(*) FROM generate_series(1, 1000000000000)", "generate_series"),
    ("SELECT repeat('x', 1000000000) FROM {i} LIMIT 1", "repeat"),
    ("SELECT count(*) FROM {i} a, {i} b, {i} c, {i} d, {i} e, {i} f", ""),
    ("SELECT string_agg(a.message, ',') FROM {i} a, {i} b, {i} c", ""),
]
ATTEMPTS = [*FILES, *STATEMENTS, *FUNCTIONS, *OTHER_TABLES, *MULTIPLE, *BLOW_UPS]


ATTEMPT_CASES = [pytest.param(template, names, id=template[:60]) for template, names in ATTEMPTS]


async def _attempt(query, keys, hostile, engine: str, template: str):
    sql = hostile.sql(template)
    # A short time limit: a blow-up that the planner lets through costs this much CPU at most.
    response = await query.post("/v1/query", json={"sql": sql, "engine": engine, "timeout_secs": 5},
                                headers=keys.header(keys.admin))
    return sql, response


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("template", "names"), ATTEMPT_CASES)
async def test_hs1_a_hostile_attempt_is_refused_without_internals(query, keys, hostile, engine, template, names):
    sql, response = await _attempt(query, keys, hostile, engine, template)
    assert_refused(response, sql)


@pytest.mark.parametrize(("template", "names"), [c for c in ATTEMPT_CASES if c.values[1]])
async def test_hs1_a_refusal_names_what_it_refused(query, keys, hostile, template, names):
    sql, response = await _attempt(query, keys, hostile, "local", template)
    problem = assert_refused(response, sql)
    shown = " ".join([problem["detail"], *(e["message"] for e in problem["errors"])]).lower()
    assert names.lower() in shown, (sql, shown)


DEEP = [
    _nested(50, "value > 1", "(", ")"),
    "NOT " * 150 + "value > 1",
    _nested(300, "host", "lower(", ")") + " = 'x'",
    _nested(1000, "value > 1", "(", ")"),
    "NOT " * 3000 + "value > 1",
]


DEEP_CASES = [pytest.param(condition, id=name)
              for condition, name in zip(DEEP, ["parens-50", "nots-150", "lower-300", "parens-1000", "nots-3000"],
                                         strict=True)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("condition", DEEP_CASES)
async def test_hs1_deep_nesting_answers_or_is_refused_never_a_5xx(query, keys, hostile, engine, condition):
    sql = hostile.sql(f"SELECT count(*) AS n FROM {{i}} WHERE {condition}")
    response = await query.post("/v1/query", json={"sql": sql, "engine": engine}, headers=keys.header(keys.admin))
    if response.status_code != 200:
        assert_refused(response, sql)


# Backtracking regexes: linear under RE2 (DuckDB); Java's regex (Spark) would take exponential time on them.
_AS = "a" * 40
REGEXES = [f"regexp_matches(message || '{_AS}!', '(a+)+$')",
           f"regexp_matches(message || '{_AS}!', '(a|aa)+$')",
           f"regexp_extract(message || '{_AS}!', '(a*)*b', 1) = ''",
           "message SIMILAR TO '(a+)+b'"]


# Spark's Java regex would backtrack for ever on these (and a running task cannot be stopped): such patterns run
# on the local engine only, and asking Spark for them is refused.
REGEX_CASES = [pytest.param(engine, condition, id=f"{condition[:40]}-{engine}")
               for condition in REGEXES for engine in ENGINES]


@pytest.mark.parametrize(("engine", "condition"), REGEX_CASES)
async def test_hs1_a_backtracking_regex_answers_or_is_refused_in_time(query, keys, hostile, engine, condition):
    sql = hostile.sql(f"SELECT count(*) AS n FROM {{i}} WHERE {condition}")
    response = await query.post("/v1/query", json={"sql": sql, "engine": engine, "timeout_secs": 5},
                                headers=keys.header(keys.admin))
    if response.status_code != 200:
        assert_refused(response, sql)


def _hosts(count: int) -> list[str]:
    return [f"host-{n}" for n in range(count)]


@pytest.mark.parametrize("engine", ENGINES)
async def test_hs4_long_conditions_plan_and_answer_exactly(query, keys, hostile, engine):
    everything = (await query.post("/v1/query", json={"sql": hostile.sql("SELECT count(*) AS n FROM {i}"),
                                                      "engine": engine}, headers=keys.header(keys.admin)))
    assert everything.status_code == 200, everything.text
    total = everything.json()["rows"][0]["n"]
    hosts = sorted({row["host"] for row in rows_for(hostile.window, DEFAULT_ROWS, seed=1)}
                   | {row["host"] for row in rows_for(hostile.window, ACME_ROWS, seed=2)})
    conditions = [
        " OR ".join(f"host = '{h}'" for h in [*_hosts(400), *hosts]),
        " AND ".join(f"host != 'nohost-{n}'" for n in range(400)),
        "host IN (" + ", ".join(f"'{h}'" for h in [*_hosts(5_000), *hosts]) + ")",
        "timestamp_secs NOT IN (" + ", ".join(str(n) for n in range(10_000)) + ")",
    ]
    for condition in conditions:
        sql = hostile.sql(f"SELECT count(*) AS n FROM {{i}} WHERE {condition}")
        response = await query.post("/v1/query", json={"sql": sql, "engine": engine},
                                    headers=keys.header(keys.admin))
        assert response.status_code == 200, (condition[:80], response.text[:500])
        assert response.json()["rows"] == [{"n": total}], condition[:80]


# A tenant's key reaching for the other partition: every answer counts (or lists) the tenant's rows only.
TENANCY = [
    ("SELECT count(*) AS n FROM {i} WHERE partition_id = 'default'", [{"n": 0}]),
    ("SELECT count(*) AS n FROM {i} WHERE partition_id = 'default' OR 1 = 1", [{"n": ACME_ROWS}]),
    ("SELECT DISTINCT partition_id FROM {i}", [{"partition_id": "acme"}]),
    ("SELECT count(*) AS n FROM (SELECT * FROM {i} WHERE partition_id = 'default') AS t", [{"n": 0}]),
    ("SELECT count(*) AS n FROM {i} WHERE partition_id IN (SELECT partition_id FROM {i})", [{"n": ACME_ROWS}]),
    ("WITH x AS (SELECT * FROM {i}) SELECT count(*) AS n FROM x WHERE partition_id = 'default'", [{"n": 0}]),
    ("SELECT count(*) AS n FROM {i} UNION ALL SELECT count(*) AS n FROM {i} WHERE partition_id <> 'acme'",
     [{"n": ACME_ROWS}, {"n": 0}]),
    ("SELECT count(*) AS n FROM {i} WHERE EXISTS (SELECT 1 FROM {i} WHERE partition_id = 'default')", [{"n": 0}]),
    ("SELECT (SELECT count(*) FROM {i} WHERE partition_id = 'default') AS n", [{"n": 0}]),
    ("SELECT count(*) AS n FROM {i} a JOIN {i} b ON a.host = b.host WHERE b.partition_id = 'default'", [{"n": 0}]),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("template", "expected"), TENANCY, ids=[t[0][:60] for t in TENANCY])
async def test_hs3_a_tenant_reads_only_its_own_rows_whatever_the_sql(query, keys, hostile, engine, template,
                                                                      expected):
    sql = hostile.sql(template)
    response = await query.post("/v1/query", json={"sql": sql, "engine": engine},
                                headers=keys.header(keys.query_acme))
    if response.status_code != 200:
        assert_refused(response, sql)
        return
    assert sorted(map(repr, response.json()["rows"])) == sorted(map(repr, expected)), sql


# Data errors: an answer (DuckDB makes some of them NULL) or a 422 `query-failed`, on both engines, never a 5xx.
# (query, whether Spark's ANSI mode refuses it: then the 422 the local engine answers, never Spark's 502)
DATA_ERRORS = [
    ("SELECT sum(timestamp_secs + 9223372036854775000) AS s FROM {i}", True),
    ("SELECT CAST('abc' AS INT) AS v FROM {i} LIMIT 1", True),
    ("SELECT CAST(value * 1e30 AS DECIMAL(5, 2)) AS v FROM {i} LIMIT 1", True),
    ("SELECT CAST(timestamp_secs AS TINYINT) AS v FROM {i} LIMIT 1", True),
    ("SELECT count(*) / 0 AS v FROM {i}", False),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("template", "spark_refuses"), DATA_ERRORS)
async def test_hs1_a_data_error_is_the_querys_on_both_engines(query, keys, hostile, engine, template,
                                                              spark_refuses):
    sql = hostile.sql(template)
    response = await query.post("/v1/query", json={"sql": sql, "engine": engine}, headers=keys.header(keys.admin))
    if (engine == "spark" and spark_refuses) or response.status_code != 200:
        problem = assert_refused(response, sql)
        assert response.status_code == 422, problem


def test_hs2_a_detail_is_shown_without_internals():
    assert public_detail("<class 'sqlglot.expressions.core.Glob'> is not supported") == "Glob is not supported"
    assert public_detail("node <sqlglot.expressions.Foo object at 0x7fab12> is bad") == "node Foo is bad"
    assert public_detail("failed on sc://spark:15002/;token=abc: boom") == "failed on spark connect: boom"
    assert public_detail("failed\nJVM stacktrace:\norg.apache.X\n\tat org.apache.Y(Z.scala:1)") == "failed"
    assert public_detail("failed\nTraceback (most recent call last):\n  File 'x.py'") == "failed"
    assert public_detail('no column "x" in "strata_scan_01jqhostile_raw"') == 'no column "x" in "the index"'
    assert public_detail("value < 3 is at least (3)") == "value < 3 is at least (3)"


# --- HS-5: the engines themselves, behind the validator ------------------------------------------------------------


@pytest.fixture
def local_engine(tmp_path):
    store = ObjectStore(tmp_path.as_uri())
    path = tmp_path / "split.parquet"
    pq.write_table(pa.table({"host": [f"host-{n % 50}" for n in range(20_000)]}), path)
    engine = LocalEngine(HotTier(store, FooterCache(store), 0), threads=2, memory_limit_bytes=32 * 1024**2)
    yield engine, path.as_uri()
    engine.close()


def _scan(uri: str, sql: str, rows: int = 20_000) -> ScanRequest:
    return ScanRequest(query_id="01JQHOSTILEAAAAAAAAAAAAAAA", tasks=[ScanTask(uri=uri, row_groups=[0])],
                       columns=[("host", FieldType.STRING)], sql_template=sql.replace("{view}", f'"{VIEW}"'),
                       extra_filter=None, rows=rows)


LOCKED = ["SELECT * FROM read_parquet('/etc/passwd')", "SELECT * FROM read_csv_auto('/etc/passwd')",
          "SELECT * FROM glob('/etc/*')", "COPY (SELECT 1) TO '/tmp/hostile.csv'", "ATTACH '/tmp/hostile.db'",
          "INSTALL httpfs", "LOAD httpfs", "SET threads = 64", "SET enable_external_access = true",
          "RESET memory_limit", "PRAGMA threads = 64", "SET lock_configuration = false"]


@pytest.mark.parametrize("sql", LOCKED)
def test_hs5_the_local_engine_reads_no_file_and_takes_no_setting(local_engine, sql):
    engine, _ = local_engine
    for db in (engine._db, engine._small_db):
        cursor = db.cursor()
        with pytest.raises(Exception) as refused:
            cursor.execute(sql)
        assert type(refused.value).__module__ in ("duckdb", "_duckdb"), refused.value
        cursor.close()


def test_hs5_the_locked_local_engine_still_scans(local_engine):
    engine, uri = local_engine
    for db in (engine._db, engine._small_db):
        settings = db.execute("SELECT current_setting('enable_external_access'), current_setting('temp_directory'), "
                              "current_setting('autoload_known_extensions'), "
                              "current_setting('autoinstall_known_extensions'), "
                              "current_setting('lock_configuration'), current_setting('memory_limit')").fetchone()
        assert settings == (False, "", False, False, True, "32.0 MiB")
    for rows in (20_000, 10_000_000):  # a table on the single-threaded database; a stream on the pool's
        result = engine.open(_scan(uri, "SELECT count(DISTINCT host) AS n FROM {view}", rows))
        assert pa.Table.from_batches(list(result), result.schema).to_pylist() == [{"n": 50}]
        result.close()


def test_hs5_a_local_query_over_its_memory_is_a_422_naming_the_limit(local_engine):
    engine, uri = local_engine
    blow_up = "SELECT string_agg(a.host || b.host, ',') AS s FROM {view} a, {view} b"
    with pytest.raises(QueryMemoryExceeded) as refused:
        engine.open(_scan(uri, blow_up))
    assert refused.value.status == 422 and "32 MiB" in refused.value.detail
