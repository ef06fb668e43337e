"""Async engine and session factory. One session per unit of work, committed by its owner."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from strata_shared.errors import Unavailable

T = TypeVar("T")


class DatabaseUnavailable(Unavailable):
    """503: PostgreSQL could not be reached (refused, unknown host, starting up, out of connections, bad
    credentials): the request was fine, the dependency was not."""

    slug, title = "database-unavailable", "PostgreSQL unavailable"


def create_engine(database_url: str, pool_size: int = 10, *, single_reads: str | None = None) -> AsyncEngine:
    """The engine of a unit of work: its connections pinged before each checkout, so one PostgreSQL dropped is
    replaced unseen.

    `single_reads` (its connections' application_name) makes an engine for single statements on a hot read path
    instead: autocommit, so a statement is one round trip, and no ping, which for asyncpg is three more (BEGIN, an
    empty statement, ROLLBACK), each a wait on a loaded machine. A dropped connection then fails its statement:
    run them through `read_retrying`."""
    options: dict[str, Any] = ({"pool_pre_ping": True} if single_reads is None else
                               {"isolation_level": "AUTOCOMMIT",
                                "connect_args": {"server_settings": {"application_name": single_reads}}})
    engine = create_async_engine(database_url, pool_size=pool_size, max_overflow=pool_size, **options)
    where = make_url(database_url).render_as_string(hide_password=True)

    # Connecting is where an unreachable server shows, as whatever the driver raises (a bare OSError for a
    # refused connection); name it once here, so every caller sees one typed error instead of a 500.
    @event.listens_for(engine.sync_engine, "do_connect")
    def _connect(dialect, _record, cargs, cparams):
        try:
            return dialect.connect(*cargs, **cparams)
        except Exception as exc:  # noqa: BLE001 - any failure to connect is the database being unavailable
            raise DatabaseUnavailable(f"PostgreSQL at {where} is unavailable: "
                                      f"{type(exc).__name__}: {str(exc).strip()[:300]}") from exc

    return engine


async def read_retrying(engine: AsyncEngine, read: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    """`read` on a connection of a `single_reads` engine, run again once on a new connection when the first turns
    out dropped (PostgreSQL restarted, or the connection was terminated): reads only, so running twice is safe."""
    try:
        async with engine.connect() as connection:
            return await read(connection)
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
    async with engine.connect() as connection:
        return await read(connection)


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    # expire_on_commit=False: responses are built after commit without reloading rows.
    return async_sessionmaker(engine, expire_on_commit=False)
