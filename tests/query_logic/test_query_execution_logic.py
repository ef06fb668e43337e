"""Pure parts of query execution: which engine a plan gets, fair admission across tenants, and the row cap."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from strata_core.storage import ObjectStore
from strata_frame.spark.session import SparkSessionFactory
from strata_query.execution.admission import FairAdmission, TenantBusy
from strata_query.execution.engine_choice import Engines, EngineUnavailable, LocalLimits, choose_engine
from strata_query.execution.hot_tier import HotTier
from strata_query.execution.local_query import LocalEngine
from strata_query.execution.result_stream import ResultStream, engine_limit
from strata_query.execution.spark_query import SparkEngine
from strata_query.planning.caches import FooterCache

LIMITS = LocalLimits(max_bytes=1000, max_rows=100, max_files=3)


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """The real engines, never asked to run anything: the Spark session is created only on first use."""
    storage = ObjectStore(f"file://{tmp_path_factory.mktemp('engines')}")
    local = LocalEngine(HotTier(storage, FooterCache(storage), 0), threads=1)
    yield Engines(local, SparkEngine(SparkSessionFactory("sc://127.0.0.1:1")))
    local.close()


def _choose(engines, files=1, rows=10, bytes_read=100, requested=None, spark=True):
    available = engines if spark else Engines(engines.in_process, None)
    return choose_engine(files=files, rows=rows, bytes_read=bytes_read, limits=LIMITS, requested=requested,
                         engines=available).engine.name


def test_a_plan_within_every_limit_runs_locally_at_the_limits_included(engines):
    assert _choose(engines) == "local"
    assert _choose(engines, files=3, rows=100, bytes_read=1000) == "local"


@pytest.mark.parametrize(("over", "named"), [({"files": 4}, "files 4 > 3"), ({"rows": 101}, "rows 101 > 100"),
                                             ({"bytes_read": 1001}, "bytes 1,001 > 1,000")])
def test_a_plan_over_any_limit_runs_on_spark_and_says_which(engines, over, named):
    choice = choose_engine(**{"files": 1, "rows": 10, "bytes_read": 100, **over}, limits=LIMITS, requested=None,
                           engines=engines)
    assert choice.engine.name == "spark" and named in choice.reason


def test_a_request_forces_an_engine_but_not_a_missing_spark(engines):
    assert _choose(engines, files=99, requested="local") == "local"
    assert _choose(engines, requested="spark") == "spark"
    with pytest.raises(EngineUnavailable, match="no Spark Connect server"):
        _choose(engines, requested="spark", spark=False)
    with pytest.raises(EngineUnavailable, match="over the local engine's limits"):
        _choose(engines, rows=101, spark=False)


def _stream(sizes: list[int], cap: int | None) -> tuple[ResultStream, list[int]]:
    schema = pa.schema([("a", pa.int64())])
    closed = []
    batches = iter([pa.record_batch([pa.array(range(n), pa.int64())], schema=schema) for n in sizes])
    return ResultStream(schema, batches, lambda: closed.append(1), cap), closed


@pytest.mark.parametrize(("sizes", "cap", "rows", "truncated"), [
    ([3, 3], 6, 6, False), ([3, 4], 6, 6, True), ([10], 4, 4, True), ([2, 0, 2], None, 4, False), ([], 5, 0, False),
    ([5, 1], 5, 5, True),
])
def test_the_cap_cuts_and_reports_a_cut_only_when_rows_were_left_out(sizes, cap, rows, truncated):
    stream, closed = _stream(sizes, cap)
    got = sum(b.num_rows for b in stream)
    assert (got, stream.rows, stream.truncated, closed) == (rows, rows, truncated, [1])
    assert engine_limit(cap) == (None if cap is None else cap + 1)


async def test_a_flooding_tenant_waits_behind_itself_not_in_front_of_a_quiet_one():
    gate = FairAdmission(max_concurrent=2, max_per_tenant=2, max_waiting_per_tenant=10)
    release = asyncio.Event()
    order: list[str] = []

    async def query(tenant: str) -> None:
        async with gate.slot(tenant):
            order.append(tenant)
            await release.wait()

    flood = [asyncio.create_task(query("noisy")) for _ in range(6)]
    await asyncio.sleep(0)
    assert gate.total == 2 and gate.waiting("noisy") == 4
    quiet = asyncio.create_task(query("quiet"))
    await asyncio.sleep(0)
    release.set()
    await asyncio.gather(*flood, quiet)
    # Admitted in turns: the quiet tenant's one query goes before the noisy tenant's third.
    assert order[:2] == ["noisy", "noisy"] and order.index("quiet") == 2
    assert gate.total == 0 and gate.waiting() == 0


async def test_per_tenant_limit_leaves_room_for_others_and_a_full_queue_is_429():
    gate = FairAdmission(max_concurrent=4, max_per_tenant=1, max_waiting_per_tenant=1)
    hold = asyncio.Event()

    async def query(tenant: str) -> None:
        async with gate.slot(tenant):
            await hold.wait()

    first = asyncio.create_task(query("a"))
    queued = asyncio.create_task(query("a"))
    other = asyncio.create_task(query("b"))
    await asyncio.sleep(0)
    assert gate.running == {"a": 1, "b": 1} and gate.waiting("a") == 1
    with pytest.raises(TenantBusy):
        async with gate.slot("a"):
            pass
    hold.set()
    await asyncio.gather(first, queued, other)
    assert gate.total == 0


async def test_a_waiter_that_gives_up_leaves_no_trace():
    gate = FairAdmission(max_concurrent=1, max_per_tenant=1, max_waiting_per_tenant=5)
    hold = asyncio.Event()

    async def query() -> None:
        async with gate.slot("a"):
            await hold.wait()

    running = asyncio.create_task(query())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(query())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert gate.waiting() == 0
    hold.set()
    await running
    assert gate.total == 0 and gate.running == {}
