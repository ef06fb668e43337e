"""Listing splits: filters (window range, state, partition) and cursor paging that neither skips nor repeats."""

from __future__ import annotations

import time

import pytest

from strata_services.sample_data import metrics_index_config
from tests.helpers import ndjson, unique_index_id

pytestmark = pytest.mark.spark


async def test_filters_and_cursor_paging(indexer, keys):
    index_id = unique_index_id("list")
    assert (await indexer.post("/v1/indexes", json=metrics_index_config(index_id, window_duration_secs=60),
                               headers=keys.header(keys.admin))).status_code == 201
    now = int(time.time())
    base = now - now % 60 - 20 * 60
    rows = [{"metric_name": "m", "service": "s", "host": "h", "timestamp_secs": base + 60 * i, "value": 1.0}
            for i in range(20)]
    headers = {**keys.header(keys.writer), "Content-Type": "application/x-ndjson"}
    for partition in ("p1", "p2"):
        response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=ndjson(rows), headers=headers,
                                      params={"partition_id": partition})
        assert response.status_code == 200, response.text

    seen: list[tuple[int, str]] = []
    cursor = None
    while True:
        params = {"limit": 7, "partition_id": "p1", "state": "published"}
        if cursor:
            params["cursor"] = cursor
        page = (await indexer.get(f"/v1/indexes/{index_id}/splits", params=params,
                                  headers=keys.header(keys.writer))).json()
        seen += [(s["window_start"], s["split_id"]) for s in page["splits"]]
        assert all(s["partition_id"] == "p1" for s in page["splits"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == 20 and seen == sorted(seen) and len(set(seen)) == 20

    ranged = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer),
                                params={"window_start_gte": base + 300, "window_start_lt": base + 600})).json()
    assert sorted({s["window_start"] for s in ranged["splits"]}) == [base + 300 + 60 * i for i in range(5)]
    assert len(ranged["splits"]) == 10

    none = (await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "marked_for_deletion"},
                              headers=keys.header(keys.writer))).json()
    assert none["splits"] == []


async def test_a_bad_cursor_is_400_and_a_bad_state_is_422(indexer, keys):
    index_id = unique_index_id("list")
    await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    bad_cursor = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"cursor": "garbage!"},
                                   headers=keys.header(keys.writer))
    assert bad_cursor.status_code == 400
    bad_state = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"state": "sideways"},
                                  headers=keys.header(keys.writer))
    assert bad_state.status_code == 422
    assert bad_state.json()["errors"][0]["field"].startswith("state")


async def test_query_key_sees_only_its_tenant(indexer, keys):
    index_id = unique_index_id("list")
    await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    forbidden = await indexer.get(f"/v1/indexes/{index_id}/splits", params={"partition_id": "globex"},
                                  headers=keys.header(keys.query_acme))
    assert forbidden.status_code == 403
    own = await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.query_acme))
    assert own.status_code == 200
