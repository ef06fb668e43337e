"""What the counters' triggers on `splits` cost (`published_totals` and `plan_generations`), row-level (migrations
0006/0007) against statement-level (0008), in one run so both see the same machine.

(1) The COPY load of the EXPLAIN benchmark (`bench_query.load_explain_index`, N published splits in chunks of
    50,000) into a fresh database per variant: 0007 with both row triggers, with each disabled in turn, with
    neither, and 0008. Rounds alternate the variants.
(2) Registration's metastore part: `publish_splits` of batches of 1,000 published splits (as
    `POST /v1/indexes/{id}/splits` calls it, then commit), alternating between a database at 0007 and one at head.

Printed only (docs/benchmarks.md takes its figures by hand):
    .tools/bin/uv run --group bench python -m bench.bench_split_triggers --splits 100000 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

from bench.common import fmt_int, fmt_s
from bench.harness import BULK_LOAD, Stack, asyncpg_dsn
from strata_metastore import migrate

ROW_LEVEL = "2026_11_25_0007"
COUNT, BUMP = "splits_count_published", "splits_bump_plan_generation"
VARIANTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("0007, both row triggers", ROW_LEVEL, ()),
    (f"0007, without {COUNT}", ROW_LEVEL, (COUNT,)),
    (f"0007, without {BUMP}", ROW_LEVEL, (BUMP,)),
    ("0007, neither trigger", ROW_LEVEL, (COUNT, BUMP)),
    ("0008, statement triggers", "head", ()),
]


async def _execute(url: str, *statements: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(asyncpg_dsn(url), server_settings=BULK_LOAD)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def database_at(stack: Stack, revision: str, disabled: tuple[str, ...] = ()) -> str:
    url = stack.create_database("strata_bench_triggers", migrated=False)
    migrate.upgrade(url, revision)
    asyncio.run(_execute(url, *(f"ALTER TABLE splits DISABLE TRIGGER {name}" for name in disabled)))
    return url


def measure_load(stack: Stack, splits: int, days: int, rounds: int) -> dict[str, list[dict[str, float]]]:
    from bench.bench_query import load_explain_index

    out: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in VARIANTS}
    for round_ in range(rounds):
        # Reversed every other round: a trend in the machine's load does not favour one end of the list.
        for label, revision, disabled in (VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]):
            url = database_at(stack, revision, disabled)
            storage = stack.path(f"triggers-storage-{round_}-{len(out[label])}")
            load_before = os.getloadavg()[0]
            loaded = asyncio.run(load_explain_index(url, storage.resolve().as_uri(), splits, days))
            t = loaded["timings"]
            out[label].append({"copy_secs": t["copy_secs"], "load_secs": t["load_secs"], "load_avg": load_before})
            print(f"[triggers] round {round_ + 1}, {label}: COPY {t['copy_secs']:.1f} s "
                  f"(load {load_before:.2f})", flush=True)
            stack.drop_database(url)
    return out


def _published_batch(index_uid: str, prefix: str, count: int) -> list[Any]:
    from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState

    window = 1_795_000_500
    return [SplitMetadata(split_id=f"{prefix}{i:06d}".ljust(26, "0"), index_uid=index_uid, source_id="bench",
                          partition_id=f"p{i % 4}", doc_mapping_uid="d", sort_schema="", window_start=window,
                          window_duration_secs=900, time_range_start=window, time_range_end=window + 899,
                          num_rows=100, uri=f"file:///bench/{prefix}{i}.parquet", size_bytes=4_000 + i,
                          row_groups=[RowGroupSpan(0, 100, 4, 3_900)], state=SplitState.PUBLISHED)
            for i in range(count)]


async def _insert_batches(urls: dict[str, str], batches: int, batch: int) -> dict[str, list[float]]:
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.publish_splits import publish_splits

    engines = {label: create_engine(url) for label, url in urls.items()}
    out: dict[str, list[float]] = {label: [] for label in urls}
    try:
        for label in urls:
            await _index(engines[label])
        for b in range(batches + 1):  # the first batch warms each side up, not counted
            for label in (list(urls) if b % 2 == 0 else list(urls)[::-1]):
                rows = _published_batch("bench-triggers:1", f"b{b:03d}", batch)
                started = time.perf_counter()
                async with session_factory(engines[label])() as session:
                    await publish_splits(session, rows)
                    await session.commit()
                if b:
                    out[label].append(time.perf_counter() - started)
    finally:
        for engine in engines.values():
            await engine.dispose()
    return out


async def _index(engine) -> None:  # noqa: ANN001
    from sqlalchemy import text

    async with engine.begin() as conn:
        await conn.execute(text(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ('bench-triggers:1', 'bench-triggers', '1', '{}', 'd', 1)"))


def measure_register(stack: Stack, batches: int, batch: int) -> dict[str, list[float]]:
    urls = {"0007, row triggers": database_at(stack, ROW_LEVEL), "0008, statement triggers": database_at(stack, "head")}
    return asyncio.run(_insert_batches(urls, batches, batch))


def render(result: dict[str, Any]) -> str:
    lines: list[str] = []
    if result["load"]:
        lines += _render_load(result) + [""]
    if result["register"]:
        lines += _render_register(result)
    return "\n".join(lines)


def _render_load(result: dict[str, Any]) -> list[str]:
    lines = [f"(1) COPY of {fmt_int(result['splits'])} published splits (chunks of 50,000), {result['rounds']} "
             "round(s)", "", "| triggers | COPY per round | median | vs 0007 both |", "|---|---|---|---|"]
    base = statistics.median(r["copy_secs"] for r in result["load"][VARIANTS[0][0]])
    for label, runs in result["load"].items():
        med = statistics.median(r["copy_secs"] for r in runs)
        lines.append(f"| {label} | {', '.join(fmt_s(r['copy_secs']) for r in runs)} | {fmt_s(med)} | "
                     f"{med / base:.2f}x |")
    return lines


def _render_register(result: dict[str, Any]) -> list[str]:
    lines = [f"(2) `publish_splits` of {result['batch']:,} published splits, then commit "
              f"({result['batches']} batches each, alternating)", "",
              "| triggers | median | min | max |", "|---|---|---|---|"]
    for label, secs in result["register"].items():
        lines.append(f"| {label} | {fmt_s(statistics.median(secs))} | {fmt_s(min(secs))} | {fmt_s(max(secs))} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--part", choices=["load", "register"], action="append")
    args = parser.parse_args()
    parts = args.part or ["load", "register"]
    result: dict[str, Any] = {"splits": args.splits, "rounds": args.rounds, "batches": args.batches,
                              "batch": args.batch, "load": {}, "register": {}}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()[0]
    with Stack() as stack:
        if "register" in parts:
            result["register"] = measure_register(stack, args.batches, args.batch)
        if "load" in parts:
            result["load"] = measure_load(stack, args.splits, args.days, args.rounds)
    print(render(result))
    print(f"\n_{started}, 1-minute load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after._")


if __name__ == "__main__":
    main()
