"""The one Alembic history: a single head, and upgrade to head then downgrade to base on real PostgreSQL."""

from __future__ import annotations

import asyncio

from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import create_async_engine

from strata_shared.metastore import (
    compaction_models,  # noqa: F401 - registers the compaction tables
    indexing_models,  # noqa: F401 - registers the indexing tables
    migrate,
)
from strata_shared.metastore.models import Base


def test_history_has_a_single_head():
    assert len(migrate.heads()) == 1


async def _tables(url: str) -> set[str]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return set(await connection.run_sync(lambda c: inspect(c).get_table_names()))
    finally:
        await engine.dispose()


async def _model_drift(url: str) -> list:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(
                lambda c: compare_metadata(MigrationContext.configure(c, opts={"compare_type": True}), Base.metadata))
    finally:
        await engine.dispose()


def test_upgrade_to_head_then_downgrade_to_base(pg_databases):
    url = pg_databases.create("strata_migrations")
    migrate.upgrade(url)
    assert {"indexes", "splits", "split_column_stats", "compaction_jobs", "compaction_job_inputs",
            "compaction_windows", "alembic_version"} <= asyncio.run(_tables(url))
    # The models and the migrations describe the same schema.
    assert asyncio.run(_model_drift(url)) == []
    migrate.downgrade(url, "base")
    assert asyncio.run(_tables(url)) == {"alembic_version"}
    migrate.upgrade(url)
    assert "splits" in asyncio.run(_tables(url))
