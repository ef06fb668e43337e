"""Periodic passes run once across replicas (`strata_frame.web.singleton`), on real PostgreSQL: two replicas of one
pass run it once per interval in total and never at once; a holder that dies is replaced once its lease expires;
a holder shutting down gives the pass back at once; a holder that lost its lease stops; concurrent claims never
both win. Each test uses passes of its own names on the session's database."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_frame.web.singleton import PassLeases, once_every, tick_secs
from strata_metastore.background_pass_repository import BackgroundPassRepository
from strata_metastore.engine import create_engine, session_factory


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(database_url, pool_size=20)
    try:
        yield session_factory(engine)
    finally:
        await engine.dispose()


def _name(what: str) -> str:
    return f"test {what} {uuid.uuid4().hex[:8]}"


async def _state(sessions, name: str):
    async with sessions() as session:
        [state] = [p for p in await BackgroundPassRepository(session).list() if p.name == name]
        return state


async def _claim(sessions, name: str, holder: str, interval_secs: float, lease_secs: float):
    async with sessions() as session:
        run = await BackgroundPassRepository(session).claim(name, holder, interval_secs, lease_secs)
        await session.commit()
        return run


async def test_two_replicas_run_a_pass_once_per_interval_in_total_and_never_at_once(sessions):
    name, interval, duration = _name("once per interval"), 0.8, 6.0
    starts: list[tuple[str, float]] = []
    running = 0
    overlaps = 0

    def work_of(holder: str):
        async def work() -> None:
            nonlocal running, overlaps
            running += 1
            overlaps += running > 1
            starts.append((holder, time.monotonic()))
            await asyncio.sleep(0.1)
            running -= 1
        return work

    stop = asyncio.Event()
    replicas = [PassLeases(sessions, holder, lease_secs=3.0) for holder in ("replica-a", "replica-b")]
    loops = [asyncio.create_task(once_every(interval, stop, r, work_of(r.holder), name)) for r in replicas]
    await asyncio.sleep(duration)
    stop.set()
    await asyncio.gather(*loops)

    assert overlaps == 0
    times = [t for _, t in starts]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    # The interval is counted on PostgreSQL's clock; this process's clock may see it a few ms shorter.
    assert min(gaps) >= interval - 0.05, gaps
    # Once per interval in total, not once per replica: a replica's tick comes at most a quarter interval late
    # (more on a loaded machine, hence the slack below).
    assert duration / (interval + 2 * tick_secs(interval)) - 1 <= len(starts) <= duration / interval + 1, gaps
    state = await _state(sessions, name)
    assert not state.running and state.last_error is None and state.holder in {"replica-a", "replica-b"}


async def test_a_holder_that_dies_is_replaced_once_its_lease_expires(sessions):
    name = _name("takeover")
    # A replica claims the pass and dies: it never renews the lease nor gives it back.
    dead = await _claim(sessions, name, "dead-replica", interval_secs=0.1, lease_secs=1.5)
    assert dead is not None
    survivor = PassLeases(sessions, "survivor", lease_secs=5.0)
    ran: list[float] = []

    async def work() -> None:
        ran.append(time.monotonic())

    started = time.monotonic()
    assert await survivor.run_if_due(name, 0.1, work) is False, "the lease is still live"
    while not await survivor.run_if_due(name, 0.1, work):
        assert time.monotonic() - started < 30, "the survivor never took the pass over"
        await asyncio.sleep(0.1)
    assert ran and ran[0] - started >= 1.0, "taken over only after the dead holder's lease expired"
    state = await _state(sessions, name)
    assert state.holder == "survivor" and not state.running and state.last_error is None
    # The dead holder's run, should it come back, can neither renew nor finish the survivor's.
    async with sessions() as session:
        repo = BackgroundPassRepository(session)
        assert await repo.renew(dead, 5.0) is False
        assert await repo.finish(dead, None) is False


async def test_a_holder_shutting_down_gives_the_pass_back_at_once(sessions):
    name = _name("shutdown")
    holder = PassLeases(sessions, "stopping", lease_secs=60.0)
    entered = asyncio.Event()

    async def endless() -> None:
        entered.set()
        await asyncio.sleep(3600)

    stop = asyncio.Event()
    loop = asyncio.create_task(once_every(0.1, stop, holder, endless, name))
    await entered.wait()
    assert (await _state(sessions, name)).running
    stop.set()
    loop.cancel()  # what Background.close does to a pass still running past its timeout
    with pytest.raises(asyncio.CancelledError):
        await loop
    state = await _state(sessions, name)
    assert not state.running and "shutting down" in state.last_error
    # Not 60 s later: the next replica's tick takes it.
    assert await _claim(sessions, name, "next", interval_secs=0.0, lease_secs=5.0) is not None


async def test_a_failed_run_is_recorded_and_gives_the_lease_back(sessions):
    name = _name("failure")
    holder = PassLeases(sessions, "failing", lease_secs=5.0)

    async def broken() -> None:
        raise RuntimeError("the object store said no")

    with pytest.raises(RuntimeError):
        await holder.run_if_due(name, 0.1, broken)
    state = await _state(sessions, name)
    assert not state.running and state.last_error == "RuntimeError: the object store said no"
    assert state.last_finished_at >= state.last_started_at


async def test_a_run_whose_lease_was_taken_over_stops(sessions):
    name = _name("lost lease")
    slow = PassLeases(sessions, "stalled", lease_secs=0.6)
    entered, cancelled = asyncio.Event(), asyncio.Event()

    async def long_work() -> None:
        entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    run = asyncio.create_task(slow.run_if_due(name, 0.1, long_work))
    await entered.wait()
    # The holder stalled past its lease (a long pause): the lease lapsed and another replica took the pass. One
    # transaction, so the holder's renewal cannot come between the two.
    async with sessions() as session:
        await session.execute(text("UPDATE background_passes SET lease_expires_at = now() - interval '1 second' "
                                   "WHERE name = :name"), {"name": name})
        assert await BackgroundPassRepository(session).claim(name, "usurper", 0.0, 60.0) is not None
        await session.commit()
    assert await asyncio.wait_for(run, timeout=10) is True
    assert cancelled.is_set(), "the old holder stopped its run at its next renewal"
    state = await _state(sessions, name)
    assert state.holder == "usurper" and state.running, "the old holder's end does not touch the new run"


@pytest.mark.parametrize("situation", ["never run", "lease expired", "lease live", "interval not elapsed"])
async def test_concurrent_claims_never_both_win(sessions, situation):
    for _ in range(15):
        name = _name("race")
        if situation == "lease expired":
            assert await _claim(sessions, name, "dead", interval_secs=0.0, lease_secs=0.0) is not None
        elif situation == "lease live":
            assert await _claim(sessions, name, "holder", interval_secs=0.0, lease_secs=60.0) is not None
        elif situation == "interval not elapsed":
            run = await _claim(sessions, name, "holder", interval_secs=0.0, lease_secs=60.0)
            async with sessions() as session:
                await BackgroundPassRepository(session).finish(run, None)
                await session.commit()
        interval = 3600.0 if situation == "interval not elapsed" else 0.0
        runs = await asyncio.gather(*(_claim(sessions, name, f"replica-{i}", interval, lease_secs=60.0)
                                      for i in range(8)))
        winners = [r for r in runs if r is not None]
        expected = 1 if situation in ("never run", "lease expired") else 0
        assert len(winners) == expected, (situation, winners)
        if winners:
            assert (await _state(sessions, name)).holder == winners[0].holder
