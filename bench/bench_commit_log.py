"""The commit log's cost and its rebuild rate (docs/architecture.md, "The commit log").

(1) Publish, log on vs log off, in one run. N transactions, each inserting a batch of published splits (each with
five `split_column_stats` rows: the metrics index's columns) through `publish_splits` and committing:
  - on: a `session_factory(engine, storage)` session: capture triggers, drain into `commit_log`, commit, and the
    entry written to `_commit_log/entries/` under a local `file://` root before the commit returns;
  - off: a plain AsyncSession on a second engine whose connections start with `strata.capture = off` (what
    `SET LOCAL strata.capture = 'off'` does per transaction, without the extra round trip that would make the
    baseline slower). Same pool settings (pre-ping) on both engines.
The two sides alternate transaction by transaction (ABAB, the order flipped every pair), batches of 1 and of 100
splits. Reported: mean and p50 transaction time, splits/s and rows/s (splits + stats rows), the on/off ratio of
the total time, and the bytes of each entry object.

(2) Rebuild. A database filled through the logged path: the first half of the splits in transactions of 100,
then `write_checkpoint`, then the second half in transactions of `entry_batch` (left as entries). Each split has
a 4-byte file in the bucket so `verify` checks published files too. Then `rebuild` into a fresh migrated database
(timed: splits/s, objects read, the time in the checkpoint load and in the entries), and `verify` against both the
source and the rebuilt database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from ulid import ULID

from bench.common import fmt_bytes, fmt_int, fmt_ms, fmt_s, metrics_index_config
from bench.harness import DATA_DIR, Stack

SECTION = "commit_log"
WINDOW = 900
PARTITIONS = 20
SOURCE_ID = "ingest-api"
GOAL_RATIO = 1.1
GOAL_REBUILD = 10_000.0  # splits/s


# ------------------------------------------------------------------------------------------------------------
# Data


async def create_index(sessions: async_sessionmaker[AsyncSession], index_id: str) -> dict[str, Any]:
    from strata_core.domain.index_config import IndexSettings

    config = metrics_index_config(index_id)
    config.pop("index_id")
    settings = IndexSettings.model_validate(config)
    incarnation = str(ULID())
    info = {"index_uid": f"{index_id}:{incarnation}", "incarnation": incarnation, "index_id": index_id,
            "doc_mapping_uid": settings.doc_mapping_uid, "sort_schema": settings.sort_schema}
    async with sessions() as session:
        await session.execute(text(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES (:u, :i, :inc, CAST(:c AS jsonb), :d, 1)"),
            {"u": info["index_uid"], "i": index_id, "inc": incarnation,
             "c": json.dumps(settings.model_dump(mode="json")), "d": settings.doc_mapping_uid})
        await session.commit()
    return info


def make_splits(info: dict[str, Any], count: int, rng: random.Random, uri_of=None) -> list:
    """`count` published splits of the metrics index, each with five column statistics, landing in the last
    few windows as ingestion's would."""
    from strata_core.domain.column_stats import ColumnStats
    from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState

    now = int(time.time())
    current = now - now % WINDOW
    out = []
    for _ in range(count):
        window_start = current - rng.choice((0, 0, 0, 1, 2)) * WINDOW
        split_id = str(ULID())
        num_rows = rng.randint(100, 20_000)
        lo = window_start + rng.randint(0, 300)
        hi = window_start + rng.randint(600, WINDOW - 1)
        host_lo, host_hi = sorted(rng.sample(range(1000), 2))
        stats = {
            "metric_name": ColumnStats("metric_name", "string", "cpu.system", "mem.used", 0),
            "service": ColumnStats("service", "string", "api", "web", 0),
            "host": ColumnStats("host", "string", f"host-{host_lo:04d}", f"host-{host_hi:04d}", 0),
            "timestamp_secs": ColumnStats("timestamp_secs", "i64", lo, hi, 0),
            "value": ColumnStats("value", "f64", rng.random(), 1000 * rng.random(), rng.randint(0, 3)),
        }
        uri = (uri_of(info, split_id) if uri_of is not None else
               f"file:///var/lib/strata/data/indexes/{info['index_id']}/{info['incarnation']}/splits/{split_id}.parquet")
        out.append(SplitMetadata(
            split_id=split_id, index_uid=info["index_uid"], source_id=SOURCE_ID,
            partition_id=f"tenant-{rng.randrange(PARTITIONS):02d}", doc_mapping_uid=info["doc_mapping_uid"],
            sort_schema=info["sort_schema"], window_start=window_start, window_duration_secs=WINDOW,
            time_range_start=lo, time_range_end=hi, num_rows=num_rows, uri=uri, size_bytes=num_rows * 12,
            row_groups=[RowGroupSpan(0, num_rows, 4, num_rows * 10)], column_stats=stats,
            root_split_ids=[split_id], state=SplitState.PUBLISHED))
    return out


STATS_PER_SPLIT = 5


# ------------------------------------------------------------------------------------------------------------
# (1) Publish, log on vs off


def _entry_sizes(root: Path) -> dict[str, int]:
    directory = root / "_commit_log" / "entries"
    if not directory.exists():
        return {}
    return {p.name: p.stat().st_size for p in directory.iterdir() if p.suffix == ".json"}


async def _publish(url: str, storage, root: Path, batches: list[int], transactions: dict[int, int], seed: int
                   ) -> dict[str, Any]:
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.publish_splits import publish_splits
    engine_on = create_engine(url, pool_size=2)
    engine_off = create_async_engine(url, pool_size=2, max_overflow=2, pool_pre_ping=True,
                                     connect_args={"server_settings": {"strata.capture": "off"}})
    sides = {"on": session_factory(engine_on, storage),
             "off": async_sessionmaker(engine_off, expire_on_commit=False)}
    rng = random.Random(seed)
    out: dict[str, Any] = {}
    try:
        info = await create_index(sides["on"], "bench-commit-log")
        async with sides["off"]() as session:  # the off side really is off
            setting = (await session.execute(text("SELECT current_setting('strata.capture', true)"))).scalar_one()
            if setting != "off":
                raise RuntimeError(f"the log-off engine's strata.capture is {setting!r}, not 'off'")

        async def one(side: str, splits: list) -> float:
            started = time.perf_counter()
            async with sides[side]() as session:
                await publish_splits(session, splits)
                await session.commit()
            return time.perf_counter() - started

        for batch in batches:
            n = transactions[batch]
            # Warm-up, untimed: pools, prepared statements, caches, on both sides.
            for side in ("on", "off", "on", "off"):
                await one(side, make_splits(info, batch, rng))
            async with sides["off"]() as session:
                before_seq = (await session.execute(text("SELECT last_value FROM commit_log_seq"))).scalar_one()
            before_files = _entry_sizes(root)
            times: dict[str, list[float]] = {"on": [], "off": []}
            for i in range(n):
                order = ("on", "off") if i % 2 == 0 else ("off", "on")
                for side in order:
                    splits = make_splits(info, batch, rng)  # made outside the timed part
                    times[side].append(await one(side, splits))
            new_files = {k: v for k, v in _entry_sizes(root).items() if k not in before_files}
            async with sides["off"]() as session:
                after_seq = (await session.execute(text("SELECT last_value FROM commit_log_seq"))).scalar_one()
                in_table = (await session.execute(text("SELECT count(*) FROM commit_log"))).scalar_one()
            sizes = sorted(new_files.values())
            result = {"batch": batch, "transactions": n, "times": times,
                      "entries": after_seq - before_seq, "entry_files": len(new_files),
                      "entry_bytes_mean": statistics.mean(sizes) if sizes else 0,
                      "entry_bytes_p50": statistics.median(sizes) if sizes else 0,
                      "commit_log_rows": in_table}
            if result["entries"] != n or len(new_files) != n:
                raise RuntimeError(f"batch {batch}: {n} logged transactions made {result['entries']} entries and "
                                   f"{len(new_files)} objects")
            out[str(batch)] = result
            on, off = sum(times["on"]), sum(times["off"])
            print(f"[commit_log] batch {batch}: on {on:.2f} s, off {off:.2f} s, ratio {on / off:.3f}, "
                  f"entry {result['entry_bytes_mean']:.0f} B", flush=True)
    finally:
        await engine_on.dispose()
        await engine_off.dispose()
    return out


# ------------------------------------------------------------------------------------------------------------
# (2) Rebuild and verify


async def _fill(url: str, storage, total: int, entry_batch: int, seed: int) -> dict[str, Any]:
    from strata_metastore.commit_log_passes import write_checkpoint
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.publish_splits import publish_splits

    engine = create_engine(url, pool_size=2)
    sessions = session_factory(engine, storage)
    rng = random.Random(seed)
    try:
        info = await create_index(sessions, "bench-commit-log-rebuild")

        def uri_of(info: dict[str, Any], split_id: str) -> str:
            return storage.uri_for(f"indexes/{info['index_id']}/{info['incarnation']}/splits/{split_id}.parquet")

        async def load(count: int, batch: int) -> int:
            transactions = 0
            for begin in range(0, count, batch):
                splits = make_splits(info, min(batch, count - begin), rng, uri_of)
                for split in splits:
                    await asyncio.to_thread(storage.write_bytes, split.uri, b"PAR1")
                async with sessions() as session:
                    await publish_splits(session, splits)
                    await session.commit()
                transactions += 1
            return transactions

        first = total // 2
        started = time.perf_counter()
        first_tx = await load(first, 100)
        checkpoint_started = time.perf_counter()
        report = await write_checkpoint(sessions, storage)
        checkpoint_secs = time.perf_counter() - checkpoint_started
        second_tx = await load(total - first, entry_batch)
        fill_secs = time.perf_counter() - started - checkpoint_secs
    finally:
        await engine.dispose()
    return {"checkpoint_seq": report.seq if report else None, "checkpoint_rows": report.rows if report else {},
            "checkpoint_secs": checkpoint_secs, "first_transactions": first_tx, "entry_transactions": second_tx,
            "fill_secs": fill_secs}


async def _rebuild(url: str, storage) -> dict[str, Any]:
    from strata_metastore import commit_log_replay
    from strata_metastore import rebuild as rebuild_module
    from strata_metastore.engine import create_engine, session_factory

    # Where the time goes: the checkpoint's load, and the entries' reads and applications.
    spent = {"load_checkpoint": 0.0, "read_entry": 0.0, "apply": 0.0}
    original_load = commit_log_replay.Replayer.load_checkpoint
    original_apply = commit_log_replay.Replayer.apply_folded
    original_read = commit_log_replay.read_entry

    async def load_checkpoint(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return await original_load(self, *args, **kwargs)
        finally:
            spent["load_checkpoint"] += time.perf_counter() - started

    async def apply(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return await original_apply(self, *args, **kwargs)
        finally:
            spent["apply"] += time.perf_counter() - started

    def read_entry(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original_read(*args, **kwargs)
        finally:
            spent["read_entry"] += time.perf_counter() - started  # in a worker thread, one at a time

    engine = create_engine(url, pool_size=2)
    sessions = session_factory(engine, storage)
    commit_log_replay.Replayer.load_checkpoint = load_checkpoint
    commit_log_replay.Replayer.apply_folded = apply
    commit_log_replay.read_entry = read_entry
    try:
        started = time.perf_counter()
        report = await rebuild_module.rebuild(sessions, storage, datetime.now(UTC))
        wall = time.perf_counter() - started
    finally:
        commit_log_replay.Replayer.load_checkpoint = original_load
        commit_log_replay.Replayer.apply_folded = original_apply
        commit_log_replay.read_entry = original_read
        await engine.dispose()
    return {"seconds": report.seconds, "wall_secs": wall, "splits_per_second": report.splits_per_second,
            "objects_read": report.objects_read, "entries_applied": report.entries_applied,
            "checkpoint_seq": report.checkpoint_seq, "last_seq": report.last_seq, "rows": report.rows,
            "windows_marked": report.windows_marked, "indexing_jobs": report.indexing_jobs, "spent": spent,
            "phases": report.phases}


async def _verify(url: str, storage) -> dict[str, Any]:
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.verify import verify

    engine = create_engine(url, pool_size=2)
    try:
        started = time.perf_counter()
        report = await verify(session_factory(engine, storage), storage)
        seconds = time.perf_counter() - started
    finally:
        await engine.dispose()
    return {"seconds": seconds, "agrees": report.agrees, "drift": report.drift,
            "entries_checked": report.entries_checked, "checkpoint_seq": report.checkpoint_seq}


async def _insert_floor(url: str) -> dict[str, Any]:
    """What PostgreSQL alone takes to insert the rebuilt database's split and statistics rows into empty copies of
    their tables (same indexes, no foreign keys or triggers) from a table, with no JSON to parse: the floor a
    rebuild's load stands on, measured beside it in the same run."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SET strata.capture = 'off'"))
            columns = {}
            for table in ("splits", "split_column_stats"):
                columns[table] = ", ".join(r for (r,) in await connection.execute(text(
                    "SELECT attname FROM pg_attribute WHERE attrelid = CAST(:t AS regclass) AND attnum > 0 "
                    "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum"), {"t": table}))
                await connection.execute(text(f"CREATE TEMP TABLE source_{table} AS SELECT * FROM {table}"))
                await connection.execute(text(f"CREATE TEMP TABLE floor_{table} (LIKE {table} INCLUDING ALL)"))
            started = time.perf_counter()
            for table, names in columns.items():
                await connection.execute(text(f"INSERT INTO floor_{table} ({names}) SELECT {names} "
                                              f"FROM source_{table}"))
            seconds = time.perf_counter() - started
            splits = (await connection.execute(text("SELECT count(*) FROM floor_splits"))).scalar_one()
            await connection.rollback()
    finally:
        await engine.dispose()
    return {"seconds": seconds, "splits": splits, "splits_per_second": splits / seconds if seconds else 0.0}


async def _count(url: str) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return (await connection.execute(text("SELECT count(*) FROM splits"))).scalar_one()
    finally:
        await engine.dispose()


# ------------------------------------------------------------------------------------------------------------


def run(stack: Stack, *, transactions_1: int = 500, transactions_100: int = 100, rebuild_splits: int = 20_000,
        entry_batch: int = 10, seed: int = 17) -> dict[str, Any]:
    from strata_core.storage import ObjectStore

    result: dict[str, Any] = {"transactions": {"1": transactions_1, "100": transactions_100},
                              "rebuild_splits": rebuild_splits, "entry_batch": entry_batch}
    url = stack.create_database("strata_bench_commit_log")
    print(f"[commit_log] publish: {transactions_1} x 1 split, {transactions_100} x 100 splits per side ...",
          flush=True)
    root = stack.path("bucket-publish")
    result["publish"] = asyncio.run(_publish(url, ObjectStore(root.resolve().as_uri()), root, [1, 100],
                                             {1: transactions_1, 100: transactions_100}, seed))
    stack.drop_database(url)

    storage = ObjectStore(stack.path("bucket-rebuild").resolve().as_uri())
    source = stack.create_database("strata_bench_commit_log_src")
    print(f"[commit_log] fill {rebuild_splits:,} splits through the logged path ...", flush=True)
    result["fill"] = asyncio.run(_fill(source, storage, rebuild_splits, entry_batch, seed + 1))
    print(f"[commit_log]   {result['fill']['fill_secs']:.1f} s, checkpoint {result['fill']['checkpoint_secs']:.2f} s",
          flush=True)
    print("[commit_log] verify (source) ...", flush=True)
    result["verify_source"] = asyncio.run(_verify(source, storage))
    target = stack.create_database("strata_bench_commit_log_rebuilt")
    print("[commit_log] rebuild ...", flush=True)
    result["rebuild"] = asyncio.run(_rebuild(target, storage))
    result["rebuilt_splits"] = asyncio.run(_count(target))
    print(f"[commit_log]   {result['rebuild']['seconds']:.2f} s, "
          f"{result['rebuild']['splits_per_second']:.0f} splits/s", flush=True)
    print("[commit_log] verify (rebuilt) ...", flush=True)
    result["verify_rebuilt"] = asyncio.run(_verify(target, storage))
    result["insert_floor"] = asyncio.run(_insert_floor(target))
    print(f"[commit_log] floor: PostgreSQL inserting the same rows from a table: "
          f"{result['insert_floor']['splits_per_second']:.0f} splits/s", flush=True)
    stack.drop_database(source)
    stack.drop_database(target)
    (DATA_DIR / f"last-{SECTION}.json").write_text(json.dumps(result, default=str))
    return result


# ------------------------------------------------------------------------------------------------------------


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def render(result: dict[str, Any]) -> str:
    lines = [
        "## Commit log: publish cost and rebuild rate",
        "",
        "`bench/bench_commit_log.py`. (1) N transactions each inserting a batch of published splits (5 "
        "`split_column_stats` rows each) through `publish_splits` (`SplitRepository.insert`) and committing: **on**, a "
        "`session_factory(engine, storage)` session (capture, drain, commit, entry object written to a local "
        "`file://` root before the commit returns); **off**, a plain session on connections started with "
        "`strata.capture = off` (as `SET LOCAL`, without its extra round trip). The sides alternate transaction by "
        "transaction (ABAB, the order flipped every pair), after 2 untimed warm-up transactions each. "
        "Goal: on/off at most 1.1x.",
        "",
        "| splits per transaction | transactions per side | off: mean / p50 / p99 | on: mean / p50 / p99 | "
        "off splits/s (rows/s) | on splits/s (rows/s) | on/off (total time) | bytes per entry (mean) | goal |",
        "|---:|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for pub in result["publish"].values():
        batch = pub["batch"]
        cells = {}
        for side in ("off", "on"):
            times = pub["times"][side]
            total = sum(times)
            splits = batch * len(times)
            cells[side] = (f"{fmt_ms(statistics.mean(times))} / {fmt_ms(statistics.median(times))} / "
                           f"{fmt_ms(_p(times, 0.99))}",
                           f"{fmt_int(splits / total)} ({fmt_int(splits * (1 + STATS_PER_SPLIT) / total)})")
        ratio = sum(pub["times"]["on"]) / sum(pub["times"]["off"])
        lines.append(f"| {batch} | {pub['transactions']} | {cells['off'][0]} | {cells['on'][0]} | {cells['off'][1]} | "
                     f"{cells['on'][1]} | {ratio:.2f}x | {fmt_bytes(pub['entry_bytes_mean'])} | "
                     f"{_verdict(ratio <= GOAL_RATIO)} |")
    fill, rb = result["fill"], result["rebuild"]
    vs, vr = result["verify_source"], result["verify_rebuilt"]
    spent = rb["spent"]
    n = result["rebuild_splits"]
    in_entries = spent["read_entry"] + spent["apply"]
    checkpoint_rate = fmt_int((n // 2) / spent["load_checkpoint"]) if spent["load_checkpoint"] else "-"
    entry_rate = fmt_int(rb["entries_applied"] / in_entries) if in_entries else "-"
    entry_split_rate = fmt_int((n - n // 2) / in_entries) if in_entries else "-"
    lines += [
        "",
        f"(2) Rebuild: {fmt_int(n)} splits written through the logged path (each with 5 stats rows and a 4-byte "
        f"file in the bucket): the first {fmt_int(n // 2)} in {fmt_int(fill['first_transactions'])} transactions "
        f"of 100, then `write_checkpoint` ({fmt_s(fill['checkpoint_secs'])}), then {fmt_int(n - n // 2)} in "
        f"{fmt_int(fill['entry_transactions'])} transactions of {result['entry_batch']} left as entries (fill "
        f"{fmt_s(fill['fill_secs'])} in all). `rebuild` into a fresh migrated database, then `verify` on the "
        f"source and on the rebuilt database. Goal: rebuild at least {fmt_int(GOAL_REBUILD)} splits/s.",
        "",
        "| | |",
        "|---|---|",
        f"| rebuild | {fmt_s(rb['seconds'])}, **{fmt_int(rb['splits_per_second'])} splits/s** "
        f"({_verdict(rb['splits_per_second'] >= GOAL_REBUILD)}) |",
        f"| objects read | {fmt_int(rb['objects_read'])} (checkpoint manifest and tables, "
        f"{fmt_int(rb['entries_applied'])} entries) |",
        f"| of which: checkpoint load | {fmt_s(spent['load_checkpoint'])} ({checkpoint_rate} splits/s) |",
        *([f"| floor: PostgreSQL inserting the same {fmt_int(result['insert_floor']['splits'])} splits and their "
           f"statistics from a table (same indexes, no foreign keys, triggers or JSON), in the same run | "
           f"{fmt_s(result['insert_floor']['seconds'])} (**{fmt_int(result['insert_floor']['splits_per_second'])} "
           f"splits/s**) |"] if "insert_floor" in result else []),
        f"| of which: entries read / applied | {fmt_s(spent['read_entry'])} (summed over the concurrent reads) / "
        f"{fmt_s(spent['apply'])} ({entry_rate} entries/s, {entry_split_rate} splits/s; applied 1,000 at a time "
        f"as their net effect, each restored to `commit_log`) |",
        "| phases (wall) | " + ", ".join(f"{k} {fmt_s(v)}" for k, v in rb.get("phases", {}).items()) + " |",
        f"| rows replayed | {', '.join(f'{t} {fmt_int(c)}' for t, c in sorted(rb['rows'].items()))} |",
        f"| after the replay | {fmt_int(rb['windows_marked'])} windows marked, {fmt_int(rb['indexing_jobs'])} "
        f"indexing jobs queued |",
        f"| splits in the rebuilt database | {fmt_int(result['rebuilt_splits'])} |",
        f"| verify, source database | {fmt_s(vs['seconds'])}, {fmt_int(vs['entries_checked'])} entries after the "
        f"checkpoint, {'agrees' if vs['agrees'] else 'drift ' + json.dumps(vs['drift'])} |",
        f"| verify, rebuilt database | {fmt_s(vr['seconds'])}, {fmt_int(vr['entries_checked'])} entries after the "
        f"checkpoint, {'agrees' if vr['agrees'] else 'drift ' + json.dumps(vr['drift'])} |",
    ]
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--transactions-1", type=int, default=500)
    parser.add_argument("--transactions-100", type=int, default=100)
    parser.add_argument("--rebuild-splits", type=int, default=20_000)
    parser.add_argument("--entry-batch", type=int, default=10, help="splits per transaction left as entries")
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    parser.add_argument("--render-from", type=Path, default=None,
                        help="print the section from a saved bench/.data/last-commit_log.json, run nothing")
    args = parser.parse_args()
    if args.render_from:
        print(render(json.loads(args.render_from.read_text())))
        return
    if args.quick:
        args.transactions_1, args.transactions_100, args.rebuild_splits = 50, 10, 2_000
    run_and_write(
        {SECTION: lambda stack: render(run(stack, transactions_1=args.transactions_1,
                                           transactions_100=args.transactions_100,
                                           rebuild_splits=args.rebuild_splits, entry_batch=args.entry_batch))},
        write=not (args.no_write or args.quick),
    )


if __name__ == "__main__":
    main()
