"""The stack OTLP clients are pointed at in the tests: indexer-api, query-api and the proxy served over real HTTP
(the SDK's exporters are real HTTP clients) on a database and storage root of their own, without Spark (ingest and
small queries need none). Exporters get the proxy's base URL and a writer key of tenant `acme`; queries go through
the proxy with acme's query key, so they see acme's partition only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from strata_core.config import Settings
from strata_metastore import migrate
from tests.fixtures.apps import Keys
from tests.fixtures.http_server import serve_in_thread


@dataclass(frozen=True)
class OtlpStack:
    settings: Settings
    proxy: str
    indexer: str
    keys: Keys

    def query(self, sql: str) -> list[dict[str, Any]]:
        response = httpx.post(f"{self.proxy}/v1/query", json={"sql": sql}, timeout=60,
                              headers={**Keys.header(self.keys.query_acme), "Accept": "application/json"})
        assert response.status_code == 200, response.text
        return response.json()["rows"]


@pytest.fixture(scope="module")
def otlp_stack(pg_databases, tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[OtlpStack]:
    from strata_indexer.app import create_app as indexer_app
    from strata_query.app import create_app as query_app
    from strata_services.proxy.app import create_proxy_app

    database_url = pg_databases.create("strata_otlp")
    migrate.upgrade(database_url)
    root = tmp_path_factory.mktemp("otlp")
    settings = Settings(database_url=database_url, spark_remote=None, storage_uri=(root / "objects").as_uri(),
                        api_keys=keys.as_json(), home=root / "home", proxy_reject_delay_secs=0.0,
                        max_ingest_bytes=1024 * 1024)
    with ExitStack() as running:
        indexer = running.enter_context(serve_in_thread(indexer_app(settings, background=False)))
        query = running.enter_context(serve_in_thread(query_app(settings)))
        proxy_settings = settings.model_copy(update={"indexer_url": indexer, "query_upstreams": query})
        proxy = running.enter_context(serve_in_thread(create_proxy_app(proxy_settings)))
        yield OtlpStack(settings, proxy, indexer, keys)
