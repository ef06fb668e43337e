"""Two query-api replicas on one database, as behind the proxy: an asynchronous plan submitted on one is read,
whole, on the other; a plan or a query running on one is cancelled from the other; a tenant reaches only its own;
a plan whose replica was killed reads failed once the query timeout has passed."""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import time
from contextlib import asynccontextmanager

import httpx

from strata_query.dependencies import query_service_of
from strata_services.local.api_process import ApiProcess
from strata_services.local.processes import free_port
from tests.fixtures.apps import query_app, serving
from tests.indexer.indexing_helpers import ingest, rows_for
from tests.planner.compaction_helpers import open_window


@asynccontextmanager
async def _replicas(settings, **on_a):
    """Replica A (with the settings given, e.g. a fault that keeps its work in flight) and replica B."""
    async with (serving(query_app(settings.model_copy(update=on_a)), "http://query-a") as a,
                serving(query_app(settings), "http://query-b") as b):
        yield a, b


async def _until(condition, what: str, timeout: float = 20.0):
    """The first true value of `condition()` (awaited when it is a coroutine), polled until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if inspect.isawaitable(found):
            found = await found
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:g} s"
        await asyncio.sleep(0.05)


async def _sql(indexer, keys, index_id) -> str:
    await ingest(indexer, keys, index_id, rows_for(open_window() - 1800, 400, seed=5))
    return f'SELECT count(*) AS n FROM "{index_id}" WHERE host = \'host-01\''


async def test_a_plan_submitted_on_one_replica_is_read_whole_on_the_other(settings, indexer, keys, index_id):
    sql = await _sql(indexer, keys, index_id)
    admin, acme = keys.header(keys.admin), keys.header(keys.query_acme)
    async with _replicas(settings) as (a, b):
        submitted = await a.post("/v1/query/plans", json={"sql": sql}, headers=admin)
        assert submitted.status_code == 202, submitted.text
        plan_id = submitted.json()["plan_id"]

        async def completed_on_b():
            body = (await b.get(f"/v1/query/plans/{plan_id}", headers=admin)).json()
            return body if body["status"] != "submitted" else None

        on_b = await _until(completed_on_b, "the plan completing")
        assert on_b["status"] == "completed", on_b
        assert (await a.get(f"/v1/query/plans/{plan_id}", headers=admin)).json() == on_b
        explained = (await b.post("/v1/query/explain", json={"sql": sql}, headers=admin)).json()
        assert [f["split_id"] for f in on_b["plan"]["files"]] == [f["split_id"] for f in explained["files"]]
        assert on_b["plan"]["engine"] == explained["engine"]
        # A finished plan keeps its status; another tenant sees nothing of it on either replica.
        assert (await b.delete(f"/v1/query/plans/{plan_id}", headers=admin)).json() == on_b
        for replica in (a, b):
            assert (await replica.get(f"/v1/query/plans/{plan_id}", headers=acme)).status_code == 404
            assert (await replica.delete(f"/v1/query/plans/{plan_id}", headers=acme)).status_code == 404


async def test_a_plan_cancelled_on_the_other_replica_stops_planning_where_it_runs(settings, indexer, keys,
                                                                                   index_id):
    sql = await _sql(indexer, keys, index_id)
    admin = keys.header(keys.admin)
    async with _replicas(settings, fault_query_plan_delay_secs=60.0) as (a, b):
        plan_id = (await a.post("/v1/query/plans", json={"sql": sql}, headers=admin)).json()["plan_id"]
        planning = query_service_of(a.app).plans.tasks
        assert plan_id in planning
        assert (await b.get(f"/v1/query/plans/{plan_id}", headers=admin)).json()["status"] == "submitted"
        assert (await b.delete(f"/v1/query/plans/{plan_id}",
                               headers=keys.header(keys.query_acme))).status_code == 404

        cancelled = await b.delete(f"/v1/query/plans/{plan_id}", headers=admin)
        assert cancelled.status_code == 200 and cancelled.json() == {"plan_id": plan_id, "status": "cancelled",
                                                                      "plan": None, "error": None}
        # Replica A sees the cancel at its next poll and stops planning: well before the injected minute.
        await _until(lambda: plan_id not in planning, "replica A stopping the plan", 5.0)
        for replica in (a, b):
            assert (await replica.get(f"/v1/query/plans/{plan_id}", headers=admin)).json()["status"] == "cancelled"


async def test_a_query_cancelled_on_the_other_replica_is_interrupted_where_it_runs(settings, indexer, keys,
                                                                                    index_id):
    await _sql(indexer, keys, index_id)
    admin = keys.header(keys.admin)
    async with _replicas(settings, fault_query_scan_delay_secs=30.0) as (a, b):
        registry = query_service_of(a.app).registry
        started = time.monotonic()
        running = asyncio.create_task(a.post("/v1/query", json={"sql": f'SELECT count(*) AS n FROM "{index_id}"',
                                                                "engine": "local"}, headers=admin))
        [query_id] = await _until(lambda: list(registry.running_queries), "the query starting")
        await registry.until_shared(query_id, 5.0)
        assert (await b.delete(f"/v1/query/{query_id}", headers=keys.header(keys.query_acme))).status_code == 404

        cancel = await b.delete(f"/v1/query/{query_id}", headers=admin)
        assert cancel.status_code == 202 and cancel.json() == {"query_id": query_id, "status": "cancelling"}
        response = await running
        assert response.status_code == 409 and query_id in response.json()["detail"], response.text
        assert time.monotonic() - started < 20
        # Nothing of it is left to cancel, on either replica.
        for replica in (b, a):
            def gone(replica=replica):
                return _status_is(replica.delete(f"/v1/query/{query_id}", headers=admin), 404)

            await _until(gone, "the query's row going", 5.0)
        assert registry.running_queries == {}


async def _status_is(request, status: int) -> bool:
    return (await request).status_code == status


async def test_a_query_that_ends_before_its_row_is_sent_leaves_no_row(settings, indexer, keys, index_id):
    """Registration is off the query's path: a query ending before its batch went out writes nothing at all, and
    none of the queries leaves a row behind once its replica has answered."""
    from sqlalchemy import text

    sql = await _sql(indexer, keys, index_id)
    admin = keys.header(keys.admin)
    async with _replicas(settings) as (a, _):
        registry = query_service_of(a.app).registry
        responses = await asyncio.gather(*(a.post("/v1/query", json={"sql": sql}, headers={
            **admin, "Cache-Control": "no-store"}) for _ in range(12)))
        assert {r.status_code for r in responses} == {200}
        await _until(lambda: not registry.running_queries and (registry._writer is None or registry._writer.done()),
                     "the writer finishing")
        async with a.app.state.strata.sessions() as session:
            left = (await session.execute(text("SELECT count(*) FROM running_queries WHERE owner = :owner"),
                                          {"owner": registry.owner})).scalar_one()
        assert left == 0


async def _rows_of(client, query_id: str) -> int:
    from sqlalchemy import text

    async with client.app.state.strata.sessions() as session:
        return (await session.execute(text("SELECT count(*) FROM running_queries WHERE query_id = :id"),
                                      {"id": query_id})).scalar_one()


async def test_a_running_query_is_shared_after_its_share_time_or_at_once_when_its_id_is_handed_out(
        settings, monkeypatch):
    """A query's row waits SHARE_AFTER_SECS (made long here): one that ends sooner is never sent, while
    `until_shared`, which a streamed result's first batch awaits, sends it at once; one that runs past the share
    time is sent without being asked."""
    from ulid import ULID

    import strata_query.shared_registry as shared
    from strata_query.registry import RunningQuery

    sent: list[set[str]] = []
    real_write = shared.write_running

    async def recording_write(reads, added, removed, owner):
        sent.append({query_id for query_id, _ in added})
        await real_write(reads, added, removed, owner)

    monkeypatch.setattr(shared, "write_running", recording_write)
    monkeypatch.setattr(shared, "SHARE_AFTER_SECS", 30.0)
    async with serving(query_app(settings), "http://query-a") as a:
        registry = query_service_of(a.app).registry
        engine = query_service_of(a.app).runtime.engines.in_process

        def writer_idle() -> bool:
            return registry._writer is None or registry._writer.done()

        brief = RunningQuery(str(ULID()), None, engine)
        registry.add_running(brief)
        await asyncio.sleep(0.2)
        registry.forget_running(brief.query_id)
        await _until(writer_idle, "the writer finishing")
        assert sent == [] and await _rows_of(a, brief.query_id) == 0

        streamed = RunningQuery(str(ULID()), None, engine)
        registry.add_running(streamed)
        await registry.until_shared(streamed.query_id, 10.0)
        assert sent == [{streamed.query_id}] and await _rows_of(a, streamed.query_id) == 1
        registry.forget_running(streamed.query_id)
        await _until(writer_idle, "the row's deletion")
        assert await _rows_of(a, streamed.query_id) == 0

        monkeypatch.setattr(shared, "SHARE_AFTER_SECS", 0.1)
        long_running = RunningQuery(str(ULID()), None, engine)
        registry.add_running(long_running)
        await _until(lambda: _rows_of(a, long_running.query_id), "the long query's row")
        registry.forget_running(long_running.query_id)
        await _until(writer_idle, "the row's deletion")
        assert await _rows_of(a, long_running.query_id) == 0


async def test_a_plan_whose_replica_was_killed_reads_failed_after_the_query_timeout(settings, keys, tmp_path,
                                                                                     indexer, index_id):
    timeout_secs = 2.0
    env = {"STRATA_DATABASE_URL": settings.database_url, "STRATA_SPARK_REMOTE": settings.spark_remote,
           "STRATA_STORAGE_URI": settings.resolved_storage_uri, "STRATA_API_KEYS": keys.as_json(),
           "STRATA_HOME": str(tmp_path / "home"), "STRATA_JOB_BUNDLE_DIR": str(settings.resolved_job_bundle_dir),
           "STRATA_QUERY_TIMEOUT_SECS": str(timeout_secs), "STRATA_FAULT_QUERY_PLAN_DELAY_SECS": "60",
           "STRATA_LOG_FORMAT": "text"}
    doomed = ApiProcess("query-api", "127.0.0.1", free_port(), env, tmp_path, "query-api-doomed")
    admin = keys.header(keys.admin)
    try:
        doomed.start()
        await asyncio.to_thread(doomed.wait_healthy, 120)
        async with httpx.AsyncClient(base_url=doomed.url, timeout=60) as client:
            submitted = await client.post("/v1/query/plans", headers=admin,
                                          json={"sql": f'SELECT count(*) FROM "{index_id}"'})
        assert submitted.status_code == 202, submitted.text
        plan_id = submitted.json()["plan_id"]
        os.killpg(doomed.pid, signal.SIGKILL)
    finally:
        await asyncio.to_thread(doomed.stop)
    killed = time.monotonic()
    async with serving(query_app(settings.model_copy(update={"query_timeout_secs": timeout_secs})),
                       "http://query-b") as b:
        async def finished():
            body = (await b.get(f"/v1/query/plans/{plan_id}", headers=admin)).json()
            return body if body["status"] != "submitted" else None

        assert await finished() is None
        body = await _until(finished, "the plan reading failed", 30.0)
        # The timeout and the grace for a live owner's last write, not much more.
        assert time.monotonic() - killed < 15
        assert body["status"] == "failed" and body["error"]["status"] == 503, body
        assert body["error"]["type"].endswith("/replica-stopped") and "stopped" in body["error"]["detail"]
        # Nothing is left to cancel: it keeps its status.
        assert (await b.delete(f"/v1/query/plans/{plan_id}", headers=admin)).json() == body
