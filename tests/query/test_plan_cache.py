"""Kept plans (query-api's plan cache): a repeated query reuses its plan only while its index is unchanged; any
publication, removal or settings change in the index plans it again, and the answer is always the fresh one. A
plan on the default lookback is reused only while the clock's move cannot change what it reads."""

from __future__ import annotations

import asyncio
import re

import pytest
from sqlalchemy import text

from strata_query.dependencies import query_service_of
from strata_query.query_cache import CachedPlan, PlanCache, reuse
from strata_services.sample_data import metrics_index_config
from tests.helpers import delete_index
from tests.indexer.indexing_helpers import ingest, rows_for
from tests.planner.compaction_helpers import open_window
from tests.query.plans import cached_plan


def _counter(metrics: str, outcome: str) -> float:
    found = re.search(rf'strata_query_plan_cache_total{{outcome="{outcome}"}} ([0-9.e+]+)', metrics)
    return float(found.group(1)) if found else 0.0


async def _outcomes(query) -> dict[str, float]:
    text = (await query.get("/metrics")).text
    return {o: _counter(text, o) for o in ("hit", "miss", "stale")}


async def _count(query, keys, sql: str) -> tuple[int, str]:
    response = await query.post("/v1/query", json={"sql": sql},
                                headers={**keys.header(keys.admin), "Accept": "application/json"})
    assert response.status_code == 200, response.text
    body = response.json()
    return body["rows"][0]["n"], response.headers["x-strata-files-scanned"]


@pytest.mark.parametrize("bounded", [True, False], ids=["time-bounded", "default-lookback"])
async def test_a_kept_plan_serves_until_its_index_changes(query, indexer, keys, index_id, bounded):
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 500, seed=1))
    where = f" WHERE timestamp_secs >= {window - 3600}" if bounded else ""
    sql = f'SELECT count(*) AS n FROM "{index_id}"{where}'

    before = await _outcomes(query)
    assert await _count(query, keys, sql) == (500, "1")
    assert await _count(query, keys, sql) == (500, "1")
    after = await _outcomes(query)
    assert after["miss"] - before["miss"] == 1 and after["hit"] - before["hit"] == 1

    # A publication in the index: the kept plan is stale, the answer counts the new file.
    await ingest(indexer, keys, index_id, rows_for(window, 300, seed=2))
    assert await _count(query, keys, sql) == (800, "2")
    stale = await _outcomes(query)
    assert stale["stale"] - after["stale"] == 1
    assert await _count(query, keys, sql) == (800, "2")
    assert (await _outcomes(query))["hit"] - stale["hit"] == 1


async def test_a_kept_plan_is_checked_on_a_new_connection_when_its_own_was_dropped(query, indexer, keys, index_id):
    """The check runs on connections that are not pinged before use (one round trip instead of four); one that
    PostgreSQL dropped is replaced, and the query is still answered from its kept plan."""
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 200, seed=3))
    sql = f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {window - 3600}'
    assert await _count(query, keys, sql) == (200, "1")
    assert await _count(query, keys, sql) == (200, "1")  # checked once: the check's pool holds a connection
    async with query.app.state.strata.engine.connect() as connection:
        dropped = (await connection.execute(text(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'strata-query-plan-check'"))).scalar_one()
    assert dropped >= 1
    before = await _outcomes(query)
    assert await _count(query, keys, sql) == (200, "1")
    assert (await _outcomes(query))["hit"] - before["hit"] == 1


async def test_a_settings_change_or_a_new_incarnation_plans_again(query, indexer, keys, index_id):
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 200, seed=3))
    sql = f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {window - 3600}'
    assert (await _count(query, keys, sql))[0] == 200
    settings = metrics_index_config(index_id, messages=True, query={"default_lookback_secs": 86400})
    del settings["index_id"]
    response = await indexer.put(f"/v1/indexes/{index_id}", json=settings, headers=keys.header(keys.admin))
    assert response.status_code == 200, response.text
    before = await _outcomes(query)
    assert (await _count(query, keys, sql))[0] == 200
    assert (await _outcomes(query))["stale"] - before["stale"] == 1

    # Deleted and created again under the same name: the old plan's files are not the new index's.
    await delete_index(indexer, keys, index_id)
    config = metrics_index_config(index_id, messages=True, query={"default_lookback_secs": 3 * 86400})
    assert (await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))).status_code == 201
    assert await _count(query, keys, sql) == (0, "0")
    await ingest(indexer, keys, index_id, rows_for(window, 100, seed=4))
    assert (await _count(query, keys, sql))[0] == 100


def _ahead(metrics: str, outcome: str) -> float:
    found = re.search(rf'strata_query_run_ahead_total{{outcome="{outcome}"}} ([0-9.e+]+)', metrics)
    return float(found.group(1)) if found else 0.0


async def _fresh_count(query, keys, sql: str) -> tuple[int, str, dict[str, float]]:
    """A fresh run's count and files, and how many runs ahead were used and abandoned so far."""
    response = await query.post("/v1/query", json={"sql": sql}, headers={
        **keys.header(keys.admin), "Accept": "application/json", "Cache-Control": "no-cache"})
    assert response.status_code == 200, response.text
    metrics = (await query.get("/metrics")).text
    return (response.json()["rows"][0]["n"], response.headers["x-strata-files-scanned"],
            {o: _ahead(metrics, o) for o in ("used", "abandoned")})


async def _nothing_left_running(query) -> None:
    """An abandoned run leaves no engine cursor and no running query behind once its task has ended."""
    service = query_service_of(query.app)
    for _ in range(100):
        if not service.runtime.local._cursors and not service.registry.running_queries:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"left running: {service.runtime.local._cursors}, {service.registry.running_queries}")


async def test_a_fresh_run_started_ahead_of_its_plan_check_answers_only_if_the_kept_plan_held(
        query, indexer, keys, index_id, storage):
    """A fresh query on a kept plan starts running before the plan's check (its engine time overlaps the check's
    round trip). Held: that run answers. Stale: it is abandoned, even when its files are gone by then (replaced
    and collected), and the answer is the fresh plan's."""
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 500, seed=1))
    sql = f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {window - 3600}'
    n, files, first = await _fresh_count(query, keys, sql)
    assert (n, files) == (500, "1")
    n, files, held = await _fresh_count(query, keys, sql)
    assert (n, files) == (500, "1")
    assert held["used"] - first["used"] == 1 and held["abandoned"] == first["abandoned"]

    # A publication: the run ahead reads the kept plan's one file, the answer counts both.
    await ingest(indexer, keys, index_id, rows_for(window, 300, seed=2))
    n, files, stale = await _fresh_count(query, keys, sql)
    assert (n, files) == (800, "2")
    assert stale["abandoned"] - held["abandoned"] == 1 and stale["used"] == held["used"]
    await _nothing_left_running(query)

    # A new incarnation whose old files were collected: the run ahead fails reading them, unanswered.
    kept = query_service_of(query.app).runtime.plan_cache.candidate(sql, None)
    old_files = [f.uri for f in kept.plan.files]
    await delete_index(indexer, keys, index_id)
    config = metrics_index_config(index_id, messages=True, query={"default_lookback_secs": 3 * 86400})
    assert (await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))).status_code == 201
    await ingest(indexer, keys, index_id, rows_for(window, 100, seed=4))
    for uri in old_files:
        storage.delete(uri)
    n, files, gone = await _fresh_count(query, keys, sql)
    assert (n, files) == (100, "1")
    assert gone["abandoned"] - stale["abandoned"] == 1
    await _nothing_left_running(query)


def _lookback_plan(lookback_start: int, earliest: int | None, files: int = 0) -> CachedPlan:
    return cached_plan(((lookback_start, None),), files=files, lookback_start=lookback_start, earliest=earliest)


def test_a_lookback_plan_holds_while_its_files_stay_inside_the_lookback():
    kept = _lookback_plan(lookback_start=5000, earliest=5500)
    moved = reuse(kept, ("i:1", 1, 7), now=6400.0)  # the lookback now starts at 5400, before every kept file
    assert moved is not None and moved.time_range.intervals == ((5400, None),)
    assert kept.plan.time_range.intervals == ((5000, None),), "the cached plan itself is never changed"
    assert reuse(kept, ("i:1", 1, 7), now=6501.0) is None  # a kept file would start before the lookback
    assert reuse(_lookback_plan(5000, None), ("i:1", 1, 7), now=1e9) is not None  # it kept no file
    assert reuse(kept, ("i:1", 1, 8), now=6000.0) is None  # the index changed
    assert reuse(kept, ("i:2", 1, 7), now=6000.0) is None  # another incarnation
    assert reuse(kept, None, now=6000.0) is None  # the index is gone


def test_the_cache_is_bounded_in_plans_and_in_files_the_least_recently_used_leaving_first():
    def sized(files: int) -> CachedPlan:
        return _lookback_plan(0, None, files)

    cache = PlanCache(max_plans=3, max_files=100)
    for name in "abc":
        cache.put(name, None, sized(10))
    assert cache.candidate("a", None) is not None  # used: "b" is now the least recently used
    cache.put("d", None, sized(10))
    assert cache.candidate("b", None) is None and len(cache) == 3 and cache.files == 30
    cache.put("e", None, sized(85))  # over the file bound: the oldest ("c", then "a") leave until it fits
    assert [k for k in "acde" if cache.candidate(k, None) is not None] == ["d", "e"] and cache.files == 95
    cache.put("e", None, sized(5))  # replaced, not counted twice
    assert cache.files == 15 and len(cache) == 2
