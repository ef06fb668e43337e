"""The engine's pre-ping (`metastore.engine.create_engine`): a pooled connection whose backend PostgreSQL ended is
replaced unseen at the next checkout, and a sound one is pinged with a single statement, no BEGIN or ROLLBACK."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from strata_metastore.engine import create_engine


@pytest.fixture(scope="module")
def url(pg_databases) -> str:
    return pg_databases.create("strata_engine_ping")


async def test_a_pooled_connection_whose_backend_ended_is_replaced_unseen(url):
    engine = create_engine(url, pool_size=1)
    admin = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:
            pid = (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        async with admin.connect() as connection:
            await connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        async with engine.connect() as connection:  # the same pooled connection: its ping fails, a new one is made
            assert (await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one() != pid
    finally:
        await engine.dispose()
        await admin.dispose()


async def test_the_ping_of_a_checkout_is_one_statement(url, monkeypatch):
    import asyncpg

    sent: list[str] = []
    execute, fetchrow = asyncpg.Connection.execute, asyncpg.Connection.fetchrow

    async def recording_execute(self, query, *args, **kwargs):
        sent.append(query.split()[0].rstrip(";").upper())
        return await execute(self, query, *args, **kwargs)

    async def recording_fetchrow(self, query, *args, **kwargs):
        sent.append(query)
        return await fetchrow(self, query, *args, **kwargs)

    engine = create_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:  # a new connection: no ping
            await connection.execute(text("SELECT 1"))
        monkeypatch.setattr(asyncpg.Connection, "execute", recording_execute)
        monkeypatch.setattr(asyncpg.Connection, "fetchrow", recording_fetchrow)
        async with engine.connect() as connection:  # the pooled one: pinged, then the statement's transaction
            await connection.execute(text("SELECT 1"))
    finally:
        await engine.dispose()
    assert sent[0] == ";", sent
    assert sent.count("BEGIN") == 1 and sent.count("ROLLBACK") == 1, sent
