"""The Flight SQL server in query-api's process: translation only, between FlightSql.proto's messages and
QueryService's calls (the HTTP router's counterpart). Statements and prepared statements run through
`QueryService.run` (planning, admission, tenancy, engine, row cap, result cache); the catalog listings come from
`QueryService.tables`; errors are the HTTP API's problems (`status.py`). Each call is charged to the caller's
per-tenant limits, the proxy's (`limits.py`), before it does any work.

gRPC calls arrive on the server's own threads; each hands its QueryService coroutine to the app's event loop and
waits for it, watching for the client to cancel the call (then the coroutine is cancelled, which interrupts the
engine as an HTTP client's cancel does)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.flight as flight
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message

from strata_core.api_keys import ApiKeyRegistry
from strata_core.errors import BadRequest, NotFound, StrataError, Unavailable
from strata_core.principal import Principal
from strata_frame.web.problems import database_problem, problem_of
from strata_query.cache_directives import ResultCacheDirectives
from strata_query.calls import QueryCall, QueryCancelled
from strata_query.execution.result_stream import ResultStream
from strata_query.flight import catalog
from strata_query.flight.auth import MIDDLEWARE_KEY, Authenticated, HeaderHandshake, KeyAuthFactory
from strata_query.flight.issued import IssuedResults
from strata_query.flight.limits import Charge, FlightLimits
from strata_query.flight.proto import FlightSql_pb2 as sql
from strata_query.flight.sql_info import SCHEMA as SQL_INFO_SCHEMA
from strata_query.flight.sql_info import sql_info_table
from strata_query.flight.status import flight_error
from strata_query.query_run import QueryRun
from strata_query.service import QueryService

log = logging.getLogger("strata.query.flight")
T = TypeVar("T")
# What HTTP's 500 says: nothing of the defect, whose traceback is in the log.
_INTERNAL = problem_of(StrataError("unexpected server error"))
# How often a call waiting on the event loop checks whether its client cancelled it.
CANCEL_CHECK_SECS = 0.05
# A FlightInfo's ticket is redeemed within this, else its result is given up.
PICKUP_SECS = 60.0
# A prepared statement's handle is its SQL behind this prefix: nothing to keep, valid on every replica.
PREPARED_PREFIX = b"strata-sql:"
ACTIONS = {
    "CreatePreparedStatement": "a prepared statement from SQL (refused if it does not parse)",
    "ClosePreparedStatement": "releases a prepared statement (nothing is kept for one)",
    "CancelFlightInfo": "cancels the query behind a FlightInfo",
    "CancelQuery": "cancels the query behind a FlightInfo (Flight SQL's older action)",
}
# Metadata commands: answered at DoGet from the command itself, which is their ticket.
_METADATA_SCHEMAS: dict[type[Message], pa.Schema] = {
    sql.CommandGetSqlInfo: SQL_INFO_SCHEMA,
    sql.CommandGetCatalogs: catalog.CATALOGS_SCHEMA,
    sql.CommandGetDbSchemas: catalog.DB_SCHEMAS_SCHEMA,
    sql.CommandGetTables: catalog.TABLES_SCHEMA,
    sql.CommandGetTableTypes: catalog.TABLE_TYPES_SCHEMA,
}
_COMMANDS: tuple[type[Message], ...] = (sql.CommandStatementQuery, sql.CommandPreparedStatementQuery,
                                        sql.TicketStatementQuery, *_METADATA_SCHEMAS)


def _flight_errors(handler: Callable[..., T]) -> Callable[..., T]:
    """A handler's problem leaves as the Flight status of its HTTP status (`status.py`); anything else as INTERNAL
    with no detail (the log has the traceback), as HTTP's 500 does. Raised from here, one frame deep: pyarrow
    appends the raising frames to an INVALID_ARGUMENT's or NOT_FOUND's message."""

    @functools.wraps(handler)
    def handle(*args: Any, **kwargs: Any) -> T:
        try:
            return handler(*args, **kwargs)
        except (flight.FlightError, pa.ArrowException):
            raise
        except StrataError as exc:
            error = flight_error(problem_of(exc))
        except Exception as exc:
            error = _unexpected(exc, "a Flight SQL call")
        raise error from None

    return handle


class Unsupported(BadRequest):
    status, slug, title = 400, "flight-sql-unsupported", "Not supported by Strata's Flight SQL server"


class FlightSqlServer(flight.FlightServerBase):
    def __init__(self, location: str, service: QueryService, api_keys: ApiKeyRegistry,
                 loop: asyncio.AbstractEventLoop, limits: FlightLimits) -> None:
        super().__init__(location, auth_handler=HeaderHandshake(),
                         middleware={MIDDLEWARE_KEY: KeyAuthFactory(api_keys)})
        self.service: QueryService | None = service
        self.loop: asyncio.AbstractEventLoop | None = loop
        self.issued = IssuedResults(PICKUP_SECS)
        self.limits = limits

    def detach(self) -> None:
        """Once shut down: lets go of the QueryService and the event loop (see `lifecycle.stop_flight_server`)."""
        self.service = None
        self.loop = None

    @property
    def _service(self) -> QueryService:
        if self.service is None:
            raise Unavailable("query-api is shutting down")
        return self.service

    def _admit(self, context: flight.ServerCallContext, charge: Charge) -> Authenticated:
        caller = _caller(context)
        # A ticket abandoned past its pickup time still holds its tenant's slot until given up.
        self.issued.give_up_expired()
        self.limits.admit(caller, charge)
        return caller

    # --- FlightService -----------------------------------------------------------------------------------

    @_flight_errors
    def get_flight_info(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor
                        ) -> flight.FlightInfo:
        command = _unpack(descriptor.command)
        if isinstance(command, sql.CommandGetTables) and command.include_schema:
            schema = catalog.TABLES_WITH_SCHEMA_SCHEMA
        elif type(command) in _METADATA_SCHEMAS:
            schema = _METADATA_SCHEMAS[type(command)]
        else:
            return self._run(context, descriptor, _statement_sql(command))
        return flight.FlightInfo(schema, descriptor, [flight.FlightEndpoint(descriptor.command, [])], -1, -1)

    @_flight_errors
    def get_schema(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor
                   ) -> flight.SchemaResult:
        command = _unpack(descriptor.command)
        if type(command) not in _METADATA_SCHEMAS:
            raise Unsupported("a statement's schema is known once it runs: call GetFlightInfo")
        if isinstance(command, sql.CommandGetTables) and command.include_schema:
            return flight.SchemaResult(catalog.TABLES_WITH_SCHEMA_SCHEMA)
        return flight.SchemaResult(_METADATA_SCHEMAS[type(command)])

    @_flight_errors
    def do_get(self, context: flight.ServerCallContext, ticket: flight.Ticket) -> flight.FlightDataStream:
        caller = _caller(context)
        principal = caller.principal
        command = _unpack(ticket.ticket)
        if isinstance(command, sql.TicketStatementQuery):
            handle = command.statement_handle
            issued = self.issued.take(handle, principal.tenant)
            # The query was charged when its GetFlightInfo ran it; its slot now ends with this stream.
            caller.hold(issued.slot)
            if issued.run.result.complete:
                return self._whole(handle, issued.run)
            return flight.GeneratorStream(issued.run.result.schema, self._stream(handle, issued.run))
        if isinstance(command, sql.CommandGetTables):
            # The only listing that reads anything (the metastore); the others are answered from memory.
            self._admit(context, Charge.REQUEST)
        return flight.RecordBatchStream(self._metadata(context, principal, command))

    @_flight_errors
    def do_action(self, context: flight.ServerCallContext, action: flight.Action) -> Iterator[bytes]:
        caller = _caller(context)
        body = action.body.to_pybytes() if action.body is not None else b""
        if action.type == "CreatePreparedStatement":
            request = _unpack_as(body, sql.ActionCreatePreparedStatementRequest)
            self._admit(context, Charge.SLOT)
            # SQL that does not parse is refused here; the rest (the index, the columns) when it runs, planned
            # once: ADBC prepares every statement it executes, so a plan here would double a fresh query's.
            self._service.check(request.query)
            result = sql.ActionCreatePreparedStatementResult(
                prepared_statement_handle=PREPARED_PREFIX + request.query.encode())
            return iter([_pack(result)])
        if action.type == "ClosePreparedStatement":
            return iter([])
        if action.type in ("CancelFlightInfo", "CancelQuery"):
            # Flight's CancelFlightInfoRequest {FlightInfo info = 1} and Flight SQL's ActionCancelQueryRequest
            # {bytes info = 1} are the same bytes on the wire, as are their results' status enums.
            request = (_unpack_as(body, sql.ActionCancelQueryRequest) if action.type == "CancelQuery"
                       else _parse(body, sql.ActionCancelQueryRequest))
            status = sql.ActionCancelQueryResult(result=self._cancel(context, caller.principal, request.info))
            return iter([_pack(status) if action.type == "CancelQuery" else status.SerializeToString()])
        raise Unsupported(f"no action {action.type!r}: this server offers " + ", ".join(ACTIONS))

    def list_actions(self, context: flight.ServerCallContext) -> list[tuple[str, str]]:
        return list(ACTIONS.items())

    @_flight_errors
    def do_put(self, context, descriptor, reader, writer) -> None:
        raise Unsupported("Strata is read-only and its prepared statements take no parameters")

    # --- translation -------------------------------------------------------------------------------------

    def _call(self, caller: Authenticated, sql_text: str) -> QueryCall:
        headers = caller.headers
        return QueryCall(tenant=caller.principal.tenant, sql=sql_text, engine=headers.engine,
                         max_rows=headers.max_rows,
                         result_cache=ResultCacheDirectives.from_cache_control(headers.cache_control))

    def _run(self, context: flight.ServerCallContext, descriptor: flight.FlightDescriptor, sql_text: str
             ) -> flight.FlightInfo:
        """Runs the statement until its first batch (as HTTP's POST /v1/query does) and issues its ticket, which
        holds the call's slot until its result is streamed or given up."""
        caller = self._admit(context, Charge.REQUEST)
        run = self._await(context, self._service.run(self._call(caller, sql_text)))
        handle = self.issued.issue(run, caller.principal.tenant, caller.hand_over())
        ticket = flight.Ticket(_pack(sql.TicketStatementQuery(statement_handle=handle)))
        return flight.FlightInfo(run.result.schema, descriptor, [flight.FlightEndpoint(ticket, [])], -1, -1,
                                 app_metadata=json.dumps({"query_id": run.query_id, "engine": run.engine.name,
                                                          "result_cache": run.result_cache}).encode())

    def _whole(self, handle: bytes, run: QueryRun) -> flight.FlightDataStream:
        """A small finished result (in memory, at most INLINE_ROWS rows): handed to gRPC whole, streamed from C++
        with no Python per batch, as HTTP sends such a result whole."""
        try:
            with run.serving() as result:
                batches = list(result)
        finally:
            self.issued.finished(handle)
        if result.truncated:
            return flight.GeneratorStream(result.schema, iter([*batches, _truncation_marker(result)]))
        return flight.RecordBatchStream(pa.Table.from_batches(batches, result.schema))

    def _stream(self, handle: bytes, run: QueryRun) -> Iterator[pa.RecordBatch | tuple[pa.RecordBatch, pa.Buffer]]:
        """The result's batches; a result cut at the row cap ends with an empty batch whose app_metadata is
        NDJSON's marker, `{"strata_truncated": true, "row_cap": N}`."""
        try:
            with run.serving() as result:
                yield from result
                if result.truncated:
                    yield _truncation_marker(result)
        except StrataError as exc:
            error = flight_error(problem_of(exc))
        except Exception as exc:
            error = _unexpected(exc, "a Flight SQL stream")
        else:
            return
        finally:
            self.issued.finished(handle)
        raise error from None

    def _metadata(self, context: flight.ServerCallContext, principal: Principal, command: Message) -> pa.Table:
        if isinstance(command, sql.CommandGetSqlInfo):
            return sql_info_table(command.info)
        if isinstance(command, sql.CommandGetCatalogs):
            return catalog.catalogs_table()
        if isinstance(command, sql.CommandGetDbSchemas):
            return catalog.db_schemas_table(_optional(command, "catalog"),
                                            _optional(command, "db_schema_filter_pattern"))
        if isinstance(command, sql.CommandGetTables):
            tables = self._await(context, self._service.tables(principal.tenant))
            return catalog.tables_table([(t.index_id, t.schema) for t in tables],
                                        catalog=_optional(command, "catalog"),
                                        schema_pattern=_optional(command, "db_schema_filter_pattern"),
                                        table_pattern=_optional(command, "table_name_filter_pattern"),
                                        table_types=list(command.table_types), include_schema=command.include_schema)
        if isinstance(command, sql.CommandGetTableTypes):
            return catalog.table_types_table()
        raise Unsupported(f"a ticket of {type(command).__name__} is not one this server issues")

    def _cancel(self, context: flight.ServerCallContext, principal: Principal, info_bytes: bytes) -> int:
        try:
            info = flight.FlightInfo.deserialize(info_bytes)
            ticket = _unpack(info.endpoints[0].ticket.ticket)
        except (pa.ArrowException, IndexError, StrataError):
            raise BadRequest("the cancel request does not carry a FlightInfo this server issued") from None
        if not isinstance(ticket, sql.TicketStatementQuery):
            return sql.ActionCancelQueryResult.CANCEL_RESULT_NOT_CANCELLABLE
        handle = ticket.statement_handle
        issued = self.issued.find(handle, principal.tenant)
        if issued is None:
            raise NotFound("no query of this FlightInfo is waiting or streaming on this replica")
        if self.issued.give_up(handle):
            return sql.ActionCancelQueryResult.CANCEL_RESULT_CANCELLED
        try:
            self._await(context, self._service.cancel(issued.run.query_id, principal.tenant))
        except NotFound:
            # Answered from the result cache, or already finished: nothing runs to interrupt.
            return sql.ActionCancelQueryResult.CANCEL_RESULT_NOT_CANCELLABLE
        return sql.ActionCancelQueryResult.CANCEL_RESULT_CANCELLING

    def _await(self, context: flight.ServerCallContext, work: Coroutine[Any, Any, T]) -> T:
        """Runs `work` on the app's event loop and waits for it; a call its client cancels cancels it."""
        if self.loop is None:
            work.close()
            raise Unavailable("query-api is shutting down")
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        while True:
            try:
                return future.result(timeout=CANCEL_CHECK_SECS)
            except concurrent.futures.TimeoutError:
                if context.is_cancelled():
                    future.cancel()
                    raise QueryCancelled("the client cancelled the call") from None
            except concurrent.futures.CancelledError:
                raise QueryCancelled("the query was cancelled") from None


def _truncation_marker(result: ResultStream) -> tuple[pa.RecordBatch, pa.Buffer]:
    """The last message of a result cut at the row cap: an empty batch whose app_metadata is NDJSON's marker."""
    marker = json.dumps({"strata_truncated": True, "row_cap": result.row_cap}).encode()
    return pa.RecordBatch.from_pylist([], schema=result.schema), pa.py_buffer(marker)


def _unexpected(exc: Exception, where: str) -> Exception:
    """A failing dependency's 503 (PostgreSQL lost or exhausted), else INTERNAL with no detail and the traceback
    in the log, as HTTP answers them."""
    if (problem := database_problem(exc)) is not None:
        return flight_error(problem_of(problem))
    log.error("unhandled error in %s", where, exc_info=exc)
    return flight_error(_INTERNAL)


def _caller(context: flight.ServerCallContext) -> Authenticated:
    return context.get_middleware(MIDDLEWARE_KEY)


def _unpack(data: bytes) -> Message:
    """The Flight SQL command packed (as google.protobuf.Any) in a descriptor or ticket."""
    packed = _parse(data, any_pb2.Any)
    for kind in _COMMANDS:
        if packed.Is(kind.DESCRIPTOR):
            command = kind()
            packed.Unpack(command)
            return command
    raise Unsupported(f"not a Flight SQL command this server answers: {packed.type_url or 'no type'!r}")


def _unpack_as(data: bytes, kind: type[Message]) -> Message:
    packed = _parse(data, any_pb2.Any)
    if not packed.Is(kind.DESCRIPTOR):
        raise BadRequest(f"expected a {kind.DESCRIPTOR.full_name}, got {packed.type_url or 'no type'!r}")
    message = kind()
    packed.Unpack(message)
    return message


def _parse(data: bytes, kind: type[Message]) -> Message:
    message = kind()
    try:
        message.ParseFromString(data)
    except DecodeError:
        raise BadRequest(f"the body is not a {kind.DESCRIPTOR.full_name}") from None
    return message


def _pack(message: Message) -> bytes:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed.SerializeToString()


def _optional(message: Message, field: str) -> str | None:
    return getattr(message, field) if message.HasField(field) else None


def _statement_sql(command: Message) -> str:
    if isinstance(command, sql.CommandStatementQuery):
        return command.query
    if isinstance(command, sql.CommandPreparedStatementQuery):
        handle = command.prepared_statement_handle
        if not handle.startswith(PREPARED_PREFIX):
            raise BadRequest("not a prepared statement handle this server issued")
        return handle[len(PREPARED_PREFIX):].decode()
    raise Unsupported(f"GetFlightInfo does not answer {type(command).__name__}")
