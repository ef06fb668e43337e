"""GET /v1/maintenance/passes on planner-api: every pass run once across replicas, with its holder, whether it runs
now, and its last start, finish and error, as the leases in PostgreSQL say; the auth conventions of the operator
reads."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime

import pytest

from strata_frame.web.singleton import PassLeases

pytestmark = [pytest.mark.spark]


async def _passes(planner, keys) -> dict[str, dict]:
    response = await planner.get("/v1/maintenance/passes", headers=keys.header(keys.writer))
    assert response.status_code == 200, response.text
    return {p["name"]: p for p in response.json()["passes"]}


async def test_the_listing_shows_who_runs_each_pass_and_how_it_last_ended(planner, keys):
    sessions = planner.app.state.strata.sessions
    failing, running = f"test failing {uuid.uuid4().hex[:8]}", f"test running {uuid.uuid4().hex[:8]}"
    replica = PassLeases(sessions, "host-a:7:20261128T000000.000000Z", lease_secs=30.0)

    async def broken() -> None:
        raise ValueError("bucket gone")

    with pytest.raises(ValueError):
        await replica.run_if_due(failing, 60.0, broken)
    entered, release = asyncio.Event(), asyncio.Event()

    async def held() -> None:
        entered.set()
        await release.wait()

    run = asyncio.create_task(replica.run_if_due(running, 60.0, held))
    await entered.wait()
    try:
        passes = await _passes(planner, keys)
        assert passes[failing]["holder"] == replica.holder and passes[failing]["running"] is False
        assert passes[failing]["last_error"] == "ValueError: bucket gone"
        assert datetime.fromisoformat(passes[failing]["last_finished_at"]) >= \
            datetime.fromisoformat(passes[failing]["last_started_at"])
        assert passes[running]["running"] is True and passes[running]["lease_expires_at"] is not None
    finally:
        release.set()
        assert await run is True
    passes = await _passes(planner, keys)
    assert passes[running]["running"] is False and passes[running]["last_error"] is None

    assert (await planner.get("/v1/maintenance/passes")).status_code == 401
    assert (await planner.get("/v1/maintenance/passes", headers=keys.header(keys.query_acme))).status_code == 403
