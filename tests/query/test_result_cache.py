"""The result cache: a repeated query over unchanged published files is answered from the result of its earlier run,
and only then. Any publication makes the answer a fresh run again; Cache-Control asks for a run; results are
kept per tenant, engine and row cap, never when cut at the cap or larger than their bound."""

from __future__ import annotations

import io
import re

import pyarrow as pa
import pyarrow.ipc as ipc

from strata_query.query_cache import CachedPlan, CachedResult, PlanCache
from tests.indexer.indexing_helpers import ingest, rows_for
from tests.planner.compaction_helpers import open_window
from tests.query.plans import cached_plan


async def _run(query, key_header: dict, sql: str, *, accept: str = "application/json", **extra):
    headers = {**key_header, "Accept": accept, **extra.pop("headers", {})}
    response = await query.post("/v1/query", json={"sql": sql, **extra}, headers=headers)
    assert response.status_code == 200, response.text
    return response


async def _outcomes(query) -> dict[str, float]:
    text = (await query.get("/metrics")).text

    def counter(outcome: str) -> float:
        found = re.search(rf'strata_query_result_cache_total{{outcome="{outcome}"}} ([0-9.e+]+)', text)
        return float(found.group(1)) if found else 0.0
    return {outcome: counter(outcome) for outcome in ("hit", "miss", "bypass")}


async def test_a_repeated_query_is_answered_from_its_kept_result_until_a_publication(query, indexer, keys,
                                                                                      index_id):
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 400, seed=11))
    sql = (f'SELECT host, count(*) AS n, sum(value) AS total FROM "{index_id}" '
           f"WHERE timestamp_secs >= {window - 3600} GROUP BY host ORDER BY host")
    admin = keys.header(keys.admin)
    before = await _outcomes(query)
    first = await _run(query, admin, sql)
    second = await _run(query, admin, sql)
    assert first.headers["x-strata-result-cache"] == "miss"
    assert second.headers["x-strata-result-cache"] == "hit"
    assert second.json()["summary"]["result_cache"] == "hit"
    assert second.json()["rows"] == first.json()["rows"]
    assert second.json()["columns"] == first.json()["columns"]
    assert second.headers["x-query-id"] != first.headers["x-query-id"]
    after = await _outcomes(query)
    assert (after["miss"] - before["miss"], after["hit"] - before["hit"]) == (1, 1)
    kept_bytes = re.search(r"^strata_query_result_cache_bytes ([0-9.e+]+)$", (await query.get("/metrics")).text, re.M)
    assert kept_bytes and float(kept_bytes.group(1)) > 0

    # A publication in the index: the kept plan and its result are stale; the answer counts the new rows.
    await ingest(indexer, keys, index_id, rows_for(window, 250, seed=12))
    fresh = await _run(query, admin, sql)
    assert fresh.headers["x-strata-result-cache"] == "miss"
    assert sum(row["n"] for row in fresh.json()["rows"]) == 650
    assert (await _run(query, admin, sql)).json()["rows"] == fresh.json()["rows"]


async def test_every_format_is_served_from_one_kept_result(query, indexer, keys, index_id):
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 300, seed=13))
    sql = f'SELECT metric_name, max(value) AS top FROM "{index_id}" GROUP BY metric_name ORDER BY metric_name'
    admin = keys.header(keys.admin)
    ran = await _run(query, admin, sql, accept="application/vnd.apache.arrow.stream")
    assert ran.headers["x-strata-result-cache"] == "miss"
    expected = ipc.open_stream(io.BytesIO(ran.content)).read_all()
    as_json = await _run(query, admin, sql)
    as_arrow = await _run(query, admin, sql, accept="application/vnd.apache.arrow.stream")
    as_ndjson = await _run(query, admin, sql, accept="application/x-ndjson")
    assert {r.headers["x-strata-result-cache"] for r in (as_json, as_arrow, as_ndjson)} == {"hit"}
    assert ipc.open_stream(io.BytesIO(as_arrow.content)).read_all().equals(expected)
    assert as_json.json()["rows"] == expected.to_pylist()
    assert len(as_ndjson.text.splitlines()) == expected.num_rows


async def test_cache_control_asks_for_a_run(query, indexer, keys, index_id):
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 200, seed=14))
    sql = f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {window - 3600}'
    admin = keys.header(keys.admin)
    assert (await _run(query, admin, sql)).headers["x-strata-result-cache"] == "miss"
    refreshed = await _run(query, admin, sql, headers={"Cache-Control": "max-age=0, No-Cache"})
    assert refreshed.headers["x-strata-result-cache"] == "bypass"
    assert refreshed.json()["summary"]["result_cache"] == "bypass"
    assert (await _run(query, admin, sql)).headers["x-strata-result-cache"] == "hit"

    # no-store: run, and nothing of this run replaces or joins what is kept.
    other = f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {window - 7200}'
    assert (await _run(query, admin, other, headers={"cache-control": "no-store"})).headers[
        "x-strata-result-cache"] == "bypass"
    assert (await _run(query, admin, other)).headers["x-strata-result-cache"] == "miss"


async def test_results_are_kept_per_tenant_row_cap_and_engine(query, indexer, keys, index_id):
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 300, seed=15), partition="acme")
    await ingest(indexer, keys, index_id, rows_for(window, 500, seed=16), partition="other")
    sql = f'SELECT count(*) AS n FROM "{index_id}" WHERE timestamp_secs >= {window - 3600}'
    admin, acme = keys.header(keys.admin), keys.header(keys.query_acme)
    assert (await _run(query, admin, sql)).json()["rows"] == [{"n": 800}]
    as_acme = await _run(query, acme, sql)
    assert as_acme.headers["x-strata-result-cache"] == "miss"
    assert as_acme.json()["rows"] == [{"n": 300}]
    assert (await _run(query, acme, sql)).json()["rows"] == [{"n": 300}]
    assert (await _run(query, admin, sql)).json()["rows"] == [{"n": 800}]

    capped = await _run(query, admin, sql, max_rows=5)
    assert capped.headers["x-strata-result-cache"] == "miss"
    assert (await _run(query, admin, sql, max_rows=5)).headers["x-strata-result-cache"] == "hit"
    on_spark = await _run(query, admin, sql, engine="spark")
    assert (on_spark.headers["x-strata-engine"], on_spark.headers["x-strata-result-cache"]) == ("spark", "miss")
    again = await _run(query, admin, sql, engine="spark")
    assert (again.headers["x-strata-engine"], again.headers["x-strata-result-cache"]) == ("spark", "hit")
    assert again.json()["rows"] == [{"n": 800}]


async def test_a_result_cut_at_its_cap_is_never_kept_and_a_streamed_one_is(query, indexer, keys, index_id):
    window = open_window() - 1800
    await ingest(indexer, keys, index_id, rows_for(window, 1500, seed=17))
    admin = keys.header(keys.admin)
    rows = f'SELECT host, timestamp_secs, value FROM "{index_id}" ORDER BY timestamp_secs, host, value'
    cut = await _run(query, admin, rows, max_rows=10)
    assert cut.json()["summary"]["truncated"] is True
    again = await _run(query, admin, rows, max_rows=10)
    assert again.headers["x-strata-result-cache"] == "miss"
    assert again.json()["rows"] == cut.json()["rows"]

    # 1,500 rows: more than a response answers whole, so it streams from the engine; kept once it has all gone.
    streamed = await _run(query, admin, rows, accept="application/x-ndjson")
    assert streamed.headers["x-strata-result-cache"] == "miss"
    replayed = await _run(query, admin, rows, accept="application/x-ndjson")
    assert replayed.headers["x-strata-result-cache"] == "hit"
    assert replayed.text == streamed.text
    assert len(replayed.text.splitlines()) == 1500


def _kept(files: int = 1) -> CachedPlan:
    return cached_plan(((0, 10),), files=files)


def _result(nbytes: int) -> CachedResult:
    return CachedResult(pa.schema([("n", pa.int64())]), (), nbytes)


def test_kept_results_stay_within_their_bytes_the_least_recently_used_plans_results_leaving_first():
    cache = PlanCache(max_result_bytes=1000)
    plans = {sql: _kept() for sql in ("a", "b", "c")}
    for sql, kept in plans.items():
        cache.put(sql, None, kept)
        assert cache.cache_result(sql, None, kept, ("local", 10), _result(400))
    # "a" was the least recently used plan: its result left for "c"'s.
    assert not plans["a"].results and plans["b"].results and plans["c"].results
    assert cache.result_bytes == 800
    cache.candidate("b", None)
    assert cache.cache_result("a", None, plans["a"], ("local", 10), _result(400))
    assert not plans["c"].results and plans["b"].results and cache.result_bytes == 800

    # A result replacing one under the same key counts once; a plan replaced or dropped takes its results along.
    assert cache.cache_result("b", None, plans["b"], ("local", 10), _result(300))
    assert cache.result_bytes == 700
    cache.put("b", None, _kept())
    assert cache.result_bytes == 400
    cache.drop("a", None)
    assert cache.result_bytes == 0


def test_a_result_is_kept_only_with_its_own_plan_and_within_the_bound():
    one_result = 1000  # STRATA_QUERY_RESULT_CACHE_MAX_RESULT_BYTES
    cache = PlanCache(max_result_bytes=64 * one_result, max_one_result_bytes=one_result)
    kept = _kept()
    assert not cache.cache_result("a", None, kept, ("local", 10), _result(1))  # not (or no longer) the kept plan
    cache.put("a", None, kept)
    assert not cache.cache_result("a", "acme", kept, ("local", 10), _result(1))
    assert not cache.cache_result("a", None, kept, ("local", 10), _result(one_result + 1))
    assert cache.cache_result("a", None, kept, ("local", 10), _result(one_result))
    assert not PlanCache(max_result_bytes=0).cache_result("a", None, kept, ("local", 10), _result(1))
