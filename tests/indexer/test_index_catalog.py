"""The index catalog: create, list, get, replace, delete; bad configurations are 422 naming the field."""

from __future__ import annotations

import pytest

from strata_services.sample_data import metrics_index_config
from tests.helpers import db_snapshot, unique_index_id

pytestmark = pytest.mark.spark


async def test_create_get_update_delete_round_trip(indexer, keys):
    index_id = unique_index_id("cat")
    created = await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["index_uid"].startswith(f"{index_id}:")
    assert body["config"]["window_duration_secs"] == 900
    assert body["config"]["merge_policy"]["merge_factor"] == 10

    fetched = await indexer.get(f"/v1/indexes/{index_id}", headers=keys.header(keys.query_acme))
    assert fetched.json()["index_uid"] == body["index_uid"]

    settings = metrics_index_config(index_id, window_duration_secs=300)
    del settings["index_id"]
    updated = await indexer.put(f"/v1/indexes/{index_id}", json=settings, headers=keys.header(keys.admin))
    assert updated.status_code == 200, updated.text
    assert updated.json()["version"] == 2 and updated.json()["config"]["window_duration_secs"] == 300

    assert (await indexer.delete(f"/v1/indexes/{index_id}", headers=keys.header(keys.admin))).status_code == 204
    assert (await indexer.get(f"/v1/indexes/{index_id}", headers=keys.header(keys.admin))).status_code == 404

    recreated = await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    assert recreated.status_code == 201
    assert recreated.json()["index_uid"] != body["index_uid"], "a new incarnation gets a new index_uid"


async def test_schema_change_changes_doc_mapping_uid(indexer, keys):
    index_id = unique_index_id("cat")
    first = (await indexer.post("/v1/indexes", json=metrics_index_config(index_id),
                                headers=keys.header(keys.admin))).json()
    settings = metrics_index_config(index_id)
    del settings["index_id"]
    settings["fields"].append({"name": "env", "type": "string"})
    second = (await indexer.put(f"/v1/indexes/{index_id}", json=settings, headers=keys.header(keys.admin))).json()
    assert first["doc_mapping_uid"] != second["doc_mapping_uid"]


async def test_duplicate_create_is_409(indexer, keys):
    index_id = unique_index_id("cat")
    assert (await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
            ).status_code == 201
    again = await indexer.post("/v1/indexes", json=metrics_index_config(index_id), headers=keys.header(keys.admin))
    assert again.status_code == 409


async def test_listing_pages_through_indexes(indexer, keys):
    prefix = unique_index_id("pg")
    for i in range(5):
        await indexer.post("/v1/indexes", json=metrics_index_config(f"{prefix}-{i}"), headers=keys.header(keys.admin))
    names: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await indexer.get("/v1/indexes", params=params, headers=keys.header(keys.writer))).json()
        names += [i["index_id"] for i in page["indexes"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert [n for n in names if n.startswith(prefix)] == [f"{prefix}-{i}" for i in range(5)]


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        # TW-2: a window duration that does not divide an hour is refused.
        ({"window_duration_secs": 420}, "window_duration_secs", "does not divide one hour"),
        ({"sort_schema": "metric_name,nope@v1"}, "sort_schema", "'nope' is not declared"),
        ({"sort_schema": "metric_name,,host"}, "sort_schema", "not a valid column name"),
        ({"timestamp_field": "missing"}, "timestamp_field", "not declared"),
        ({"timestamp_field": "host"}, "timestamp_field", "must be i64"),
        ({"compaction_start_time": None}, "compaction_start_time", ""),
        ({"index_id": "Bad Name!"}, "index_id", "pattern"),
        ({"fields": [{"name": "tags", "type": "string_list"}, {"name": "timestamp_secs", "type": "i64"}],
          "sort_schema": "tags@v1"}, "sort_schema", "not sortable"),
        ({"artifacts": {"bloom_columns": [{"column": "ghost"}]}}, "artifacts.bloom_columns", "'ghost'"),
        ({"unknown_setting": 1}, "unknown_setting", "xtra"),
    ],
)
async def test_bad_config_is_422_naming_the_field(indexer, keys, database_url, overrides, field, fragment):
    config = metrics_index_config(unique_index_id("bad"))
    config.update(overrides)
    if overrides.get("compaction_start_time", 0) is None:
        del config["compaction_start_time"]
    before = await db_snapshot(database_url)
    response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["type"].endswith("/invalid-input")
    assert any(e["field"] == field for e in problem["errors"]), problem
    assert fragment in problem["detail"]
    assert await db_snapshot(database_url) == before


async def test_catalog_writes_need_admin(indexer, keys):
    config = metrics_index_config(unique_index_id("auth"))
    assert (await indexer.post("/v1/indexes", json=config)).status_code == 401
    forbidden = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.writer))
    assert forbidden.status_code == 403
    assert forbidden.headers["content-type"] == "application/problem+json"
    assert (await indexer.delete("/v1/indexes/whatever", headers=keys.header(keys.writer))).status_code == 403
    assert (await indexer.delete("/v1/indexes/no-such", headers=keys.header(keys.admin))).status_code == 404
