"""Schemathesis against each API and the query proxy, as an outside client would: over real HTTP (uvicorn in a
thread, stopped in finally), with an admin key, on the session's PostgreSQL and Spark and a database of its own.
Every phase runs (examples, coverage, fuzzing, stateful) with a bounded number of examples per operation, under
the checks below; a server error or any conformance failure fails the test.

A seeded index (rows in two windows) is offered as `index_id` half of the time, and a few valid queries over it
as the SQL, so generated requests also reach ingestion, listing, planning, compaction and query execution
rather than stopping at a 404 or a syntax error."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from strata_core.config import Settings
from strata_metastore import migrate
from strata_services.sample_data import metrics_index_config
from tests.fixtures.http_server import serve_in_thread
from tests.helpers import NDJSON, ndjson

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
# Bounded for the suite's time on CI (2 cores): at 20 per operation the four runs took about 100 s.
EXAMPLES_PER_OPERATION = 12
SEEDED_INDEX = "fuzz-seeded"
SEEDED_QUERIES = [
    f'SELECT host, count(*) AS n, max(value) AS top FROM "{SEEDED_INDEX}" GROUP BY host ORDER BY n DESC LIMIT 5',
    f'SELECT * FROM "{SEEDED_INDEX}" WHERE metric_name = \'cpu\' AND value > 1.5 LIMIT 10',
    f'SELECT metric_name, avg(value) FROM "{SEEDED_INDEX}" WHERE text_match(host, \'h1\') GROUP BY metric_name',
]


def _config(directory: Path) -> Path:
    quoted = ", ".join('"' + sql.replace("\\", "\\\\").replace('"', '\\"') + '"' for sql in SEEDED_QUERIES)
    path = directory / "schemathesis.toml"
    path.write_text(f"""
[dictionaries.indexes]
values = ["{SEEDED_INDEX}"]

[dictionaries.queries]
values = [{quoted}]

[parameters]
"path.index_id" = {{ dictionary = "indexes", probability = 0.5 }}
"query.index_id" = {{ dictionary = "indexes", probability = 0.5 }}
"body.sql" = {{ dictionary = "queries", probability = 0.3 }}
""")
    return path


def _seed(indexer_url: str, admin_key: str) -> None:
    headers = {"Authorization": f"Bearer {admin_key}"}
    with httpx.Client(base_url=indexer_url, headers=headers, timeout=60) as client:
        created = client.post("/v1/indexes", json=metrics_index_config(SEEDED_INDEX))
        assert created.status_code == 201, created.text
        now = int(time.time())
        for batch in range(2):
            rows = [{"metric_name": "cpu" if i % 2 else "mem", "service": "api", "host": f"h{i % 4}",
                     "timestamp_secs": now - 60 - (i * 97 + batch) % 1500, "value": i / 3} for i in range(50)]
            ingested = client.post(f"/v1/indexes/{SEEDED_INDEX}/ingest", content=ndjson(rows),
                                   headers={"Content-Type": NDJSON})
            assert ingested.status_code == 200, ingested.text


@pytest.fixture(scope="module")
def fuzz_stack(pg_databases, spark_remote, tmp_path_factory, keys, job_bundle_dir):
    from strata_indexer.app import create_app as indexer_app
    from strata_planner.app import create_app as planner_app
    from strata_query.app import create_app as query_app
    from strata_services.proxy.app import create_proxy_app

    database_url = pg_databases.create("strata_fuzz")
    migrate.upgrade(database_url)
    root = tmp_path_factory.mktemp("fuzz-objects")
    settings = Settings(database_url=database_url, spark_remote=spark_remote, storage_uri=root.as_uri(),
                        api_keys=keys.as_json(), max_ingest_bytes=1024 * 1024, home=root.parent / "fuzz-home",
                        job_bundle_dir=job_bundle_dir)
    with ExitStack() as stack:
        # Fuzzed once ready (PostgreSQL and Spark answer), as a deployment routes only to a ready instance.
        urls = {name: stack.enter_context(serve_in_thread(app, health_path="/readyz", timeout=180))
                for name, app in (("indexer", indexer_app(settings, background=False)),
                                  ("planner", planner_app(settings, background=False)),
                                  ("query", query_app(settings)))}
        urls["proxy"] = stack.enter_context(serve_in_thread(create_proxy_app(
            settings.model_copy(update={"query_upstreams": urls["query"], "planner_upstreams": urls["planner"],
                                        "indexer_upstreams": urls["indexer"]}))))
        _seed(urls["indexer"], keys.admin)
        yield urls


def _summary(api: str, output: str) -> str:
    tested = re.search(r"Tested: (\d+)", output)
    cases = re.search(r"(\d+) generated, (.*)", output)
    return (f"schemathesis {api}: {tested.group(1) if tested else '?'} operations, "
            f"{cases.group(1) if cases else '?'} test cases ({cases.group(2).strip() if cases else 'no summary'})")


@pytest.mark.parametrize("api", ["indexer", "planner", "query", "proxy"])
def test_no_server_error_and_no_undocumented_answer(api, fuzz_stack, keys, tmp_path):
    command = [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(_config(tmp_path)), "--no-color",
               "run", f"{fuzz_stack[api]}/openapi.json", "--checks", CHECKS,
               "--max-examples", str(EXAMPLES_PER_OPERATION), "--seed", "20261125",
               "--header", f"Authorization: Bearer {keys.admin}", "--generation-database", "none",
               "--request-timeout", "120", "--report-dir", str(tmp_path / "report")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    print(_summary(api, done.stdout))
    assert done.returncode == 0, done.stdout[-30000:] + done.stderr[-3000:]
