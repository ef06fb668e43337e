"""GC's DELETE of one page (1,000) of replaced splits, with the cascades it runs, beside N splits that each have a
finished indexing job (as every published split does): without and with indexes on the cascades' split_id.

    .tools/bin/uv run --group bench python -m bench.bench_gc_cascade 100000

Prints one line per variant; each DELETE runs in a transaction rolled back, so both see the same rows. Measured
2026-11-29 at 100,000 (docs/benchmarks.md, "Metastore growth: what the run above says"): 22,056 ms without and
77 ms with on a loaded machine, 11,798 ms and 34 ms in a second run (347x).
"""

from __future__ import annotations

import asyncio
import sys
import time

import asyncpg

from bench import bench_metastore_growth as growth
from bench.harness import Stack, asyncpg_dsn

CASCADE_INDEXES = ("ix_indexing_jobs_split", "ix_compaction_job_inputs_split")


async def measure(url: str, splits: int) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        await conn.execute("SET strata.capture = 'off'")  # a bulk load, not logged (migration 0017)
        await conn.execute("INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
                           "VALUES ('gc:01', 'gc', '01', '{}'::jsonb, 'd', 1)")
        await conn.execute(growth._GROW_SPLITS, "gc:01", "d", "s", "file:///gc/", 1_800_000_000, 1000, 1, splits)
        await conn.execute(
            "INSERT INTO indexing_jobs (job_id, split_id, index_uid, partition_id, reason, status, failures, "
            "created_at, updated_at, skipped, failure_log, progress) SELECT 'J' || substr(split_id, 2), split_id, "
            "index_uid, partition_id, 'published', 'success', 0, now(), now(), '[]', '[]', 1.0 FROM splits")
        # Head has the cascade indexes (migration 0018): dropped for the first variant, then built again.
        for name in CASCADE_INDEXES:
            await conn.execute(f"DROP INDEX {name}")
        await conn.execute("VACUUM ANALYZE")
        page = [r[0] for r in await conn.fetch(
            "SELECT split_id FROM splits WHERE state = 'marked_for_deletion' ORDER BY split_id LIMIT 1000")]
        for label, ddl in (("without indexes on the cascades' split_id", ()),
                           ("with them (migration 0018)", (
                               "CREATE INDEX ix_indexing_jobs_split ON indexing_jobs (split_id)",
                               "CREATE INDEX ix_compaction_job_inputs_split ON compaction_job_inputs (split_id)"))):
            for statement in ddl:
                await conn.execute(statement)
            await conn.execute("ANALYZE")
            transaction = conn.transaction()
            await transaction.start()
            started = time.perf_counter()
            await conn.execute("DELETE FROM splits WHERE split_id = ANY($1::varchar[])", page)
            elapsed = time.perf_counter() - started
            await transaction.rollback()
            print(f"{splits:,} splits and finished indexing jobs, {label}: DELETE of {len(page):,} splits "
                  f"{elapsed * 1000:.1f} ms", flush=True)
    finally:
        await conn.close()


def main() -> None:
    splits = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with Stack() as stack:
        asyncio.run(measure(stack.create_database("strata_bench_gc"), splits))


if __name__ == "__main__":
    main()
