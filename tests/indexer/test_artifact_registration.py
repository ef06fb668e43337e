"""`POST /v1/splits/{split_id}/artifacts`: artifacts built elsewhere are checked (where they are stored, size,
header, type, format version, content hash), registered all-or-nothing and idempotently, and published as one
snapshot; every bad input is a 4xx naming what is wrong, with nothing written."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from strata_core.domain.index_uid import split_index_uid
from tests.indexer.artifact_fixtures import as_request, build_and_store, prefix_of, split_row
from tests.indexer.indexing_helpers import EXPECTED, artifacts_of, create_indexed_index, ingest, rows_for
from tests.planner.compaction_helpers import open_window

pytestmark = pytest.mark.usefixtures("clock_at_present")


async def _artifact_rows(database_url: str, split_id: str) -> list[tuple]:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            return [tuple(r) for r in (await connection.execute(text(
                "SELECT artifact_type, column_name, content_hash FROM index_artifacts WHERE split_id = :s "
                "ORDER BY 1, 2"), {"s": split_id})).all()]
    finally:
        await engine.dispose()


@pytest.fixture
async def split(indexer, keys) -> dict:
    index_id = await create_indexed_index(indexer, keys)
    split_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 300))
    return await split_row(indexer, keys, index_id, split_id)


async def _register(indexer, keys, split_id: str, artifacts: list[dict], **extra):
    return await indexer.post(f"/v1/splits/{split_id}/artifacts", headers=keys.header(keys.writer),
                              json={"artifacts": artifacts, **extra})


async def test_register_publish_and_register_again_is_a_no_op(indexer, keys, storage, split):
    built = build_and_store(storage, split)
    first = await _register(indexer, keys, split["split_id"], as_request(built))
    assert first.status_code == 200, first.text
    body = first.json()
    assert len(body["created"]) == len(EXPECTED) and body["snapshot"]["published"]
    assert {(a["artifact_type"], a["column"]) for a in body["artifacts"] if a["in_published_snapshot"]} == EXPECTED
    assert storage.exists(body["snapshot"]["manifest_uri"])

    again = await _register(indexer, keys, split["split_id"], as_request(built))
    assert again.status_code == 200 and again.json()["created"] == []
    assert again.json()["artifacts"] == body["artifacts"]


async def test_same_identity_with_other_content_is_a_409(indexer, keys, storage, split, database_url):
    built = build_and_store(storage, split)
    assert (await _register(indexer, keys, split["split_id"], as_request(built))).status_code == 200
    before = await _artifact_rows(database_url, split["split_id"])
    rebuilt = build_and_store(storage, split, zstd_level=19, write=False)
    [zone] = [a for a in rebuilt if a["artifact_type"] == "zone_map"]
    other_uri = zone["uri"].replace("zone_map.v1", "zone_map.v1.rebuilt")
    storage.write_bytes(other_uri, zone["data"])
    original = next(a for a in built if a["artifact_type"] == "zone_map")
    assert zone["content_hash"] != original["content_hash"]
    response = await _register(indexer, keys, split["split_id"], as_request([{**zone, "uri": other_uri}]))
    assert response.status_code == 409, response.text
    assert "already registered" in response.json()["detail"]
    assert await _artifact_rows(database_url, split["split_id"]) == before


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"content_hash": "sha256:" + "0" * 64}, "artifacts[0].content_hash", "content hash"),
    ({"artifact_type": "trigram"}, "artifacts[0].artifact_type", "unknown artifact type"),
    ({"format_version": 7}, "artifacts[0].format_version", "not supported"),
    ({"size_bytes": 1}, "artifacts[0].size_bytes", "holds"),
    ({"column": "service"}, "artifacts[0].column", "header says column"),
])
async def test_bad_artifacts_are_422_naming_the_field_and_write_nothing(indexer, keys, storage, split, database_url,
                                                                        change, field, message):
    built = as_request(build_and_store(storage, split))
    bloom = next(a for a in built if (a["artifact_type"], a["column"]) == ("bloom", "host"))
    response = await _register(indexer, keys, split["split_id"], [bloom | change, *[a for a in built if a != bloom]])
    assert response.status_code == 422, response.text
    errors = response.json()["errors"]
    assert any(e["field"] == field and message in e["message"] for e in errors), errors
    assert await _artifact_rows(database_url, split["split_id"]) == []
    assert not (await artifacts_of(indexer, keys, split["split_id"]))["snapshot"]["published"]


async def test_an_artifact_of_another_file_or_outside_its_prefix_is_refused(indexer, keys, storage, split):
    built = as_request(build_and_store(storage, split))
    index_id, _ = split_index_uid(split["index_uid"])
    other_id = await ingest(indexer, keys, index_id, rows_for(open_window(), 50, seed=3))
    other = await split_row(indexer, keys, index_id, other_id)
    # The object is under the other file's prefix but its header names the first file.
    moved_uri = built[0]["uri"].replace(split["split_id"], other_id, 1)
    storage.write_bytes(moved_uri, storage.open_input(built[0]["uri"]).read())
    response = await _register(indexer, keys, other_id, [{**built[0], "uri": moved_uri}])
    assert response.status_code == 422 and "header names split" in response.text
    outside = await _register(indexer, keys, other_id, [{**built[0], "uri": split["uri"]}])
    assert outside.status_code == 422 and prefix_of(storage, other["index_uid"], other_id) in outside.text


async def test_unknown_file_is_a_404_and_tenants_are_confined(indexer, keys, storage, split):
    built = as_request(build_and_store(storage, split))
    missing = await _register(indexer, keys, "01" + "Z" * 24, built)
    assert missing.status_code == 404 and "does not exist" in missing.json()["detail"]
    # The acme writer key only acts on acme's partition; this file is in "default".
    forbidden = await indexer.post(f"/v1/splits/{split['split_id']}/artifacts",
                                   headers=keys.header(keys.writer_acme), json={"artifacts": built})
    assert forbidden.status_code == 403
