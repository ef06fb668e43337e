"""Benchmark 5: the compaction planner over 1,000,000 published splits.

A fresh migrated database; `splits` filled with COPY through asyncpg (the secondary indexes the migrations
create are dropped for the load and created again from their own definitions, then VACUUM ANALYZE): 1 index
(the metrics index, default merge policy: min_level_num_docs 100k, merge_factor 10, max_merge_factor 12,
maturation 48 h, targets 10M rows / 256 MiB), ~20 partitions, windows of 900 s over ~10 days up to the current
(open) window, every split published, 10k-200k rows, created shortly after its window closed. Every window gets a
`compaction_windows` row marked planned (dirty=false, final_planned=true), as after a previous pass.

Timed (medians; every pass runs in its own transaction, rolled back, so each repeat sees the same state):
  (1) `plan_index(session, index, now, window_range=WindowRange(), force_final=False, create_jobs=False)`:
      the full dry-run pass, with its stages (load_candidates: SQL vs building candidates; plan_merges);
  (2) the same with create_jobs=True (jobs inserted, windows marked planned; then rolled back);
  (3) after 1,000 new splits land through `publish_splits` (committed, flagging their windows):
      `plan_incrementally(session, now, budget)` for a worker reporting 4 free slots and for an unbounded
      budget, and `plan_index(..., incremental=True, create_jobs=False)`.
Then a cProfile of the full dry run.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import random
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import event, text
from ulid import ULID

from bench.common import fmt_int, fmt_s, median, metrics_index_config
from bench.harness import BULK_LOAD, DATA_DIR, Stack, asyncpg_dsn

SECTION = "planner"
WINDOW = 900
PARTITIONS = 20
SOURCE_ID = "ingest-api"
COLUMNS = (
    "split_id", "index_uid", "source_id", "partition_id", "doc_mapping_uid", "sort_schema", "window_start",
    "window_duration_secs", "time_range_start", "time_range_end", "num_rows", "size_bytes", "uri", "row_groups",
    "num_merge_ops", "generation", "root_split_ids", "state", "created_at", "updated_at", "published_at",
)
BYTES_PER_ROW = 12
NEW_SPLITS = 1_000
WORKER_BUDGET = 4
UNBOUNDED_BUDGET = 10_000  # compaction_queue_bound


def index_settings() -> tuple[dict[str, Any], str]:
    from strata_core.domain.index_config import IndexSettings

    config = metrics_index_config("bench-planner")
    config.pop("index_id")
    settings = IndexSettings.model_validate(config)
    return settings.model_dump(mode="json"), settings.doc_mapping_uid


# ------------------------------------------------------------------------------------------------------------
# Loading


def _records(index_uid: str, incarnation: str, doc_mapping_uid: str, sort_schema: str, first_window: int,
             windows: int, total: int, begin: int, end: int, now: int, rng: random.Random) -> list[tuple]:
    out = []
    for i in range(begin, end):
        window_start = first_window + (i * windows // total) * WINDOW
        created = min(now - 1, window_start + WINDOW + rng.randint(0, 600))
        created = max(created, window_start)
        split_id = str(ULID.from_timestamp(created + rng.random()))
        num_rows = rng.randint(10_000, 200_000)
        size_bytes = num_rows * BYTES_PER_ROW
        stamp = datetime.fromtimestamp(created, UTC)
        out.append((
            split_id, index_uid, SOURCE_ID, f"tenant-{rng.randrange(PARTITIONS):02d}", doc_mapping_uid, sort_schema,
            window_start, WINDOW, window_start + rng.randint(0, 300), window_start + rng.randint(600, WINDOW - 1),
            num_rows, size_bytes,
            f"file:///var/lib/strata/data/indexes/bench-planner/{incarnation}/splits/{split_id}.parquet",
            f'[{{"row_offset":0,"num_rows":{num_rows},"byte_offset":4,"byte_length":{size_bytes - 2048}}}]',
            0, 0, [split_id], "published", stamp, stamp, stamp,
        ))
    return out


async def fill(dsn: str, total: int, days: int, seed: int = 11) -> dict[str, Any]:
    config, doc_mapping_uid = index_settings()
    sort_schema = config["sort_schema"]
    incarnation = str(ULID())
    index_uid = f"bench-planner:{incarnation}"
    now = int(time.time())
    windows = days * 86_400 // WINDOW
    current = now - now % WINDOW
    first_window = current - (windows - 1) * WINDOW  # the last window is the current, open one
    conn = await asyncpg.connect(dsn, server_settings=BULK_LOAD)
    try:
        await conn.execute(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ($1, 'bench-planner', $2, $3::jsonb, $4, 1)",
            index_uid, incarnation, json.dumps(config), doc_mapping_uid,
        )
        # Secondary (non-constraint) indexes of splits: dropped for the load, created again from their
        # definitions afterwards (the same DDL the migrations ran).
        definitions = await conn.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'splits' AND indexname NOT IN "
            "(SELECT conname FROM pg_constraint WHERE conrelid = 'splits'::regclass)"
        )
        for row in definitions:
            await conn.execute(f'DROP INDEX "{row["indexname"]}"')
        rng = random.Random(seed)
        started = time.perf_counter()
        copy_secs = 0.0
        chunk = 50_000
        for begin in range(0, total, chunk):
            records = _records(index_uid, incarnation, doc_mapping_uid, sort_schema, first_window, windows, total,
                               begin, min(total, begin + chunk), now, rng)
            copy_started = time.perf_counter()
            await conn.copy_records_to_table("splits", records=records, columns=COLUMNS)
            copy_secs += time.perf_counter() - copy_started
        index_started = time.perf_counter()
        for row in definitions:
            await conn.execute(row["indexdef"])
        index_secs = time.perf_counter() - index_started
        # Every window planned, as after an earlier pass: the incremental pass sees only new splits' windows.
        await conn.execute(
            "INSERT INTO compaction_windows (index_uid, window_duration_secs, window_start, dirty, final_planned, "
            "changed_at, planned_at) SELECT DISTINCT index_uid, window_duration_secs, window_start, false, true, "
            "now(), now() FROM splits WHERE index_uid = $1", index_uid)
        await conn.execute("UPDATE compaction_windows SET dirty = false, final_planned = true")
        load_secs = time.perf_counter() - started
        started = time.perf_counter()
        await conn.execute("VACUUM (ANALYZE) splits")
        await conn.execute("VACUUM (ANALYZE) compaction_windows")
        vacuum_secs = time.perf_counter() - started
        counts = await conn.fetchrow(
            "SELECT count(*) AS splits, count(DISTINCT window_start) AS windows, "
            "count(DISTINCT (partition_id, window_start)) AS groups FROM splits")
    finally:
        await conn.close()
    return {
        "index_uid": index_uid, "first_window": first_window, "current_window": current, "windows": windows,
        "now": now,
        "load_secs": load_secs, "copy_secs": copy_secs, "index_secs": index_secs, "vacuum_secs": vacuum_secs,
        "indexes_rebuilt": [r["indexname"] for r in definitions], "counts": dict(counts),
        "doc_mapping_uid": doc_mapping_uid, "sort_schema": sort_schema, "incarnation": incarnation,
    }


def new_splits(info: dict[str, Any], count: int, now: int, seed: int = 5) -> list:
    """`count` fresh published splits landing as they would: 70% in the current window, 20% in the one before,
    10% late into the 2-4 windows before that (within the late-data acceptance of 3600 s; all five windows are
    still open at `now`)."""
    from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState

    rng = random.Random(seed)
    out = []
    current = info["current_window"]
    for _ in range(count):
        r = rng.random()
        back = 0 if r < 0.7 else 1 if r < 0.9 else rng.randint(2, 4)
        window_start = current - back * WINDOW
        split_id = str(ULID())
        num_rows = rng.randint(10_000, 200_000)
        out.append(SplitMetadata(
            split_id=split_id, index_uid=info["index_uid"], source_id=SOURCE_ID,
            partition_id=f"tenant-{rng.randrange(PARTITIONS):02d}", doc_mapping_uid=info["doc_mapping_uid"],
            sort_schema=info["sort_schema"], window_start=window_start, window_duration_secs=WINDOW,
            time_range_start=window_start, time_range_end=min(window_start + WINDOW - 1, now),
            num_rows=num_rows,
            uri=f"file:///var/lib/strata/data/indexes/bench-planner/{info['incarnation']}/splits/{split_id}.parquet",
            size_bytes=num_rows * BYTES_PER_ROW, row_groups=[RowGroupSpan(0, num_rows, 4, num_rows * 10)],
            root_split_ids=[split_id], state=SplitState.PUBLISHED,
        ))
    return out


# ------------------------------------------------------------------------------------------------------------
# Timing helpers


class StageTimer:
    """Wraps module-level functions (in this process only) to add up the time spent in them."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo: list[Callable[[], None]] = []

    def wrap_async(self, owner: Any, name: str, label: str | None = None) -> None:
        original = getattr(owner, name)
        key = label or name

        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                self.totals[key] = self.totals.get(key, 0.0) + time.perf_counter() - started
                self.calls[key] = self.calls.get(key, 0) + 1

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def wrap_sync(self, owner: Any, name: str, label: str | None = None) -> None:
        original = getattr(owner, name)
        key = label or name

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.totals[key] = self.totals.get(key, 0.0) + time.perf_counter() - started
                self.calls[key] = self.calls.get(key, 0) + 1

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def _instrument(timer: StageTimer) -> None:
    from strata_metastore.compaction_repository import CompactionRepository
    from strata_planner.compaction import planning

    timer.wrap_async(planning, "load_candidates")
    timer.wrap_sync(planning, "plan_merges")
    timer.wrap_async(planning, "_changed_windows")
    timer.wrap_async(planning, "_mark_planned")
    timer.wrap_async(CompactionRepository, "create_job")
    if hasattr(CompactionRepository, "create_jobs"):
        timer.wrap_async(CompactionRepository, "create_jobs")


async def _timed_pass(sessions, action: Callable[[Any], Awaitable[Any]], *, instrument: bool = True
                      ) -> dict[str, Any]:
    """One pass in a fresh session, rolled back afterwards; wall time and stage totals."""
    timer = StageTimer()
    if instrument:
        _instrument(timer)
    try:
        async with sessions() as session:
            try:
                started = time.perf_counter()
                outcome = await action(session)
                seconds = time.perf_counter() - started
            finally:
                await session.rollback()
    finally:
        timer.restore()
    return {"seconds": seconds, "stages": dict(timer.totals), "calls": dict(timer.calls), "outcome": outcome}


def _outcome_facts(outcome: Any) -> dict[str, Any]:
    from strata_planner.compaction.planning import skipped_summary

    if isinstance(outcome, int):
        return {"created": outcome}
    plan = outcome.plan
    kinds: dict[str, int] = {}
    for op in plan.operations:
        kinds[str(op.kind)] = kinds.get(str(op.kind), 0) + 1
    return {
        "operations": len(plan.operations), "kinds": kinds, "windows_examined": outcome.windows_examined,
        "skipped": skipped_summary(plan, getattr(outcome, "mature_splits", 0)),
        "created": len(outcome.created_job_ids),
        "not_created": outcome.operations_not_created,
        "op_windows": len({(op.scope.partition_id, op.window_start) for op in plan.operations}),
    }


async def _repeat(sessions, action, runs: int) -> dict[str, Any]:
    samples = []
    for _ in range(runs):
        samples.append(await _timed_pass(sessions, action))
    seconds = [s["seconds"] for s in samples]
    stages = {k: median([s["stages"].get(k, 0.0) for s in samples]) for k in samples[0]["stages"]}
    return {"median": median(seconds), "runs": seconds, "stages": stages, "calls": samples[0]["calls"],
            "facts": _outcome_facts(samples[-1]["outcome"])}


# ------------------------------------------------------------------------------------------------------------
# Where the time of load_candidates goes: the SQL it sends, run raw through asyncpg; and EXPLAIN ANALYZE.


async def capture_candidates_sql(engine, sessions, index, now: datetime) -> list[tuple[str, tuple]]:
    """The SELECTs on `splits` that one full dry-run pass sends, with their parameters."""
    from strata_planner.compaction.planning import WindowRange, plan_index

    captured: list[tuple[str, tuple]] = []

    def _capture(_conn, _cursor, statement, parameters, _context, _many):  # noqa: ANN001
        captured.append((statement, tuple(parameters)))

    event.listen(engine.sync_engine, "before_cursor_execute", _capture)
    try:
        async with sessions() as session:
            await plan_index(session, index, now, window_range=WindowRange(), force_final=False, create_jobs=False)
            await session.rollback()
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", _capture)
    return [c for c in captured if "FROM splits" in c[0]]


async def raw_fetch(dsn: str, sql: str, params: tuple, runs: int) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn, server_settings=BULK_LOAD)
    try:
        times = []
        count = 0
        for _ in range(runs):
            started = time.perf_counter()
            rows = await conn.fetch(sql, *params)
            times.append(time.perf_counter() - started)
            count = len(rows)
            del rows
        explain = "\n".join(r[0] for r in await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *params))
    finally:
        await conn.close()
    return {"median": median(times), "runs": times, "rows": count, "explain": explain}


def profile_text(profile: cProfile.Profile, limit: int = 25) -> str:
    stream = io.StringIO()
    stats = pstats.Stats(profile, stream=stream)
    stats.strip_dirs().sort_stats("tottime").print_stats(limit)
    lines = stream.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(lines[start:start + limit + 1])


# ------------------------------------------------------------------------------------------------------------


async def _measure(url: str, info: dict[str, Any], runs: int, create_runs: int) -> dict[str, Any]:
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.models import IndexRow
    from strata_metastore.publish_splits import publish_splits
    from strata_planner.compaction.planning import WindowRange, plan_index
    from strata_planner.compaction.scheduler import plan_incrementally

    engine = create_engine(url)
    sessions = session_factory(engine)
    dsn = asyncpg_dsn(url)
    index_uid = info["index_uid"]
    out: dict[str, Any] = {}
    try:
        async with sessions() as session:
            index = await session.get(IndexRow, index_uid)
            session.expunge(index)

        # One fixed clock for every pass: the moment the splits were generated. The layout relative to `now`
        # (mature or not, windows open or closed) is then the same whenever the passes run.
        clock = datetime.fromtimestamp(info["now"], UTC)

        def now() -> datetime:
            return clock

        async def full_dry(session):
            return await plan_index(session, index, now(), window_range=WindowRange(), force_final=False,
                                    create_jobs=False)

        async def full_create(session):
            return await plan_index(session, index, now(), window_range=WindowRange(), force_final=False,
                                    create_jobs=True)

        # Warm-up (caches, prepared statements), untimed.
        await _timed_pass(sessions, full_dry, instrument=False)
        print("[planner] full dry-run pass ...", flush=True)
        out["full_dry"] = await _repeat(sessions, full_dry, runs)
        print(f"[planner]   {out['full_dry']['runs']}", flush=True)

        statements = await capture_candidates_sql(engine, sessions, index, clock)
        out["sql"] = [{"text": sql, "raw": await raw_fetch(dsn, sql, params, runs)} for sql, params in statements]

        profile = cProfile.Profile()
        async with sessions() as session:
            profile.enable()
            await full_dry(session)
            profile.disable()
            await session.rollback()
        out["profile"] = profile_text(profile)

        print("[planner] full pass with create_jobs=True ...", flush=True)
        out["full_create"] = await _repeat(sessions, full_create, create_runs)
        print(f"[planner]   {out['full_create']['runs']}", flush=True)

        await _assert_no_jobs(sessions, "the full passes")

        # New splits land, committed through the repository (their windows get flagged).
        fresh = new_splits(info, NEW_SPLITS, info["now"])
        async with sessions() as session:
            started = time.perf_counter()
            await publish_splits(session, fresh)
            await session.commit()
            out["insert_secs"] = time.perf_counter() - started
        # They landed (created_at, window flags) 30 s before the fixed clock, not at the wall-clock time of the
        # insert, so `changed_at <= now` in _mark_planned holds as it would in production.
        landed = datetime.fromtimestamp(info["now"] - 30, UTC)
        async with sessions() as session:
            await session.execute(text("UPDATE splits SET created_at = :t, updated_at = :t, published_at = :t "
                                       "WHERE split_id = ANY(:ids)"), {"t": landed, "ids": [s.split_id for s in fresh]})
            await session.execute(text("UPDATE compaction_windows SET changed_at = :t WHERE dirty"), {"t": landed})
            await session.commit()
        async with sessions() as session:
            out["dirty_windows"] = (await session.execute(text(
                "SELECT count(*) FROM compaction_windows WHERE dirty OR NOT final_planned"))).scalar_one()

        async def incremental_worker(session):
            return await plan_incrementally(session, now(), WORKER_BUDGET)

        async def incremental_unbounded(session):
            return await plan_incrementally(session, now(), UNBOUNDED_BUDGET)

        async def incremental_dry(session):
            return await plan_index(session, index, now(), window_range=WindowRange(), force_final=False,
                                    create_jobs=False, incremental=True)

        await _timed_pass(sessions, incremental_dry, instrument=False)
        inc_runs = max(runs, 5)
        print("[planner] incremental passes ...", flush=True)
        out["inc_dry"] = await _repeat(sessions, incremental_dry, inc_runs)
        out["inc_worker"] = await _repeat(sessions, incremental_worker, inc_runs)
        out["inc_unbounded"] = await _repeat(sessions, incremental_unbounded, inc_runs)
        await _assert_no_jobs(sessions, "the incremental passes")
        for key in ("inc_dry", "inc_worker", "inc_unbounded"):
            print(f"[planner]   {key} {out[key]['runs']}", flush=True)
    finally:
        await engine.dispose()
    return out


def run(stack: Stack, *, splits: int = 1_000_000, days: int = 10, runs: int = 3, create_runs: int = 2
        ) -> dict[str, Any]:
    url = stack.create_database("strata_bench_planner")
    info = asyncio.run(fill(asyncpg_dsn(url), splits, days))
    print(f"[planner] loaded {splits:,} splits in {info['load_secs']:.1f} s", flush=True)
    measured = asyncio.run(_measure(url, info, runs, create_runs))
    result = {"splits": splits, "days": days, "runs": runs, "info": info, **measured}
    # The raw numbers, kept under bench/.data/ (gitignored) so the section can be rendered again.
    (DATA_DIR / f"last-{SECTION}.json").write_text(json.dumps(result, default=str))
    return result


# ------------------------------------------------------------------------------------------------------------


async def _assert_no_jobs(sessions, after: str) -> None:
    """Every pass is rolled back: a job left behind would claim splits and change every later measurement."""
    async with sessions() as session:
        left = (await session.execute(text("SELECT count(*) FROM compaction_jobs"))).scalar_one()
    if left:
        raise RuntimeError(f"{left} compaction jobs were left behind by {after}: a pass was not rolled back")


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _stage_text(stages: dict[str, float], calls: dict[str, int]) -> str:
    parts = []
    for name, seconds in stages.items():
        n = calls.get(name, 1)
        parts.append(f"{name} {fmt_s(seconds)}" + (f" ({fmt_int(n)} calls)" if n > 1 else ""))
    return ", ".join(parts)


def _runs(values: list[float]) -> str:
    return ", ".join(fmt_s(v) for v in values)


def render(result: dict[str, Any]) -> str:
    info = result["info"]
    counts = info["counts"]
    full, create = result["full_dry"], result["full_create"]
    facts = full["facts"]
    lines = [
        f"## Compaction planner: {fmt_int(result['splits'])} published splits",
        "",
        f"{fmt_int(counts['splits'])} published splits of one index (the metrics index, default merge policy: "
        "min_level_num_docs 100k, merge_factor 10, max_merge_factor 12, maturation 48 h, targets 10M rows / "
        f"256 MiB) in {PARTITIONS} partitions and {fmt_int(counts['windows'])} windows of {WINDOW} s over "
        f"{result['days']} days up to the current open window ({fmt_int(counts['groups'])} (partition, window) "
        f"groups, ~{counts['splits'] // max(counts['groups'], 1)} splits each), 10k-200k rows per split, each "
        "created 0-10 minutes after its window closed. Loaded with asyncpg COPY (secondary indexes dropped and "
        f"recreated from their definitions: {', '.join(info['indexes_rebuilt'])}) in {fmt_s(info['load_secs'])} "
        f"(COPY {fmt_s(info['copy_secs'])}, indexes {fmt_s(info['index_secs'])}), then VACUUM ANALYZE. Every "
        "window has a `compaction_windows` row with dirty=false, final_planned=true. Each pass runs in its own "
        "session and is rolled back; medians after one untimed warm-up. Every pass gets the same `now`: the "
        "moment the splits were generated (so which splits are mature and which windows are closed does not "
        "depend on when the pass runs).",
        "",
        "| pass | median | runs | goal | verdict | what it did |",
        "|---|---|---|---|---|---|",
        f"| (1) full pass, dry run: `plan_index(..., create_jobs=False)` | {fmt_s(full['median'])} | "
        f"{_runs(full['runs'])} | < 5 s | {_verdict(full['median'] < 5)} | {fmt_int(facts['windows_examined'])} "
        f"windows, {fmt_int(facts['operations'])} operations {facts['kinds']} in {fmt_int(facts['op_windows'])} "
        f"(partition, window) groups; skipped {facts['skipped']} |",
        f"| (2) full pass, `create_jobs=True` | {fmt_s(create['median'])} | {_runs(create['runs'])} | < 5 s | "
        f"{_verdict(create['median'] < 5)} | {fmt_int(create['facts']['created'])} jobs created, "
        f"{fmt_int(create['facts']['not_created'])} not |",
    ]
    for key, label in (("inc_worker", f"`plan_incrementally(session, now, budget={WORKER_BUDGET})` (a worker "
                                      f"polling with {WORKER_BUDGET} free slots)"),
                       ("inc_unbounded", f"`plan_incrementally(session, now, budget={UNBOUNDED_BUDGET})` "
                                         "(the queue bound)"),
                       ("inc_dry", "`plan_index(..., incremental=True, create_jobs=False)`")):
        r = result[key]
        f = r["facts"]
        did = (f"{fmt_int(f['created'])} jobs created" if "operations" not in f else
               f"{fmt_int(f['windows_examined'])} windows, {fmt_int(f['operations'])} operations")
        lines.append(f"| (3) after {fmt_int(NEW_SPLITS)} new splits: {label} | {fmt_s(r['median'])} | "
                     f"{_runs(r['runs'])} | < 200 ms | {_verdict(r['median'] < 0.2)} | {did} |")
    statements = result["sql"]
    raw_total = sum(s["raw"]["median"] for s in statements)
    raw_rows = sum(s["raw"]["rows"] for s in statements if s["raw"]["rows"] > 1)
    load = full["stages"].get("load_candidates", 0.0)
    lines += [
        "",
        f"New splits: {fmt_int(NEW_SPLITS)} inserted through `publish_splits` in "
        f"{fmt_s(result['insert_secs'])} "
        f"(70% in the current window, 20% in the previous one, 10% late into the 2-4 before; then dated 30 s "
        f"before `now`), flagging {result['dirty_windows']} windows.",
        "",
        "### Where the time goes",
        "",
        f"- (1) by stage (median): {_stage_text(full['stages'], full['calls'])}. `load_candidates` sends "
        f"{len(statements)} SELECT(s) on `splits` ({fmt_int(raw_rows)} candidate rows); the same statements take "
        f"{fmt_s(raw_total)} through raw asyncpg (PostgreSQL + transfer + asyncpg decoding: "
        + ", ".join(fmt_s(s["raw"]["median"]) for s in statements)
        + f"), so SQLAlchemy's rows and building the `SplitCandidate`s cost about {fmt_s(load - raw_total)} of "
        f"its {fmt_s(load)}. `plan_merges` is the pure policy.",
        f"- (2) by stage (median): {_stage_text(create['stages'], create['calls'])}.",
    ]
    for key in ("inc_worker", "inc_unbounded", "inc_dry"):
        r = result[key]
        lines.append(f"- (3) {key}: {_stage_text(r['stages'], r['calls'])}.")
    lines += [
        "",
        "<details><summary>SQL of load_candidates, its EXPLAIN (ANALYZE, BUFFERS), and a cProfile of pass (1)"
        "</summary>",
        "",
    ]
    for statement in statements:
        lines += ["```sql", statement["text"], "```", "", "```", statement["raw"]["explain"], "```", ""]
    lines += [
        "cProfile of one full dry-run pass (sorted by own time):",
        "",
        "```",
        result["profile"],
        "```",
        "",
        "</details>",
    ]
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--create-runs", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    parser.add_argument("--render-from", type=Path, default=None,
                        help="print the section from a saved bench/.data/last-planner.json, run nothing")
    args = parser.parse_args()
    if args.render_from:
        print(render(json.loads(args.render_from.read_text())))
        return
    run_and_write(
        {SECTION: lambda stack: render(run(stack, splits=args.splits, days=args.days, runs=args.runs,
                                           create_runs=args.create_runs))},
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
