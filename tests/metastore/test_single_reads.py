"""SingleReads: kept asyncpg connections for one-statement reads. A connection PostgreSQL dropped is replaced and
the statement sent again once; a statement error leaves the connection in use; a server that cannot be reached is
a 503 naming it. `session_driver`: plain asyncpg reads inside a session's own transaction."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text

from strata_metastore.engine import DatabaseUnavailable, create_engine, session_factory
from strata_metastore.single_reads import SingleReads, session_driver

APP = "strata-test-single-reads"


async def _terminate_all(url: str) -> int:
    admin = SingleReads(url, "strata-test-admin")
    try:
        row = await admin.fetchrow("SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity "
                                   "WHERE application_name = $1", APP)
        return row["n"]
    finally:
        admin.close()


@pytest.fixture(scope="module")
def url(pg_databases) -> str:
    return pg_databases.create("strata_single_reads")


async def test_dropped_connections_are_replaced_and_the_read_sent_again(url):
    reads = SingleReads(url, APP)
    try:
        assert (await reads.fetchrow("SELECT $1::int + 1 AS n", 1))["n"] == 2
        # Three kept connections, all dropped at once (as by a restart): the next read still answers.
        held = [await reads._connect() for _ in range(2)]
        for connection in held:
            reads.release(connection)
        assert len(reads._idle) == 3
        assert await _terminate_all(url) == 3
        assert (await reads.fetchrow("SELECT current_setting('application_name') AS app"))["app"] == APP
        assert len(reads._idle) == 1
    finally:
        reads.close()


async def test_a_failed_statement_keeps_its_connection(url):
    reads = SingleReads(url, APP)
    try:
        await reads.fetchrow("SELECT 1")
        with pytest.raises(asyncpg.UndefinedTableError):
            await reads.fetchrow("SELECT * FROM no_such_table")
        assert len(reads._idle) == 1 and not reads._idle[0].is_closed()
        assert await reads.fetchrow("SELECT 1 WHERE false") is None
    finally:
        reads.close()


async def test_an_unreachable_server_is_unavailable_naming_it():
    reads = SingleReads("postgresql+asyncpg://strata@127.0.0.1:9/strata", APP)
    with pytest.raises(DatabaseUnavailable, match="PostgreSQL at postgresql\\+asyncpg://strata@127.0.0.1:9/strata"):
        await reads.fetchrow("SELECT 1")


async def test_session_driver_runs_in_the_sessions_own_transaction(url):
    """A plan's plain-asyncpg reads (`session_driver`) share the session's transaction: its isolation level and
    read-only setting, its snapshot (one `now()`, one transaction id), and the session's rollback ends it."""
    engine = create_engine(url)
    sessions = session_factory(engine)
    try:
        async with sessions() as session:
            await session.connection(execution_options={"isolation_level": "REPEATABLE READ",
                                                        "postgresql_readonly": True})
            driver = await session_driver(session)
            row = await driver.fetchrow("SELECT current_setting('transaction_isolation') AS iso, "
                                        "current_setting('transaction_read_only') AS ro, now() AS at, "
                                        "pg_backend_pid() AS pid")
            assert (row["iso"], row["ro"]) == ("repeatable read", "on")
            at, pid = (await session.execute(text("SELECT now(), pg_backend_pid()"))).one()
            assert (at, pid) == (row["at"], row["pid"])
            assert await session_driver(session) is driver
            assert driver.is_in_transaction()
        assert not driver.is_in_transaction()
        # Without a statement of the session first, the driver's read begins the session's transaction itself.
        async with sessions() as session:
            driver = await session_driver(session)
            first = await driver.fetchval("SELECT now()")
            assert driver.is_in_transaction()
            assert (await session.execute(text("SELECT now()"))).scalar_one() == first
            await session.rollback()
            assert not driver.is_in_transaction()
    finally:
        await engine.dispose()
