"""What reading an index's compaction debt costs at a million splits: `DebtRepository.compaction` (the endpoint's and
the metrics refresh's reads) and `DebtRepository.windows` for a listing's 48 windows, on an embedded PostgreSQL.

The index holds N published splits over 15-minute windows of the last N/100 windows, all but `--recent` of them
created three days ago (mature by age, as nearly all are in a store that has run a while); the recent ones are
small and waiting, in the last 20 windows (four tenants each), so most of those windows are closed and not
final. 20,000 successful jobs are kept, the last few minutes' with inputs.

Printed only:
    .tools/bin/uv run python -m bench.bench_debt --splits 1000000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from bench.harness import BULK_LOAD
from strata_core.domain.merge_policy import MergePolicyParams, WindowRules
from strata_metastore import migrate
from strata_planner.compaction.debt_repository import DebtRepository
from strata_services.local.postgres import EmbeddedPostgres

INDEX_UID = "bench:01JBZZZZZZZZZZZZZZZZZZZZZZ"


async def _load(url: str, splits: int, recent: int, now: datetime) -> None:
    engine = create_async_engine(url, connect_args={"server_settings": BULK_LOAD})
    windows = max(1, splits // 100)
    now_secs = int(now.timestamp())
    last_window = now_secs - now_secs % 900
    async with engine.begin() as c:
        await c.execute(text("INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, "
                             "version, created_at, updated_at) VALUES (:u, 'bench', '01JBZZZZZZZZZZZZZZZZZZZZZZ', "
                             "'{}', 'd', 1, now(), now())"), {"u": INDEX_UID})
        for start in range(0, splits, 100_000):
            await c.execute(text("""
                INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema,
                    window_start, window_duration_secs, num_rows, size_bytes, uri, row_groups, num_merge_ops,
                    generation, root_split_ids, parent_split_ids, state, created_at, updated_at, published_at)
                SELECT lpad(i::text, 26, '0'), :u, 's', 'p' || (i % 4), 'd', 'a@v1',
                       :last - 900 * (CASE WHEN i < :recent THEN i % 20 ELSE i % :windows END), 900,
                       CASE WHEN i < :recent THEN 500 + i % 5000 ELSE 2000000 END, 1000000, 'file:///' || i, '[]',
                       0, 0, '{}', '{}', 'published',
                       CASE WHEN i < :recent THEN now() - (i % 3600) * interval '1 second'
                            ELSE now() - interval '3 days' END, now(), now()
                FROM generate_series(:lo, :hi - 1) AS i"""),
                {"u": INDEX_UID, "last": last_window, "windows": windows, "recent": recent, "lo": start,
                 "hi": min(splits, start + 100_000)})
        await c.execute(text("""
            INSERT INTO compaction_jobs (job_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema,
                window_duration_secs, window_start, kind, level, status, failures, failure_log, progress,
                input_split_ids, input_rows, input_bytes, output_split_ids, created_at, updated_at, finished_at)
            SELECT 'J' || lpad(i::text, 25, '0'), :u, 's', 'p', 'd', 'a@v1', 900, :last, 'level', 0, 'success', 0,
                   '[]', 1, '{}', 1000, 1000, '{}', now(), now(), now() - i * interval '1 second'
            FROM generate_series(0, 19999) AS i"""), {"u": INDEX_UID, "last": last_window})
        await c.execute(text("""
            INSERT INTO compaction_job_inputs (job_id, split_id, live)
            SELECT 'J' || lpad((i / 4)::text, 25, '0'), lpad(i::text, 26, '0'), false
            FROM generate_series(0, least(:recent, 2400) - 1) AS i"""), {"recent": recent})
    async with engine.connect() as c:
        await c.execution_options(isolation_level="AUTOCOMMIT")
        await c.execute(text("VACUUM ANALYZE"))
    await engine.dispose()


async def _measure(url: str, rounds: int, now: datetime) -> None:
    engine = create_async_engine(url)
    params = MergePolicyParams(maturation_period_secs=48 * 3600)
    rules = WindowRules(compaction_start_time=0, late_data_acceptance_secs=3600)
    now_secs = int(now.timestamp())
    last = now_secs - now_secs % 900
    listed = [(900, last - 900 * k) for k in range(48)]
    timings: dict[str, list[float]] = {"compaction": [], "windows (48)": []}
    async with AsyncSession(engine) as session:
        repo = DebtRepository(session)
        for _ in range(rounds + 1):  # the first round warms the cache and the prepared statements
            t = time.perf_counter()
            debt = await repo.compaction(INDEX_UID, params, rules, datetime.now(UTC))
            timings["compaction"].append(time.perf_counter() - t)
            t = time.perf_counter()
            await repo.windows(INDEX_UID, params, rules, datetime.now(UTC), listed)
            timings["windows (48)"].append(time.perf_counter() - t)
    await engine.dispose()
    print(f"published {debt.published_splits:,}, waiting {debt.splits_waiting:,} in {len(debt.levels)} levels, "
          f"closed windows not final {debt.closed_windows_not_final:,}, first merges {debt.first_merge_delays.count}")
    for name, values in timings.items():
        kept = sorted(values[1:])
        print(f"{name}: median {statistics.median(kept) * 1000:.1f} ms, max {kept[-1] * 1000:.1f} ms "
              f"over {len(kept)} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=1_000_000)
    parser.add_argument("--recent", type=int, default=5_000, help="splits not yet mature (waiting)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="strata-bench-debt-") as tmp:
        server = EmbeddedPostgres(Path(tmp))
        server.start()
        try:
            url = server.url("postgres")
            migrate.upgrade(url)
            now = datetime.now(UTC)
            t = time.perf_counter()
            asyncio.run(_load(url, args.splits, args.recent, now))
            print(f"loaded {args.splits:,} splits in {time.perf_counter() - t:.0f} s")
            asyncio.run(_measure(url, args.rounds, now))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
