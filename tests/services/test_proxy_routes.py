"""The proxy sends each /v1 path to the API that serves it: checked against every route the three APIs declare."""

from __future__ import annotations

import pytest

from strata_core.config import Settings
from strata_services.proxy.routes import INDEXER, PLANNER, QUERY, api_for_path


@pytest.mark.parametrize(("path", "api"), [
    ("compaction/jobs", PLANNER), ("indexes/m/windows", PLANNER), ("indexes/m/debt", PLANNER),
    ("indexes/m/debt/history", PLANNER), ("indexes/m/compaction/trigger", PLANNER),
    ("indexes/m/retention/apply", PLANNER), ("indexes/m/compaction/pause", PLANNER),
    ("indexes/m/indexing/pause", INDEXER), ("maintenance/passes", PLANNER),
    ("indexes", INDEXER), ("indexes/m", INDEXER), ("indexes/m/ingest", INDEXER), ("indexes/m/splits", INDEXER),
    ("indexing/lag", INDEXER), ("splits/01J/artifacts", INDEXER), ("query", QUERY), ("query/explain", QUERY),
    ("no-such-route", QUERY), ("", QUERY),
])
def test_paths_go_to_their_api(path, api):
    assert api_for_path(path) == api


def test_every_declared_route_of_each_api_is_routed_to_it():
    from strata_indexer.app import create_app as indexer_app
    from strata_planner.app import create_app as planner_app
    from strata_query.app import create_app as query_app

    # Building an app connects to nothing (its lifespan does): only the routes are read here.
    settings = Settings(database_url="postgresql+asyncpg://unused/unused")
    for api, create in ((PLANNER, planner_app), (INDEXER, indexer_app), (QUERY, query_app)):
        paths = [p for p in create(settings).openapi()["paths"] if p.startswith("/v1/")]
        assert paths
        wrong = [p for p in paths if api_for_path(p.removeprefix("/v1/")) != api]
        assert not wrong, f"{api} serves {wrong}, which the proxy sends elsewhere"
