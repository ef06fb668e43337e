"""SparkSessionFactory: lazy per-factory sessions and a readiness probe that never hangs or raises."""

from __future__ import annotations

import asyncio
import gc
import socket
import threading
import time

import pytest

from strata_frame.spark import SparkSessionFactory
from strata_frame.spark.session import parse_remote


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_parse_remote() -> None:
    assert parse_remote("sc://127.0.0.1:15002") == ("127.0.0.1", 15002)
    assert parse_remote("sc://spark.internal/;token=abc") == ("spark.internal", 15002)
    with pytest.raises(ValueError, match="must start with sc://"):
        parse_remote("http://localhost:15002")


async def test_check_ready_fails_fast_when_nothing_listens() -> None:
    factory = SparkSessionFactory(f"sc://127.0.0.1:{_free_port()}")
    start = time.monotonic()
    ok, detail = await factory.check_ready(timeout=5.0)
    assert not ok
    assert "connection refused" in detail
    assert time.monotonic() - start < 1.0
    factory.close()


# The abandoned probe fails later in its own thread, where the client warns about exhausted retries.
@pytest.mark.filterwarnings("ignore:.*RETRIES_EXCEEDED")
async def test_check_ready_times_out_on_a_server_that_never_answers(caplog: pytest.LogCaptureFixture) -> None:
    # A listening socket that never accepts: TCP connects (kernel backlog), gRPC never gets an answer.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        factory = SparkSessionFactory(f"sc://127.0.0.1:{silent.getsockname()[1]}")
        start = time.monotonic()
        ok, detail = await factory.check_ready(timeout=1.0)
        assert not ok
        assert "no answer within 1s" in detail
        assert time.monotonic() - start < 2.0
        start = time.monotonic()
        factory.close(timeout=0.5)
        assert time.monotonic() - start < 2.0  # close() must not wait out the client's retries
    # The abandoned probe must end once the session is gone, and its failure must not surface as
    # "Future exception was never retrieved" from a finalizer.
    for _ in range(200):  # up to 10 s
        if not _threads("spark-ready-probe", "spark-session-stop"):
            break
        await asyncio.sleep(0.05)
    assert not _threads("spark-ready-probe", "spark-session-stop")
    gc.collect()
    await asyncio.sleep(0)
    assert "never retrieved" not in caplog.text


async def test_check_ready_never_blocks_the_event_loop_while_a_session_is_being_created() -> None:
    # A first session() holds the factory's lock while it ships the job bundle (a minute on a loaded machine).
    # Readiness is probed on the event loop every fraction of a second: waiting there for that lock froze the
    # whole process, its jobs' lease refreshes included, until the bundle was shipped (issue 23's fleet journey).
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        factory = SparkSessionFactory(f"sc://127.0.0.1:{silent.getsockname()[1]}")
        shipping = threading.Timer(5.0, factory._lock.release)
        factory._lock.acquire()
        shipping.start()
        try:
            start = time.monotonic()
            ok, detail = await factory.check_ready(timeout=0.5)
            assert time.monotonic() - start < 2.0
            assert not ok and "no answer within 0.5s" in detail
        finally:
            shipping.join()
            factory.close(timeout=0.5)


def _threads(*prefixes: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(prefixes)]


@pytest.mark.spark
async def test_check_ready_against_the_shared_server(spark_factory: SparkSessionFactory) -> None:
    ok, detail = await spark_factory.check_ready(timeout=30.0)
    assert ok, detail
    assert "4.1" in detail


@pytest.mark.spark
def test_factories_never_share_a_session(spark_remote: str) -> None:
    # The dead factory's session is created first, so it becomes pyspark's process-wide default session,
    # which is exactly what builder.getOrCreate() would wrongly hand to the next factory.
    dead = SparkSessionFactory(f"sc://127.0.0.1:{_free_port()}")
    live, other = SparkSessionFactory(spark_remote), SparkSessionFactory(spark_remote)
    try:
        dead_session = dead.session()
        assert live.session() is not dead_session
        assert live.session().range(3).count() == 3
        assert other.session() is not live.session()
        assert other.session().session_id != live.session().session_id
    finally:
        for factory in (dead, live, other):
            factory.close()


def test_session_is_created_once_across_threads() -> None:
    # Creating a client session makes no RPC, so no server is needed here.
    factory = SparkSessionFactory(f"sc://127.0.0.1:{_free_port()}")
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(factory.session())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len({id(session) for session in seen}) == 1
    finally:
        factory.close()


async def test_closed_factory_refuses_work() -> None:
    factory = SparkSessionFactory(f"sc://127.0.0.1:{_free_port()}")
    factory.session()
    factory.close()
    factory.close()
    with pytest.raises(RuntimeError, match="closed"):
        factory.session()
    assert await factory.check_ready(timeout=1.0) == (False, "spark session factory is closed")
