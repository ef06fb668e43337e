"""A transaction PostgreSQL aborts for a concurrent one (a real deadlock here) is recognized, run again by
`retrying_conflicts`, and otherwise answered as a 503 naming it, never a bare 500. So is a statement whose
connection PostgreSQL ends under it (a backend terminated, as `DROP DATABASE ... WITH (FORCE)` does)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from strata_frame.web.problems import database_problem
from strata_metastore.conflicts import TransactionConflict, conflict_of, retrying_conflicts
from strata_metastore.engine import DatabaseUnavailable, create_engine, session_factory


@pytest.fixture(scope="module")
def url(pg_databases) -> str:
    return pg_databases.create("strata_conflicts")


@pytest.fixture
async def sessions(url):
    engine = create_engine(url, pool_size=4)
    async with engine.begin() as connection:
        await connection.execute(text("CREATE TABLE IF NOT EXISTS cell (id int PRIMARY KEY, n int NOT NULL)"))
        await connection.execute(text("INSERT INTO cell VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING"))
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


async def _lock_in_order(session, first: int, second: int, both_hold_one: asyncio.Barrier) -> None:
    """Locks `first`, waits until the other transaction holds its first row too, then locks `second`."""
    await session.execute(text("UPDATE cell SET n = n + 1 WHERE id = :id"), {"id": first})
    await both_hold_one.wait()
    await session.execute(text("UPDATE cell SET n = n + 1 WHERE id = :id"), {"id": second})
    await session.commit()


async def _deadlock(sessions) -> list[BaseException | None]:
    barrier = asyncio.Barrier(2)
    async with sessions() as one, sessions() as other:
        results = await asyncio.gather(_lock_in_order(one, 1, 2, barrier), _lock_in_order(other, 2, 1, barrier),
                                       return_exceptions=True)
    return list(results)


async def test_a_real_deadlock_is_recognized_and_answered_as_a_503_naming_it(sessions):
    results = await _deadlock(sessions)
    aborted = [r for r in results if isinstance(r, BaseException)]
    assert len(aborted) == 1 and isinstance(aborted[0], DBAPIError), results
    assert conflict_of(aborted[0]) == "a deadlock with a concurrent transaction"
    problem = database_problem(aborted[0])
    assert isinstance(problem, TransactionConflict) and problem.status == 503
    assert "deadlock" in problem.detail and "nothing was written" in problem.detail
    assert conflict_of(ValueError("no")) is None


async def test_retrying_conflicts_runs_the_aborted_transaction_again_and_it_commits(sessions):
    barrier = asyncio.Barrier(2)
    attempts = {"one": 0, "other": 0}
    survivor_committed = asyncio.Event()

    async def run(name: str, session, first: int, second: int) -> None:
        async def attempt() -> None:
            attempts[name] += 1
            if attempts[name] == 1:
                await _lock_in_order(session, first, second, barrier)
                survivor_committed.set()
            else:
                # Run again once the survivor has committed: started sooner, the retry can take a row the survivor
                # is about to lock and deadlock with it a second time (seen once at a load of 14 on 2 cores).
                await survivor_committed.wait()
                await session.execute(text("UPDATE cell SET n = n + 1 WHERE id IN (1, 2)"))
                await session.commit()
        await retrying_conflicts(session, attempt)

    async with sessions() as reader:
        before = dict((await reader.execute(text("SELECT id, n FROM cell"))).all())
    async with sessions() as one, sessions() as other:
        await asyncio.gather(run("one", one, 1, 2), run("other", other, 2, 1))
    async with sessions() as reader:
        after = dict((await reader.execute(text("SELECT id, n FROM cell"))).all())
    # Both transactions committed once: the aborted one's first attempt left nothing.
    assert after == {1: before[1] + 2, 2: before[2] + 2}
    assert sorted(attempts.values()) == [1, 2]


async def test_an_error_that_is_no_conflict_is_not_retried(sessions):
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        await session.execute(text("SELECT 1 / 0"))

    async with sessions() as session:
        with pytest.raises(DBAPIError):
            await retrying_conflicts(session, attempt)
    assert calls == 1


async def test_a_statement_whose_backend_is_terminated_is_a_503_naming_the_lost_connection(sessions):
    async with sessions() as victim, sessions() as admin:
        pid = (await victim.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        sleeping = asyncio.create_task(victim.execute(text("SELECT pg_sleep(30)")))
        await asyncio.sleep(0.3)
        await admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(DBAPIError) as raised:
            await asyncio.wait_for(sleeping, 20)
    problem = database_problem(raised.value)
    assert isinstance(problem, DatabaseUnavailable) and problem.status == 503, raised.value
    assert "lost" in problem.detail and "terminating connection" in problem.detail
    assert database_problem(ValueError("no")) is None


def test_a_connection_closed_mid_statement_that_sqlalchemy_did_not_invalidate_is_a_503_too():
    """As seen when a database is dropped WITH (FORCE) under an executemany: SQLAlchemy wraps asyncpg's error
    without marking the connection invalidated; the SQLSTATE of what caused it (08003) says the connection was
    lost."""
    import asyncpg

    closed = asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation")
    wrapped = RuntimeError("connection was closed in the middle of operation")
    wrapped.__cause__ = closed
    error = DBAPIError("INSERT INTO splits ...", {}, wrapped, connection_invalidated=False)
    problem = database_problem(error)
    assert isinstance(problem, DatabaseUnavailable) and "lost" in problem.detail
    assert database_problem(DBAPIError("SELECT 1", {}, RuntimeError("syntax"), connection_invalidated=False)) is None
