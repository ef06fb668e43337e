"""The HTTP contract shared by the three APIs: health, readiness against real PostgreSQL and Spark Connect,
Prometheus metrics, problem+json for unknown routes. What each OpenAPI document declares is checked operation by
operation in tests/contract."""

from __future__ import annotations

import asyncio

import pytest

from strata_core.config import Settings

# The API fixtures are looked up by name at run time, so the markers cannot be inferred from them.
pytestmark = [pytest.mark.spark, pytest.mark.postgres]

APIS = ["indexer", "planner", "query"]


@pytest.fixture(params=APIS)
def api(request):
    return request.getfixturevalue(request.param)


async def test_healthz_and_readyz(api):
    health = await api.get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    # Polled as an orchestrator does: the first probe of a fresh process opens its Spark session and ships the
    # job bundle (built on first use), which may outlast one probe's 3 s; the probe goes on in the background.
    for _ in range(120):
        ready = await api.get("/readyz")
        if ready.status_code == 200:
            break
        await asyncio.sleep(0.5)
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"] == {"postgresql": "ok", "spark_connect": "ok"}


async def test_metrics_are_prometheus_text(api):
    await api.get("/healthz")
    response = await api.get("/metrics")
    assert response.status_code == 200
    assert "strata_http_requests_total" in response.text
    assert 'route="/healthz"' in response.text


async def test_unknown_route_is_a_problem(api):
    response = await api.get("/v1/no-such-thing")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


async def test_readyz_reports_an_unreachable_spark(database_url, keys, storage_root):
    import httpx
    from asgi_lifespan import LifespanManager

    from strata_indexer.app import create_app

    settings = Settings(database_url=database_url, spark_remote="sc://127.0.0.1:9", storage_uri=storage_root.as_uri(),
                        api_keys=keys.as_json(), readiness_timeout_secs=1.0)
    app = create_app(settings, background=False)
    async with LifespanManager(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as client:
            response = await client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["postgresql"] == "ok"
    assert body["checks"]["spark_connect"].startswith("spark connect unreachable")
