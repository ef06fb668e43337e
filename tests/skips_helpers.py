"""Shared steps of the maintenance-skips tests: SQL on the session's database (to put the metastore in a state no
API call makes: a split outside the root, a config an older release wrote), the skips an API lists, and the
skip counter as its /metrics shows it."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import text

from strata_metastore.engine import create_engine, session_factory


async def execute(database_url: str, sql: str, **params: Any) -> None:
    """An edit by hand, committed as any change is: through a session that writes its commit log entry."""
    engine = create_engine(database_url, pool_size=1)
    try:
        async with session_factory(engine)() as session:
            await session.execute(text(sql), params)
            await session.commit()
    finally:
        await engine.dispose()


async def break_config(database_url: str, index_id: str) -> None:
    """A key an older release accepted and the current model refuses (IndexSettings forbids extra keys)."""
    await execute(database_url, "UPDATE indexes SET config = config || CAST(:extra AS jsonb) "
                                "WHERE index_id = :i AND deleted_at IS NULL",
                  extra='{"written_by_an_older_release": true}', i=index_id)


async def mend_config(database_url: str, index_id: str) -> None:
    await execute(database_url, "UPDATE indexes SET config = config - 'written_by_an_older_release' "
                                "WHERE index_id = :i", i=index_id)


async def listed_skips(client, keys, head: str, **params: Any) -> list[dict]:
    response = await client.get(f"/v1/{head}/maintenance/skips", params=params, headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    return response.json()["skips"]


async def skipped_total(client, pass_name: str, reason: str) -> float:
    body = (await client.get("/metrics")).text
    pattern = (rf'^strata_maintenance_skipped_total\{{(?=[^}}]*pass="{re.escape(pass_name)}")'
               rf'(?=[^}}]*reason="{re.escape(reason)}")[^}}]*\}} (\S+)$')
    match = re.search(pattern, body, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def recorded_gauge(client, pass_name: str) -> float | None:
    body = (await client.get("/metrics")).text
    match = re.search(rf'^strata_maintenance_skips_recorded\{{pass="{re.escape(pass_name)}"\}} (\S+)$', body,
                      re.MULTILINE)
    return float(match.group(1)) if match else None
