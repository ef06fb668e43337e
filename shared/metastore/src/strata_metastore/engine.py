"""Async engine and session factory. One session per unit of work, committed by its owner."""

from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.util import await_only

from strata_core.errors import Unavailable
from strata_core.storage import ObjectStore
from strata_metastore.commit_log import install_capture_tracking, session_class_kwargs


class DatabaseUnavailable(Unavailable):
    """503: PostgreSQL could not be reached (refused, unknown host, starting up, out of connections, bad
    credentials): the request was fine, the dependency was not."""

    slug, title = "database-unavailable", "PostgreSQL unavailable"


def database_unavailable(where: str, exc: BaseException, what: str = "is unavailable") -> DatabaseUnavailable:
    """The 503 naming the server (`where`, password hidden) and the driver's own words, in one line."""
    return DatabaseUnavailable(f"PostgreSQL at {where} {what}: {type(exc).__name__}: {str(exc).strip()[:300]}")


# SQLSTATE classes of a connection PostgreSQL ended or never kept: 08 (connection exception, e.g. asyncpg's
# "connection was closed in the middle of operation") and 57P (the server shutting down, a database dropped WITH
# FORCE, a backend terminated). SQLAlchemy marks only some of these `connection_invalidated`.
_CONNECTION_LOST = ("08", "57P")


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` (or what caused it) is the connection to PostgreSQL ending under a statement: the request may
    be retried once the database is back, so it is a 503, not a defect."""
    seen: BaseException | None = exc
    for _ in range(8):  # the driver's error, SQLAlchemy's wrapping of it, and their causes
        if seen is None:
            break
        code = getattr(seen, "sqlstate", None) or getattr(seen, "pgcode", None)
        if isinstance(code, str) and code.startswith(_CONNECTION_LOST):
            return True
        seen = getattr(seen, "orig", None) or seen.__cause__
    return False


def create_engine(database_url: str, pool_size: int = 10) -> AsyncEngine:
    """The engine of a unit of work: its connections pinged before each checkout, so one PostgreSQL dropped is
    replaced unseen. (query-api's single statements on a hot read path use its `strata_metastore.single_reads`
    instead.)"""
    engine = create_async_engine(database_url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)
    where = make_url(database_url).render_as_string(hide_password=True)

    # Connecting is where an unreachable server shows, as whatever the driver raises (a bare OSError for a
    # refused connection); name it once here, so every caller sees one typed error instead of a 500.
    @event.listens_for(engine.sync_engine, "do_connect")
    def _connect(dialect, _record, cargs, cparams):
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception as exc:  # noqa: BLE001 - any failure to connect is the database being unavailable
            raise database_unavailable(where, exc) from exc

    _ping_in_one_round_trip(engine)
    install_capture_tracking(engine.sync_engine)
    return engine


def _ping_in_one_round_trip(engine: AsyncEngine) -> None:
    """The pre-ping of a checkout as one round trip (`;`). The asyncpg dialect's own wraps it in BEGIN and ROLLBACK
    when no transaction is open (for pgbouncer's transaction mode, which Strata is not deployed behind): three
    round trips before every unit of work, a tenth of an ingest request's statements (docs/benchmarks.md,
    "Ingestion: CPU per 200-row request"). A dropped connection fails it the same way, so it is replaced unseen."""
    dialect = engine.sync_engine.dialect
    dialect_ping = dialect.do_ping

    def do_ping(dbapi_connection) -> bool:
        driver = getattr(dbapi_connection, "_connection", None)  # the asyncpg connection SQLAlchemy adapts
        if driver is None or getattr(dbapi_connection, "_transaction", None) is not None:
            return dialect_ping(dbapi_connection)
        try:
            await_only(driver.fetchrow(";"))
        except Exception as error:  # noqa: BLE001 - the dialect turns it into its DBAPI error, as its own ping does
            dbapi_connection._handle_exception(error)
        return True

    dialect.do_ping = do_ping


def session_factory(engine: AsyncEngine, storage: ObjectStore | None = None) -> async_sessionmaker[AsyncSession]:
    """Sessions whose commits write the commit log (`commit_log`): to `storage` as they commit, or, without one,
    to PostgreSQL only, for the ship pass to write to the bucket."""
    # expire_on_commit=False: responses are built after commit without reloading rows.
    return async_sessionmaker(engine, expire_on_commit=False, **session_class_kwargs(storage))
