"""Alembic environment: async engine from the URL the caller set (see strata_metastore.migrate)."""

import asyncio

from alembic import context
from sqlalchemy import pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from strata_metastore import (  # noqa: F401 - registers the tables
    background_pass_models,
    commit_log_models,
    compaction_models,
    indexing_models,
    maintenance_models,
    query_registry_models,
)
from strata_metastore.models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run_online() -> None:
    url = context.config.get_main_option("sqlalchemy.url")
    engine = create_async_engine(url, poolclass=pool.NullPool)
    async with engine.connect() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


def _run_in_fresh_loop() -> None:
    # Callers may already be inside an event loop (tests, the app lifespan): run ours on a thread then.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_run_online())
        return
    import threading

    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(_run_online())
        except BaseException as exc:  # noqa: BLE001 - re-raised below on the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported: run against a database")
_run_in_fresh_loop()
