"""A query whose Spark Connect server cannot be reached answers a 503 problem saying so at once: never a 500, and
never a wait through the client's ten minutes of retries (the test's timeout would stop that). A query small
enough for the in-process engine still answers."""

from __future__ import annotations

import httpx
from asgi_lifespan import LifespanManager

from strata_core.config import Settings
from strata_services.local.processes import free_port
from strata_services.sample_data import metrics_index_config
from tests.helpers import assert_problem, unique_index_id


async def test_a_query_with_spark_unreachable_is_a_503_naming_the_server(settings: Settings, indexer, keys):
    from strata_query.app import create_app

    index_id = unique_index_id("dead")
    response = await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    dead = f"sc://127.0.0.1:{free_port()}"
    app = create_app(settings.model_copy(update={"spark_remote": dead}))
    async with LifespanManager(app), httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                                       base_url="http://query-api") as client:
        sql = f'SELECT count(*) FROM "{index_id}"'
        response = await client.post("/v1/query", json={"sql": sql, "engine": "spark"},
                                     headers=keys.header(keys.admin))
        # A plan small enough for query-api's own engine does not need Spark at all.
        local = await client.post("/v1/query", json={"sql": sql}, headers=keys.header(keys.admin))
    problem = assert_problem(response, 503, "unavailable")
    # Plain words, and nothing of the deployment: the address is in the log, not in the answer.
    assert problem["detail"] == "the Spark engine is unreachable: connection refused"
    assert local.status_code == 200 and local.headers["x-strata-engine"] == "local", local.text
