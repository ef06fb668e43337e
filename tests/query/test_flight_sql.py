"""query-api's Arrow Flight SQL door, driven by clients no one here wrote: the ADBC Flight SQL driver (DB-API,
`fetch_arrow_table`, `adbc_get_objects`, prepared statements), pandas and Polars reading through it, and
pyarrow's own Flight client where a test needs the wire (the truncation marker, CancelFlightInfo). Every answer
is compared with the HTTP API's for the same SQL and key, on both engines.

ADBC's calls block: they run in a thread, so the app's event loop (this test session's) keeps serving them."""

from __future__ import annotations

import asyncio
import io
import json
import time

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import polars as pl
import pyarrow as pa
import pyarrow.flight as flight
import pyarrow.ipc as ipc
import pytest
from google.protobuf import any_pb2

from strata_query.dependencies import query_service_of
from strata_query.flight.proto import FlightSql_pb2 as sql
from strata_services.demo import TABLE, demo_batches, demo_index_config, demo_queries
from tests.helpers import ARROW, arrow_stream, delete_index, unique_index_id

HEADER = "adbc.flight.sql.rpc.call_header."


@pytest.fixture(scope="module")
async def dataset(indexer, keys):
    """Two indexes: one holding acme's rows (the demo's data, in two windows), one holding only the default
    partition's."""
    now = int(time.time())
    mine, theirs = unique_index_id("flight"), unique_index_id("flight-other")
    for index_id, writer in ((mine, keys.writer_acme), (theirs, keys.writer)):
        config = {**demo_index_config(now), "index_id": index_id}
        response = await indexer.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
        assert response.status_code == 201, response.text
        for table in demo_batches(now, windows=2, rows_per_window=1500, batches=2):
            response = await indexer.post(f"/v1/indexes/{index_id}/ingest", content=arrow_stream(table),
                                          headers={**keys.header(writer), "Content-Type": ARROW})
            assert response.status_code == 200, response.text
    queries = [(name, text.replace(TABLE, f'"{mine}"')) for name, text in demo_queries(now)]
    yield mine, theirs, queries
    for index_id in (mine, theirs):
        await delete_index(indexer, keys, index_id)


@pytest.fixture(scope="module")
def port(query) -> int:
    return query.app.state.flight.port


def _connect(port: int, key: str, **options: str):
    return flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True,
                              db_kwargs={adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value:
                                         f"Bearer {key}", **options})


def _fetch(port: int, key: str, text: str, engine: str | None = None, **headers: str) -> pa.Table:
    options = {HEADER + name.replace("_", "-"): value for name, value in headers.items()}
    if engine is not None:
        options[HEADER + "x-strata-engine"] = engine
    with _connect(port, key, **options) as connection, connection.cursor() as cursor:
        cursor.execute(text)
        return cursor.fetch_arrow_table()


async def _http(query, key: str, text: str, engine: str | None = None, **body) -> pa.Table:
    response = await query.post("/v1/query", json={"sql": text, "engine": engine, **body},
                                headers={"Authorization": f"Bearer {key}", "Accept": ARROW})
    assert response.status_code == 200, response.text
    return ipc.open_stream(io.BytesIO(response.content)).read_all()


def _problem(error: Exception) -> dict:
    """The problem JSON a Flight status carries in its message, as ADBC reports it."""
    text = str(error)
    start = text.index('{"type"')
    return json.JSONDecoder().raw_decode(text[start:])[0]


@pytest.mark.parametrize("engine", ["local", "spark"])
async def test_demo_queries_answer_as_over_http(query, keys, dataset, port, engine):
    _, _, queries = dataset
    for name, text in queries:
        over_http = await _http(query, keys.query_acme, text, engine)
        over_flight = await asyncio.to_thread(_fetch, port, keys.query_acme, text, engine)
        assert over_flight.schema.names == over_http.schema.names, name
        assert over_flight.to_pylist() == over_http.to_pylist(), (engine, name)
        assert over_flight.num_rows > 0, name


async def test_catalog_lists_only_the_tenants_own_indexes(keys, dataset, port):
    mine, theirs, _ = dataset

    def listing(key: str) -> tuple[set[str], pa.Schema]:
        with _connect(port, key) as connection:
            objects = connection.adbc_get_objects(depth="tables").read_all().to_pylist()
            names = {table["table_name"] for catalog in objects for schema in catalog["catalog_db_schemas"] or []
                     for table in schema["db_schema_tables"] or []}
            return names, connection.adbc_get_table_schema(mine, catalog_filter="strata", db_schema_filter="indexes")

    names, schema = await asyncio.to_thread(listing, keys.query_acme)
    assert mine in names and theirs not in names
    assert {"timestamp_secs", "service", "host", "message", "value", "partition_id"} <= set(schema.names)
    assert schema.field("timestamp_secs").type == pa.int64()
    admin_names, _ = await asyncio.to_thread(listing, keys.admin)
    assert {mine, theirs} <= admin_names
    # Named as the listing places it (what a workbench writes), the index reads the same.
    qualified = await asyncio.to_thread(_fetch, port, keys.query_acme,
                                        f'SELECT count(*) AS n FROM strata.indexes."{mine}"')
    assert qualified.to_pylist() == [{"n": 3000}]


async def test_another_tenants_index_answers_no_rows_as_over_http(query, keys, dataset, port):
    _, theirs, _ = dataset
    text = f'SELECT count(*) AS n FROM "{theirs}"'
    over_flight = await asyncio.to_thread(_fetch, port, keys.query_acme, text)
    assert over_flight.to_pylist() == (await _http(query, keys.query_acme, text)).to_pylist() == [{"n": 0}]
    # The admin (no tenant) sees the rows the tenant does not.
    assert (await asyncio.to_thread(_fetch, port, keys.admin, text)).to_pylist()[0]["n"] > 0


async def test_basic_auth_answers_a_bearer_token(keys, dataset, port):
    mine, _, _ = dataset

    def count() -> int:
        with flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True,
                                db_kwargs={"username": "anyone", "password": keys.query_acme}) as connection, \
                connection.cursor() as cursor:
            cursor.execute(f'SELECT count(*) AS n FROM "{mine}"')
            return cursor.fetchone()[0]

    assert await asyncio.to_thread(count) == 3000
    client = flight.connect(f"grpc://127.0.0.1:{port}")
    name, token = await asyncio.to_thread(client.authenticate_basic_token, "anyone", keys.query_acme)
    assert name == b"authorization" and token == f"Bearer {keys.query_acme}".encode()


async def test_an_unknown_key_is_unauthenticated_with_the_http_problem(keys, dataset, port):
    mine, _, _ = dataset
    with pytest.raises(adbc_driver_manager.Error) as caught:
        await asyncio.to_thread(_fetch, port, "not-a-key", f'SELECT count(*) FROM "{mine}"')
    assert caught.value.status_code == adbc_driver_manager.AdbcStatusCode.UNAUTHENTICATED
    assert _problem(caught.value)["type"] == "https://strata.dev/problems/unauthorized"
    with pytest.raises(adbc_driver_manager.Error) as caught:
        await asyncio.to_thread(_fetch, port, keys.writer, f'SELECT count(*) FROM "{mine}"')
    assert caught.value.status_code == adbc_driver_manager.AdbcStatusCode.UNAUTHORIZED
    assert _problem(caught.value)["detail"] == "this operation needs one of the scopes: query, admin"


async def test_bad_sql_carries_the_http_problem_type_and_position(query, keys, dataset, port):
    mine, _, _ = dataset
    text = f'SELECT count(* FROM "{mine}"'
    response = await query.post("/v1/query", json={"sql": text}, headers=keys.header(keys.query_acme))
    assert response.status_code == 400
    with pytest.raises(adbc_driver_manager.Error) as caught:
        await asyncio.to_thread(_fetch, port, keys.query_acme, text)
    assert caught.value.status_code == adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT
    problem = _problem(caught.value)
    http = response.json()
    assert (problem["type"], problem["detail"], problem["errors"]) == (http["type"], http["detail"], http["errors"])
    assert problem["errors"][0]["line"] == 1 and problem["errors"][0]["column"]


async def test_prepared_statements_answer_as_statements(query, keys, dataset, port):
    _, _, queries = dataset
    text = queries[1][1]

    def prepared() -> pa.Table:
        with _connect(port, keys.query_acme) as connection, connection.cursor() as cursor:
            cursor.adbc_prepare(text)
            cursor.execute(text)
            first = cursor.fetch_arrow_table()
            cursor.execute(text)
            assert cursor.fetch_arrow_table() == first
            return first

    assert (await asyncio.to_thread(prepared)).to_pylist() == (await _http(query, keys.query_acme, text)).to_pylist()
    with pytest.raises(adbc_driver_manager.Error) as caught:
        await asyncio.to_thread(_prepare_only, port, keys.query_acme, 'SELECT count(* FROM "no-such-index"')
    assert caught.value.status_code == adbc_driver_manager.AdbcStatusCode.INVALID_ARGUMENT
    assert _problem(caught.value)["errors"][0]["line"] == 1


def _prepare_only(port: int, key: str, text: str) -> None:
    with _connect(port, key) as connection, connection.cursor() as cursor:
        cursor.adbc_prepare(text)


async def test_a_result_cut_at_the_row_cap_says_so(query, keys, dataset, port):
    mine, _, _ = dataset
    text = f'SELECT host, value FROM "{mine}" ORDER BY host, timestamp_secs, value'
    cut = await asyncio.to_thread(_fetch, port, keys.query_acme, text, x_strata_max_rows="7")
    assert cut.to_pylist() == (await _http(query, keys.query_acme, text, max_rows=7)).to_pylist()
    assert cut.num_rows == 7

    def marker() -> list[bytes]:
        options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {keys.query_acme}".encode()),
                                                    (b"x-strata-max-rows", b"7")])
        client = flight.connect(f"grpc://127.0.0.1:{port}")
        info = client.get_flight_info(flight.FlightDescriptor.for_command(_pack(sql.CommandStatementQuery(
            query=text))), options)
        reader = client.do_get(info.endpoints[0].ticket, options)
        metadata = []
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                return metadata
            if chunk.app_metadata is not None:
                metadata.append(chunk.app_metadata.to_pybytes())

    assert [json.loads(m) for m in await asyncio.to_thread(marker)] == [{"strata_truncated": True, "row_cap": 7}]


async def test_cancelling_a_flight_info_ends_its_query(query, keys, dataset, port):
    mine, _, _ = dataset
    service = query_service_of(query.app)

    def issue_then_cancel() -> tuple[bytes, Exception]:
        options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {keys.query_acme}".encode()),
                                                    (b"cache-control", b"no-store")])
        client = flight.connect(f"grpc://127.0.0.1:{port}")
        info = client.get_flight_info(flight.FlightDescriptor.for_command(_pack(sql.CommandStatementQuery(
            query=f'SELECT * FROM "{mine}"'))), options)
        request = sql.ActionCancelQueryRequest(info=info.serialize())
        results = list(client.do_action(flight.Action("CancelQuery", _pack(request)), options))
        try:
            client.do_get(info.endpoints[0].ticket, options).read_all()
        except pa.ArrowKeyError as exc:
            return results[0].body.to_pybytes(), exc
        raise AssertionError("a cancelled ticket was still redeemed")

    body, redeemed = await asyncio.to_thread(issue_then_cancel)
    result = any_pb2.Any.FromString(body)
    status = sql.ActionCancelQueryResult()
    assert result.Unpack(status) and status.result == sql.ActionCancelQueryResult.CANCEL_RESULT_CANCELLED
    assert "NOT_FOUND" in str(redeemed) and "https://strata.dev/problems/not-found" in str(redeemed)
    assert not service.registry.has_running()


async def test_another_tenant_cannot_redeem_or_cancel_a_ticket(keys, dataset, port):
    mine, _, _ = dataset

    def attempt() -> Exception:
        client = flight.connect(f"grpc://127.0.0.1:{port}")
        acme = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {keys.query_acme}".encode())])
        admin = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {keys.admin}".encode())])
        info = client.get_flight_info(flight.FlightDescriptor.for_command(_pack(sql.CommandStatementQuery(
            query=f'SELECT count(*) FROM "{mine}"'))), acme)
        try:
            client.do_get(info.endpoints[0].ticket, admin).read_all()
        except pa.ArrowKeyError as exc:
            assert client.do_get(info.endpoints[0].ticket, acme).read_all().num_rows == 1
            return exc
        raise AssertionError("another caller redeemed the ticket")

    refused = await asyncio.to_thread(attempt)
    assert "not-found" in str(refused)


async def test_pandas_and_polars_read_through_the_driver(query, keys, dataset, port):
    _, _, queries = dataset
    text = queries[1][1]
    expected = (await _http(query, keys.query_acme, text)).to_pylist()

    def frames():
        with _connect(port, keys.query_acme) as connection:
            with connection.cursor() as cursor:
                cursor.execute(text)
                pandas_frame = cursor.fetch_df()
            polars_frame = pl.read_database(text, connection)
        return pandas_frame, polars_frame

    pandas_frame, polars_frame = await asyncio.to_thread(frames)
    assert pandas_frame.to_dict("records") == expected
    assert polars_frame.to_dicts() == expected


async def test_sql_info_names_the_server(keys, port):
    def info() -> dict:
        with _connect(port, keys.query_acme) as connection:
            return connection.adbc_get_info()

    got = await asyncio.to_thread(info)
    assert got["vendor_name"] == "Strata query-api"
    assert got["vendor_arrow_version"] == pa.__version__


def _pack(message) -> bytes:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed.SerializeToString()


async def test_a_call_its_client_gives_up_on_interrupts_the_query(settings, keys, dataset):
    """A client's deadline (or ADBC's cancel) ends the gRPC call: the server cancels the QueryService call, which
    interrupts the engine as an HTTP DELETE does, well before the injected 30 s scan delay."""
    from asgi_lifespan import LifespanManager

    from strata_query.app import create_app

    mine, _, _ = dataset
    app = create_app(settings.model_copy(update={"fault_query_scan_delay_secs": 30.0}))
    async with LifespanManager(app):
        running_queries = query_service_of(app).registry.running_queries
        port = app.state.flight.port

        def call() -> Exception:
            options = flight.FlightCallOptions(timeout=2.0, headers=[
                (b"authorization", f"Bearer {keys.query_acme}".encode()), (b"cache-control", b"no-store")])
            client = flight.connect(f"grpc://127.0.0.1:{port}")
            try:
                client.get_flight_info(flight.FlightDescriptor.for_command(_pack(sql.CommandStatementQuery(
                    query=f'SELECT count(*) FROM "{mine}"'))), options)
            except flight.FlightTimedOutError as exc:
                return exc
            raise AssertionError("the call outlived its deadline")

        started = time.monotonic()
        await asyncio.to_thread(call)
        while running_queries and time.monotonic() - started < 20:
            await asyncio.sleep(0.1)
        assert running_queries == {}
        assert time.monotonic() - started < 20
