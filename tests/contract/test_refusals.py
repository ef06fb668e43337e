"""What the fuzzer found, pinned: input an outside client can send is refused with a 4xx problem naming what is
wrong, at the one place that owns the rule, and a PostgreSQL that is down is a 503, never a 500."""

from __future__ import annotations

import httpx
import pytest
from asgi_lifespan import LifespanManager

from strata_core.config import Settings
from strata_services.local.processes import free_port
from strata_services.sample_data import metrics_index_config
from tests.helpers import assert_problem, unique_index_id

pytestmark = pytest.mark.spark

UNTERMINATED = ['SELECT * FROM "metrics', 'n\u00e5|f"x', "SELECT a FROM t WHERE b = 'open\nLIMIT 1"]


def _fields(body: dict) -> list[str]:
    return [error["field"] for error in body["errors"]]


@pytest.mark.parametrize("path", ["/v1/query", "/v1/query/explain", "/v1/query/plans"])
@pytest.mark.parametrize("sql", UNTERMINATED)
async def test_sql_that_cannot_be_tokenized_is_a_400_with_its_position(query, keys, path, sql):
    response = await query.post(path, headers=keys.header(keys.admin), json={"sql": sql})
    body = assert_problem(response, 400, "query-syntax")
    [error] = body["errors"]
    assert error["field"] == "sql" and error["line"] >= 1 and error["column"] >= 1
    assert f"line {error['line']}, column {error['column']}" in body["detail"]


async def test_an_unterminated_string_points_at_its_line(query, keys):
    response = await query.post("/v1/query/explain", headers=keys.header(keys.admin),
                                json={"sql": "SELECT a\nFROM t\nWHERE b = 'open"})
    [error] = assert_problem(response, 400, "query-syntax")["errors"]
    assert (error["line"], error["column"]) == (3, 11)


@pytest.mark.parametrize("params, field", [
    ({"window_start_lt": "529186024373480062976"}, "window_start_lt"),
    ({"window_start_gte": str(-(2**63) - 1)}, "window_start_gte"),
])
async def test_integers_past_int64_are_refused_naming_the_parameter(planner, keys, params, field):
    response = await planner.get("/v1/compaction/jobs", headers=keys.header(keys.admin), params=params)
    assert _fields(assert_problem(response, 422, "invalid-input")) == [field]


async def test_integers_past_int64_in_a_body_are_refused_naming_the_field(indexer, keys):
    index_id = unique_index_id("wide")
    body = {"splits": [{"split_id": "01JD5Z8G3N4Q6R7S8T9V0W1X2Y", "uri": "x.parquet", "num_rows": 2**63}]}
    response = await indexer.post(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.admin), json=body)
    assert _fields(assert_problem(response, 422, "invalid-input")) == ["splits.0.num_rows"]


async def test_a_nul_character_is_refused_naming_the_field(planner, indexer, keys):
    poll = await planner.post("/v1/compaction/poll", headers=keys.header(keys.worker),
                              json={"worker_id": "w\u0000orker", "capacity": 1})
    body = assert_problem(poll, 422, "invalid-input")
    assert _fields(body) == ["worker_id"] and "NUL" in body["detail"]
    nested = await planner.post("/v1/compaction/poll", headers=keys.header(keys.worker), json={
        "worker_id": "w", "capacity": 0,
        "updates": [{"job_id": "01JD5Z8G3N4Q6R7S8T9V0W1X2Y", "fencing_token": 1, "status": "failure",
                     "error": "disk\u0000full"}]})
    assert _fields(assert_problem(nested, 422, "invalid-input")) == ["updates.0.error"]
    listing = await indexer.get("/v1/indexes", headers=keys.header(keys.admin), params={"cursor": "a\u0000"})
    body = assert_problem(listing, 422, "invalid-input")
    assert _fields(body) == ["cursor"] and "NUL" in body["detail"]


async def test_a_lone_surrogate_is_refused_naming_the_field(planner, keys):
    response = await planner.post("/v1/compaction/poll", content=b'{"worker_id": "w\\ud800", "capacity": 1}',
                                  headers={**keys.header(keys.worker), "Content-Type": "application/json"})
    body = assert_problem(response, 422, "invalid-input")
    assert _fields(body) == ["worker_id"] and "surrogate" in body["detail"]


@pytest.mark.parametrize("content", [b'{"worker_id": "w", ', b"\xff\xfe not utf-8"])
async def test_a_body_that_does_not_parse_is_a_400(planner, keys, content):
    response = await planner.post("/v1/compaction/poll", content=content,
                                  headers={**keys.header(keys.worker), "Content-Type": "application/json"})
    assert_problem(response, 400, "bad-request")


@pytest.mark.parametrize("path, field", [
    ("/v1/compaction/jobs/not-a-ulid", "job_id"),
    ("/v1/indexes/Upper_Case/windows", "index_id"),
])
async def test_ids_are_checked_by_their_pattern(planner, keys, path, field):
    response = await planner.get(path, headers=keys.header(keys.admin))
    assert _fields(assert_problem(response, 422, "invalid-input")) == [field]


async def test_a_forged_split_cursor_is_a_400(indexer, keys):
    index_id = unique_index_id("cursor")
    assert (await indexer.post("/v1/indexes", headers=keys.header(keys.admin),
                               json=metrics_index_config(index_id))).status_code == 201
    # base64url of [9999999999999999999999, "x"]: a window past int64 and a split id that is no ULID.
    forged = "Wzk5OTk5OTk5OTk5OTk5OTk5OTk5OTksICJ4Il0"
    response = await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.admin),
                                 params={"cursor": forged})
    assert_problem(response, 400, "bad-request")


async def test_postgresql_down_is_a_503_naming_it(keys, storage_root):
    from strata_indexer.app import create_app

    settings = Settings(database_url=f"postgresql+asyncpg://strata:secret@127.0.0.1:{free_port()}/strata",
                        storage_uri=storage_root.as_uri(), api_keys=keys.as_json())
    app = create_app(settings, background=False)
    async with LifespanManager(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://x") as client:
            response = await client.get("/v1/indexes", headers=keys.header(keys.admin))
    body = assert_problem(response, 503, "database-unavailable")
    assert "PostgreSQL at postgresql+asyncpg://strata:***@127.0.0.1" in body["detail"]
    assert "secret" not in response.text


async def test_a_file_name_too_long_for_the_filesystem_is_a_file_that_does_not_exist(indexer, keys):
    index_id = unique_index_id("longname")
    assert (await indexer.post("/v1/indexes", headers=keys.header(keys.admin),
                               json=metrics_index_config(index_id))).status_code == 201
    body = {"splits": [{"split_id": "01JD5Z8G3N4Q6R7S8T9V0W1X2Y", "uri": "x" * 300 + ".parquet", "num_rows": 1}]}
    response = await indexer.post(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.admin), json=body)
    problem = assert_problem(response, 422, "invalid-input")
    assert [e["field"] for e in problem["errors"]] == ["splits.0.uri"] and "does not exist" in problem["detail"]
