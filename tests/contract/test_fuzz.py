"""Schemathesis against each API and the query proxy, over real HTTP, on the session's PostgreSQL and Spark."""

from __future__ import annotations

import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from strata_shared.config import Settings
from strata_shared.metastore import migrate
from tests.fixtures.http_server import serve_in_thread

pytestmark = pytest.mark.spark

CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


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
        # Fuzzed once ready (PostgreSQL and Spark answer), as a deployment would only route to a ready instance.
        urls = {name: stack.enter_context(serve_in_thread(app, health_path="/readyz", timeout=180))
                for name, app in (("indexer", indexer_app(settings, background=False)),
                                  ("planner", planner_app(settings, background=False)),
                                  ("query", query_app(settings)))}
        urls["proxy"] = stack.enter_context(serve_in_thread(create_proxy_app(settings, [urls["query"]])))
        yield urls


@pytest.mark.parametrize("api", ["indexer", "planner", "query", "proxy"])
def test_fuzz(api, fuzz_stack, keys, tmp_path):
    url = fuzz_stack[api]
    command = [str(Path(sys.executable).parent / "schemathesis"), "run", f"{url}/openapi.json",
               "--checks", CHECKS, "--max-examples", "15", "-H", f"Authorization: Bearer {keys.admin}",
               "--generation-database", "none", "--report", "json", "--report-dir", str(tmp_path), "--no-color",
               "--seed", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    Path(f"/tmp/fuzz-{api}.txt").write_text(done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout[-20000:]
