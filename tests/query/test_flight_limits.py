"""The proxy's per-tenant limits on query-api's Flight SQL door, driven by the ADBC Flight SQL driver (and pyarrow's
Flight client where a test needs a ticket left unredeemed): a tenant over its rate is refused with the problem the
proxy answers while another is served, the cap on what runs at once holds (a ticket holds its slot until its
result is streamed or cancelled), and an admin key spends a budget of its own.

Each test runs a query-api of its own with the limits it is about. The rate is 0.001 requests/s, so no token
refills while a test runs and the refusals do not depend on timing."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow as pa
import pyarrow.flight as flight
import pytest
from asgi_lifespan import LifespanManager
from google.protobuf import any_pb2

from strata_core.api_keys import ApiKeyRegistry
from strata_query.app import create_app
from strata_query.flight.proto import FlightSql_pb2 as sql
from strata_services.demo import demo_batches, demo_index_config
from tests.helpers import ARROW, arrow_stream, delete_index, unique_index_id

GLOBEX, SECOND_ADMIN = "test-query-globex-key", "test-second-admin-key"
ROWS = 200


@pytest.fixture(scope="module")
async def index(indexer, keys) -> AsyncIterator[str]:
    """An index holding acme's rows."""
    now = int(time.time())
    index_id = unique_index_id("flight-limits")
    response = await indexer.post("/v1/indexes", json={**demo_index_config(now), "index_id": index_id},
                                  headers=keys.header(keys.admin))
    assert response.status_code == 201, response.text
    for table in demo_batches(now, windows=1, rows_per_window=ROWS, batches=1):
        response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=arrow_stream(table),
                                      headers={**keys.header(keys.writer_acme), "Content-Type": ARROW})
        assert response.status_code == 200, response.text
    yield index_id
    await delete_index(indexer, keys, index_id)


@asynccontextmanager
async def limited_query_api(settings, keys, **limits) -> AsyncIterator:
    """query-api with these limits and two more keys: another tenant's and another admin's."""
    api_keys = {**json.loads(keys.as_json()), GLOBEX: {"scopes": ["query"], "tenant": "globex"},
                SECOND_ADMIN: {"scopes": ["admin"]}}
    app = create_app(settings.model_copy(update={"api_keys": json.dumps(api_keys), **limits}))
    async with LifespanManager(app):
        yield app


def _count(port: int, key: str, index_id: str) -> int:
    with flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True,
                            db_kwargs={adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value:
                                       f"Bearer {key}"}) as connection, connection.cursor() as cursor:
        cursor.execute(f'SELECT count(*) AS n FROM "{index_id}"')
        return cursor.fetchone()[0]


async def count(port: int, key: str, index_id: str) -> int:
    return await asyncio.to_thread(_count, port, key, index_id)


async def refusal(port: int, key: str, index_id: str) -> dict:
    """The problem a refused query carries, checked to arrive as gRPC UNAVAILABLE (ADBC's IO status)."""
    with pytest.raises(adbc_driver_manager.Error) as caught:
        await count(port, key, index_id)
    assert caught.value.status_code == adbc_driver_manager.AdbcStatusCode.IO, caught.value
    text = str(caught.value)
    assert "(Unavailable;" in text, text
    problem = json.JSONDecoder().raw_decode(text[text.index('{"type"'):])[0]
    assert problem["status"] == 429 and problem["type"] == "https://strata.dev/problems/rate-limited"
    return problem


def rejections(app, reason: str, tenant: str) -> float:
    return app.state.strata.registry.get_sample_value("strata_flight_rejections_total",
                                                      {"reason": reason, "tenant": tenant}) or 0.0


def _pack(message) -> bytes:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed.SerializeToString()


def _options(key: str) -> flight.FlightCallOptions:
    return flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {key}".encode())])


async def test_a_tenant_over_its_rate_is_refused_while_another_is_served(settings, keys, index):
    async with limited_query_api(settings, keys, proxy_rate_per_sec=0.001, proxy_burst=2) as app:
        port = app.state.flight.port
        # One ADBC query (prepare, GetFlightInfo, DoGet) is one request, as one POST /v1/query is.
        assert [await count(port, keys.query_acme, index) for _ in range(2)] == [ROWS, ROWS]
        problem = await refusal(port, keys.query_acme, index)
        assert problem["detail"].startswith("tenant 'acme' is over its rate limit of 0.001 requests/s (burst 2); "
                                            "retry in ")
        assert rejections(app, "rate", "acme") == 1.0
        # Fairness: the other tenant's budget is untouched (its partition has no rows of this index).
        assert await count(port, GLOBEX, index) == 0
        assert rejections(app, "rate", "globex") == 0.0


async def test_an_admin_key_is_limited_by_its_own_identity(settings, keys, index):
    async with limited_query_api(settings, keys, proxy_rate_per_sec=0.001, proxy_burst=1) as app:
        port = app.state.flight.port
        assert await count(port, keys.admin, index) == ROWS
        key_id = ApiKeyRegistry.from_json(keys.as_json()).authenticate(keys.admin).key_id
        problem = await refusal(port, keys.admin, index)
        assert problem["detail"].startswith(f"untenanted key {key_id} is over its rate limit")
        assert rejections(app, "rate", f"key:{key_id}") == 1.0
        # Another admin key and a tenant each have their own budget, not one shared by untenanted keys.
        assert await count(port, SECOND_ADMIN, index) == ROWS
        assert await count(port, keys.query_acme, index) == ROWS


async def test_the_cap_counts_a_query_until_its_ticket_is_streamed_or_cancelled(settings, keys, index):
    async with limited_query_api(settings, keys, proxy_rate_per_sec=1000.0, proxy_burst=1000,
                                 proxy_max_concurrent_per_tenant=1) as app:
        port = app.state.flight.port
        cap = app.state.flight.limits.limits.cap
        client = flight.connect(f"grpc://127.0.0.1:{port}")
        descriptor = flight.FlightDescriptor.for_command(_pack(sql.CommandStatementQuery(
            query=f'SELECT count(*) AS n FROM "{index}"')))

        # A FlightInfo whose ticket is not redeemed yet: its query is still acme's one running query.
        info = await asyncio.to_thread(client.get_flight_info, descriptor, _options(keys.query_acme))
        assert cap.in_flight("acme") == 1
        problem = await refusal(port, keys.query_acme, index)
        assert problem["detail"] == ("tenant 'acme' already has 1 requests running, its cap on concurrent requests; "
                                     "retry once one of them ends")
        with pytest.raises(flight.FlightUnavailableError, match="its cap on concurrent requests"):
            await asyncio.to_thread(client.get_flight_info, descriptor, _options(keys.query_acme))
        assert rejections(app, "concurrency", "acme") == 2.0
        # Fairness: others are served meanwhile.
        assert await count(port, keys.admin, index) == ROWS
        assert await count(port, GLOBEX, index) == 0

        # Streamed to its end, the ticket's query frees the slot; the DoGet took no token and no second slot.
        reader = await asyncio.to_thread(client.do_get, info.endpoints[0].ticket, _options(keys.query_acme))
        assert (await asyncio.to_thread(reader.read_all)).to_pylist() == [{"n": ROWS}]
        await until(lambda: cap.in_flight("acme") == 0)
        assert await count(port, keys.query_acme, index) == ROWS

        # A query that fails (here at its prepare, then at its GetFlightInfo) frees the slot it held.
        with pytest.raises(adbc_driver_manager.Error, match="syntax"):
            await count(port, keys.query_acme, f'{index}" WHERE')
        with pytest.raises(pa.ArrowInvalid, match="there is no index 'no-such-index'"):
            await asyncio.to_thread(client.get_flight_info, flight.FlightDescriptor.for_command(_pack(
                sql.CommandStatementQuery(query='SELECT count(*) FROM "no-such-index"'))), _options(keys.query_acme))
        await until(lambda: cap.in_flight("acme") == 0)
        assert await count(port, keys.query_acme, index) == ROWS

        # Cancelled, a ticket frees its slot too, and cancelling is never refused by the cap it frees.
        info = await asyncio.to_thread(client.get_flight_info, descriptor, _options(keys.query_acme))
        assert cap.in_flight("acme") == 1
        cancel = flight.Action("CancelQuery", _pack(sql.ActionCancelQueryRequest(info=info.serialize())))
        results = await asyncio.to_thread(lambda: list(client.do_action(cancel, _options(keys.query_acme))))
        status = sql.ActionCancelQueryResult()
        assert any_pb2.Any.FromString(results[0].body.to_pybytes()).Unpack(status)
        assert status.result == sql.ActionCancelQueryResult.CANCEL_RESULT_CANCELLED
        assert cap.in_flight("acme") == 0
        assert await count(port, keys.query_acme, index) == ROWS


async def until(condition, deadline_secs: float = 10.0) -> None:
    """A call's slot is freed as the server completes the call, which its client may see end a moment before."""
    deadline = time.monotonic() + deadline_secs
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        await asyncio.sleep(0.01)
