"""The one Alembic history: a single head, and upgrade to head then downgrade to base on real PostgreSQL."""

from __future__ import annotations

import asyncio

from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from strata_metastore import (
    background_pass_models,  # noqa: F401 - registers the background pass leases
    compaction_models,  # noqa: F401 - registers the compaction tables
    delete_models,  # noqa: F401 - registers the deletes
    indexing_models,  # noqa: F401 - registers the indexing tables
    maintenance_models,  # noqa: F401 - registers the maintenance skips
    migrate,
    query_registry_models,  # noqa: F401 - registers the query registry
)
from strata_metastore.models import Base


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


# Migration 0008 replaced the row-level triggers keeping `published_totals` and `plan_generations` by
# statement-level ones; the counters stay exact across the upgrade and the downgrade.
ROW_TRIGGERS = {("artifact_snapshots_bump_plan_generation", "artifact_snapshots", True),
                ("splits_bump_plan_generation", "splits", True), ("splits_count_published", "splits", True)}
STATEMENT_TRIGGERS = {(f"{name}_{event}", table, False) for name, table, _ in ROW_TRIGGERS
                      for event in ("insert", "update", "delete")}
TRIGGERS = ("SELECT tgname, tgrelid::regclass::text, (tgtype & 1) = 1 FROM pg_trigger WHERE NOT tgisinternal")
# What a downgrade must restore exactly: the triggers' definitions and their functions' code.
DEFINITIONS = ("SELECT pg_get_triggerdef(t.oid), p.proname, p.prosrc FROM pg_trigger t JOIN pg_proc p "
               "ON p.oid = t.tgfoid WHERE NOT t.tgisinternal ORDER BY 1")
RECOUNT = ("SELECT index_uid, partition_id, count(*), sum(size_bytes) FROM splits WHERE state = 'published' "
           "GROUP BY 1, 2 ORDER BY 1, 2")
TOTALS = "SELECT index_uid, partition_id, files, bytes FROM published_totals WHERE files > 0 ORDER BY 1, 2"


async def _run(url: str, *statements: str) -> list[tuple]:
    """Runs the statements in one transaction; the rows of the last. Test rows, not commitments: the commit log
    (migration 0017, where it is applied) does not capture them."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("SET LOCAL strata.capture = 'off'"))
            for statement in statements:
                result = await connection.execute(text(statement))
            return [tuple(row) for row in result.all()] if result.returns_rows else []
    finally:
        await engine.dispose()


def _publish_some(url: str, prefix: str) -> None:
    # Many rows per statement, in both partitions: inserted (a third published), published, one in four deleted.
    asyncio.run(_run(
        url,
        "INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema, "
        "window_start, window_duration_secs, num_rows, size_bytes, uri, row_groups, num_merge_ops, generation, "
        f"root_split_ids, parent_split_ids, state) SELECT '{prefix}' || i, 'a:1', 'src', 'p' || i % 2, 'd', '', 0, "
        f"60, 1, i, 'file:///{prefix}' || i, '[]', 0, 0, '{{}}', '{{}}', CAST(CASE WHEN i % 3 = 0 THEN 'published' "
        "ELSE 'staged' END AS split_state) FROM generate_series(1, 300) AS i",
        f"UPDATE splits SET state = 'published' WHERE split_id LIKE '{prefix}%' AND size_bytes % 3 = 1",
        f"DELETE FROM splits WHERE split_id LIKE '{prefix}%' AND size_bytes % 4 = 0"))


def test_0008_counts_per_statement_and_downgrades_to_the_row_triggers(pg_databases):
    url = pg_databases.create("strata_migrations")
    migrate.upgrade(url, "2026_11_25_0007")
    assert set(asyncio.run(_run(url, TRIGGERS))) == ROW_TRIGGERS
    row_level = asyncio.run(_run(url, DEFINITIONS))
    asyncio.run(_run(url, "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, "
                          "version) VALUES ('a:1', 'a', 'x', '{}', 'd', 1)"))
    _publish_some(url, "r")
    migrate.upgrade(url, "2026_11_25_0008")
    assert set(asyncio.run(_run(url, TRIGGERS))) == STATEMENT_TRIGGERS
    generation = asyncio.run(_run(url, "SELECT generation FROM plan_generations"))
    _publish_some(url, "s")
    assert asyncio.run(_run(url, TOTALS)) == asyncio.run(_run(url, RECOUNT))
    # Three statements, one raise each.
    assert asyncio.run(_run(url, "SELECT generation FROM plan_generations")) == [(generation[0][0] + 3,)]
    migrate.downgrade(url, "2026_11_25_0007")
    assert asyncio.run(_run(url, DEFINITIONS)) == row_level
    _publish_some(url, "t")
    assert asyncio.run(_run(url, TOTALS)) == asyncio.run(_run(url, RECOUNT))
