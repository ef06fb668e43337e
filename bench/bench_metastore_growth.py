"""Benchmark: how the metastore's hot statements grow with the number of split rows (issue 34, item 4).

One database, grown in place so every size is measured on the same index and the same query:

1. bench_query's EXPLAIN index is loaded (`load_explain_index`: 1,000,000 published splits over 10 days, ~1,040 a
   window, 5 statistics rows each, real files with artifacts in the two windows the query reads);
2. the sizes after that are reached by generating older history directly in PostgreSQL (`INSERT ... SELECT
   generate_series`, secondary indexes dropped and rebuilt): the same density per window further back in time,
   97% published, 2% marked for deletion (replaced, waiting for GC), 1% staged, 5 statistics rows each. The
   query's windows and candidates stay exactly the same, so what changes between sizes is the table, not the
   answer.

At every size, on the revision before 0018 and at head (alembic downgrade / upgrade on the loaded database, so
"before" and "after" are the same rows in the same run):

- EXPLAIN over HTTP to a `strata serve query-api` child, each request a new SQL text (a first-time plan, never a
  kept one): p50 / p99 (issue goal at 10M: 20 / 100 ms);
- the statements behind it, raw through asyncpg (median of 20) with their EXPLAIN (ANALYZE, BUFFERS);
- registration's metastore side: `register_splits` as indexer-api runs it, with the footer check replaced by the
  metadata it would return (the footer read does not depend on the table; bench_register times it), 5 batches of
  1,000 new splits in the open window: splits/s;
- incremental compaction planning (`plan_index(incremental=True)`, dry run) over 8 flagged windows;
- GC's page of deletable splits: the first page of a backlog, and the pass that finds nothing (the steady state);
- retention's expired windows with nothing expired (the steady state).

    .tools/bin/uv run --group bench python -m bench.bench_metastore_growth --sizes 1000000,10000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from bench.bench_planner import raw_fetch
from bench.bench_query import (
    EXPLAIN_INDEX,
    ExplainClient,
    ExplainIndex,
    api_child,
    child_env,
    explain_sql,
    latency_summary,
    load_explain_index,
    unkept_sql,
)
from bench.common import fmt_bytes, fmt_int, fmt_s
from bench.harness import Stack, asyncpg_dsn

SECTION = "metastore_growth"
WINDOW = 900
BASE_DAYS = 10
HTTP_RUNS = 200
REGISTER_BATCHES = 5
REGISTER_BATCH = 1_000
OURS = "2026_11_29_0018"


def _before_ours() -> str:
    from alembic.script import ScriptDirectory

    from strata_metastore.migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config("postgresql+asyncpg://unused/unused"))
    for revision in script.walk_revisions():
        if revision.revision.startswith(OURS):
            return str(revision.down_revision)
    return "head"  # 0018 not in the tree: both rounds measure the same revision


# --- growing the table in PostgreSQL -------------------------------------------------------------------------

_GROW_SPLITS = """
INSERT INTO splits (split_id, index_uid, source_id, partition_id, doc_mapping_uid, sort_schema, window_start,
                    window_duration_secs, time_range_start, time_range_end, num_rows, size_bytes, uri, row_groups,
                    num_merge_ops, generation, root_split_ids, state, created_at, updated_at, published_at,
                    marked_for_deletion_at)
SELECT id, $1, 'ingest-api', 'tenant-' || (i % 8), $2, $3, w, 900, w + (i * 7919) % 300,
       w + 600 + (i * 104729) % 299, nr, nr * 12, $4 || id || '.parquet',
       jsonb_build_array(jsonb_build_object('row_offset', 0, 'num_rows', nr, 'byte_offset', 4,
                                            'byte_length', nr * 12 - 2048)),
       0, 0, ARRAY[id]::varchar(26)[], st, ts, ts, CASE WHEN st <> 'staged' THEN ts END,
       CASE WHEN st = 'marked_for_deletion' THEN ts END
FROM (SELECT i, id, w, 10000 + (i * 7919) % 190000 AS nr, to_timestamp(w + 900 + i % 600) AS ts,
             (CASE WHEN i % 100 = 0 THEN 'staged' WHEN i % 50 = 1 THEN 'marked_for_deletion'
                   ELSE 'published' END)::split_state AS st
      FROM (SELECT i, '00' || lpad(i::text, 24, '0') AS id, $5::bigint - ((i - 1) / $6 + 1) * 900 AS w
            FROM generate_series($7::bigint, $8::bigint) i) g0) g
"""
# Statistics of the generated rows: the same five columns as the loaded ones (values of their shape; no query of
# the bench reads these windows, they make the table and its primary key as large as the size says).
_GROW_STATS = """
INSERT INTO split_column_stats (split_id, column_name, value_type, min_string, max_string, min_i64, max_i64,
                                min_f64, max_f64, null_count, regex)
SELECT s.split_id, c.name, c.kind::column_value_type,
       CASE c.name WHEN 'metric_name' THEN 'metric_' || lpad((n % 20)::text, 3, '0')
                   WHEN 'service' THEN 'service-00' WHEN 'host' THEN 'host-' || lpad((n % 1800)::text, 4, '0') END,
       CASE c.name WHEN 'metric_name' THEN 'metric_' || lpad((180 + n % 20)::text, 3, '0')
                   WHEN 'service' THEN 'service-29'
                   WHEN 'host' THEN 'host-' || lpad((n % 1800 + 150)::text, 4, '0') END,
       CASE WHEN c.name = 'timestamp_secs' THEN s.time_range_start END,
       CASE WHEN c.name = 'timestamp_secs' THEN s.time_range_end END,
       CASE WHEN c.name = 'value' THEN (n % 50)::float8 END,
       CASE WHEN c.name = 'value' THEN 1950 + (n % 50)::float8 END,
       0, CASE WHEN c.kind = 'string' THEN '^.*$' END
FROM (SELECT split_id, time_range_start, time_range_end, substr(split_id, 3)::bigint AS n FROM splits
      WHERE split_id >= $1 AND split_id <= $2) s
CROSS JOIN (VALUES ('metric_name', 'string'), ('service', 'string'), ('host', 'string'),
                   ('timestamp_secs', 'i64'), ('value', 'f64')) AS c(name, kind)
"""


def _history_id(i: int) -> str:
    return "00" + str(i).rjust(24, "0")


async def grow(dsn: str, info: ExplainIndex, storage_uri: str, generated: int, add: int,
               per_window: int) -> dict[str, float]:
    """`add` more rows of history before the loaded ones (and before those generated earlier), with statistics."""
    from bench.bench_query import _drop_for_load

    conn = await asyncpg.connect(dsn)
    timings: dict[str, float] = {}
    try:
        # Rows first..last, numbered so that a higher number is an older window: ids and windows both go back.
        first, last = generated + 1, generated + add
        windows_back = -(-last // per_window)
        oldest = info.first_window - windows_back * WINDOW
        restore = await _drop_for_load(conn)
        started = time.perf_counter()
        prefix = f"{storage_uri}/indexes/{EXPLAIN_INDEX}/{info.incarnation}/splits/"
        chunk = 2_000_000
        for begin in range(first, last + 1, chunk):
            end = min(last, begin + chunk - 1)
            # Newest history first in the numbering; the window of row i counts back from the loaded windows.
            await conn.execute(_GROW_SPLITS, info.index_uid, info.doc_mapping_uid, info.sort_schema, prefix,
                               info.first_window,
                               per_window, begin, end)
            await conn.execute(_GROW_STATS, _history_id(begin), _history_id(end))
            print(f"[growth] rows {begin:,}..{end:,} in {time.perf_counter() - started:.0f} s", flush=True)
        timings["insert_secs"] = time.perf_counter() - started
        started = time.perf_counter()
        for statement in restore:
            await conn.execute(statement)
        timings["restore_secs"] = time.perf_counter() - started
        started = time.perf_counter()
        await conn.execute("VACUUM (ANALYZE) splits")
        await conn.execute("VACUUM (ANALYZE) split_column_stats")
        await conn.execute("VACUUM (ANALYZE) published_totals")
        timings["vacuum_secs"] = time.perf_counter() - started
        timings["oldest_window"] = oldest
    finally:
        await conn.close()
    return timings


async def sizes(dsn: str) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes FROM pg_class c "
            "WHERE c.oid IN ('splits'::regclass, 'split_column_stats'::regclass) OR c.oid IN (SELECT indexrelid "
            "FROM pg_index WHERE indrelid IN ('splits'::regclass, 'split_column_stats'::regclass)) "
            "ORDER BY c.relname")
        counts = dict(await conn.fetchrow(
            "SELECT count(*) AS splits, count(*) FILTER (WHERE state = 'published') AS published, "
            "count(*) FILTER (WHERE state = 'marked_for_deletion') AS marked FROM splits"))
    finally:
        await conn.close()
    return {"relations": {r["name"]: r["bytes"] for r in rows}, "counts": counts}


# --- what is measured at each size ---------------------------------------------------------------------------

async def _captured(engine, work) -> list[tuple[str, tuple]]:
    """The statements `work()` sends (SQL text and parameters as asyncpg gets them)."""
    from sqlalchemy import event

    captured: list[tuple[str, tuple]] = []

    def capture(_conn, _cursor, statement, parameters, _context, _many):  # noqa: ANN001
        captured.append((statement, tuple(parameters)))

    event.listen(engine.sync_engine, "before_cursor_execute", capture)
    try:
        await work()
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", capture)
    return captured


def _new_splits(info: ExplainIndex, count: int, window_start: int) -> list[Any]:
    from ulid import ULID

    from strata_core.domain.column_stats import ColumnStats
    from strata_core.domain.split import RowGroupSpan, SplitMetadata, SplitState

    out = []
    for n in range(count):
        split_id = str(ULID())
        start, end = window_start + n % 300, window_start + 600 + n % 299
        stats = {
            "metric_name": ColumnStats("metric_name", "string", "metric_000", "metric_199", 0, "^metric_.*$"),
            "service": ColumnStats("service", "string", "service-00", "service-29", 0, "^service-.*$"),
            "host": ColumnStats("host", "string", "host-0100", "host-0300", 0, "^host-.*$"),
            "timestamp_secs": ColumnStats("timestamp_secs", "i64", start, end, 0, None),
            "value": ColumnStats("value", "f64", 0.5, 1999.5, 0, None),
        }
        out.append(SplitMetadata(
            split_id=split_id, index_uid=info.index_uid, source_id="external", partition_id=f"tenant-{n % 8}",
            doc_mapping_uid=info.doc_mapping_uid, sort_schema=info.sort_schema, window_start=window_start,
            window_duration_secs=WINDOW, time_range_start=start, time_range_end=end, num_rows=200,
            uri=f"file:///bench/external/{window_start}/{split_id}.parquet", size_bytes=9_000,
            row_groups=[RowGroupSpan(0, 200, 4, 8_000)], column_stats=stats, root_split_ids=[split_id],
            state=SplitState.PUBLISHED))
    return out


async def measure_register(sessions, info: ExplainIndex) -> dict[str, Any]:
    """indexer-api's `register_splits` with its footer check replaced by the metadata it would return."""

    from strata_indexer.splits import service
    from strata_indexer.splits.schemas import SplitToRegister
    from strata_metastore.models import IndexRow

    # Into a second index of the same table: the rows land in the same relation and indexes, but not in the
    # queried index's open window, which the planning measured next would otherwise find thousands of new splits in.
    target = ExplainIndex(**{**info.__dict__, "index_uid": info.index_uid + "-register"})
    async with sessions() as session:
        index = await session.get(IndexRow, target.index_uid)
        if index is None:
            source = await session.get(IndexRow, info.index_uid)
            index = IndexRow(index_uid=target.index_uid, index_id=source.index_id + "-register",
                             incarnation=source.incarnation, config=source.config,
                             doc_mapping_uid=source.doc_mapping_uid, version=1)
            session.add(index)
            await session.commit()
        session.expunge(index)
    info = target
    now = int(time.time())
    window = now - now % WINDOW
    original = service._inspect_all
    times = []
    try:
        for round_ in range(REGISTER_BATCHES + 1):
            metadata = _new_splits(info, REGISTER_BATCH, window)
            items = [SplitToRegister(split_id=m.split_id, uri=m.uri, num_rows=m.num_rows,
                                     partition_id=m.partition_id) for m in metadata]
            service._inspect_all = lambda _items, _identity, _storage, prepared=metadata: prepared
            async with sessions() as session:
                started = time.perf_counter()
                answer = await service.register_splits(session, index, items, None, 10_000)
                elapsed = time.perf_counter() - started
            if len(answer.registered) != REGISTER_BATCH:
                raise RuntimeError(f"registered {len(answer.registered)} of {REGISTER_BATCH}")
            if round_:  # the first batch warms the connection and the statements up
                times.append(elapsed)
        # The same batch again: idempotent, nothing written.
        async with sessions() as session:
            started = time.perf_counter()
            answer = await service.register_splits(session, index, items, None, 10_000)
            again = time.perf_counter() - started
        if len(answer.unchanged) != REGISTER_BATCH:
            raise RuntimeError("the repeated batch was not unchanged")
    finally:
        service._inspect_all = original
    return {"batch_secs": times, "splits_per_sec": REGISTER_BATCH * len(times) / sum(times),
            "median_batch": sorted(times)[len(times) // 2], "again_secs": again}


async def measure_statements(url: str, storage_uri: str, info: ExplainIndex, sql: str) -> dict[str, Any]:
    """Each hot statement as the code sends it: captured from the real call, then timed raw and explained."""
    from sqlalchemy import select

    from bench.bench_query import PlanCaches, _timed_plans
    from strata_core.storage import ObjectStore
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.models import IndexRow
    from strata_metastore.repositories import SplitRepository
    from strata_metastore.window_repository import CompactionWindowRepository
    from strata_planner.compaction.planning import WindowRange, plan_index

    engine = create_engine(url)
    sessions = session_factory(engine)
    dsn = asyncpg_dsn(url)
    out: dict[str, Any] = {"statements": {}}
    try:
        out["register"] = await measure_register(sessions, info)

        caches = PlanCaches.fresh(ObjectStore(storage_uri))
        plan_sql = await _captured(engine, lambda: _timed_plans(sessions, sql, 1, lambda: caches))
        for text_, params in plan_sql:
            if "WITH c AS MATERIALIZED" in text_:
                out["statements"]["candidates"] = (text_, params)
            elif "FROM index_artifacts" in text_ or "artifact_snapshots" in text_:
                out["statements"]["artifacts"] = (text_, params)

        now = datetime.now(UTC)
        async with sessions() as session:
            index = (await session.execute(select(IndexRow).where(IndexRow.index_uid == info.index_uid))).scalar_one()
            session.expunge(index)
        # Eight flagged windows, as after ingestion: the four newest loaded ones and four from the middle.
        middle = info.first_window + (info.windows // 2) * WINDOW
        flagged = {(info.index_uid, WINDOW, info.first_window + (info.windows - k) * WINDOW) for k in range(1, 5)}
        flagged |= {(info.index_uid, WINDOW, middle + k * WINDOW) for k in range(4)}
        async with sessions() as session:
            await CompactionWindowRepository(session).mark_changed(flagged)
            await session.commit()

        async def incremental() -> None:
            async with sessions() as session:
                await plan_index(session, index, now, window_range=WindowRange(), force_final=False,
                                 create_jobs=False, incremental=True)
                await session.rollback()

        await incremental()
        times = []
        for _ in range(10):
            started = time.perf_counter()
            await incremental()
            times.append(time.perf_counter() - started)
        out["planning"] = latency_summary(times)
        for text_, params in await _captured(engine, incremental):
            if "FROM splits" in text_ and "count(" in text_:
                out["statements"]["planning mature count"] = (text_, params)
            elif "FROM splits" in text_:
                out["statements"]["planning candidates"] = (text_, params)
            elif "FROM compaction_windows" in text_:
                out["statements"]["planning changed windows"] = (text_, params)

        async def gc_page(before: datetime) -> None:
            async with sessions() as session:
                await SplitRepository(session).deletable(before, 1000)
                await session.rollback()

        for label, before in (("gc page of a backlog", now - timedelta(seconds=600)),
                              ("gc pass with nothing to collect", datetime(2000, 1, 1, tzinfo=UTC))):
            captured = await _captured(engine, lambda before=before: gc_page(before))
            out["statements"][label] = next(c for c in captured if "FROM splits" in c[0])

        async def expired() -> None:
            async with sessions() as session:
                await CompactionWindowRepository(session).expired_windows(
                    info.index_uid, int(datetime(2000, 1, 1, tzinfo=UTC).timestamp()))
                await session.rollback()

        captured = await _captured(engine, expired)
        out["statements"]["retention, nothing expired"] = next(c for c in captured if "FROM splits" in c[0])

        timed = {}
        for name, (text_, params) in out["statements"].items():
            raw = await raw_fetch(dsn, text_, params, 20)
            timed[name] = {"sql": text_, "median": raw["median"], "rows": raw["rows"], "explain": raw["explain"]}
        out["statements"] = timed
    finally:
        await engine.dispose()
    return out


async def measure_http(server_url: str, sql: str, runs: int) -> dict[str, Any]:
    http = ExplainClient(server_url, sql)
    try:
        for i in range(5):
            await http.once(unkept_sql(sql, -1 - i))
        seconds, planning = [], []
        for i in range(runs):
            seconds.append(await http.once(unkept_sql(sql, i)))
            planning.append(http.body["planning_ms"] / 1000)
        kept = [await http.once() for _ in range(runs // 4)]
        return {"unkept": latency_summary(seconds), "planning": latency_summary(planning),
                "kept": latency_summary(kept), "files": http.body["total_files"]}
    finally:
        await http.close()


def measure_size(stack: Stack, url: str, storage_root, storage_uri: str, info: ExplainIndex, sql: str, label: str,
                 runs: int) -> dict[str, Any]:
    print(f"[growth] measuring {label} ...", flush=True)
    out: dict[str, Any] = {"label": label}
    env = child_env(url, storage_root, stack.path(f"home-growth-{label}"))
    with api_child("query-api", env, stack.path(f"logs-growth-{label}")) as server:
        out["http"] = asyncio.run(measure_http(server.url, sql, runs))
    out.update(asyncio.run(measure_statements(url, storage_uri, info, sql)))
    print(f"[growth]   {label}: EXPLAIN p50 {out['http']['unkept']['p50'] * 1000:.1f} ms, p99 "
          f"{out['http']['unkept']['p99'] * 1000:.1f} ms; register {out['register']['splits_per_sec']:.0f}/s; "
          f"planning p50 {out['planning']['p50'] * 1000:.1f} ms", flush=True)
    return out


def run(stack: Stack, *, targets: tuple[int, ...], runs: int = HTTP_RUNS) -> dict[str, Any]:
    from strata_metastore import migrate

    base_revision = _before_ours()
    url = stack.create_database("strata_bench_growth")
    # The commit log's capture triggers (migration 0017) would copy every loaded row into its outbox; the bulk
    # loads here must not be logged, and what the log costs a write does not grow with the table: off for this
    # database (a setting nothing reads before 0017).
    asyncio.run(_set_capture_off(url))
    storage_root = stack.path("growth-storage")
    base = targets[0]
    print(f"[growth] loading {base:,} splits over {BASE_DAYS} days ...", flush=True)
    loaded = asyncio.run(load_explain_index(url, storage_root.resolve().as_uri(), base, BASE_DAYS))
    info = ExplainIndex(**loaded["index"])
    sql = explain_sql(info)
    per_window = base // info.windows
    dsn = asyncpg_dsn(url)
    result: dict[str, Any] = {"targets": targets, "load": loaded["timings"], "sql": sql, "sizes": [],
                              "base_revision": base_revision, "per_window": per_window}
    total = base
    for target in targets:
        if target > total:
            print(f"[growth] growing to {target:,} split rows in PostgreSQL ...", flush=True)
            grown = asyncio.run(grow(dsn, info, loaded["storage_uri"], total - base, target - total, per_window))
            total = target
        else:
            grown = {}
        at: dict[str, Any] = {"target": target, "grow": grown}
        started = time.perf_counter()
        migrate.downgrade(url, base_revision)
        at["downgrade_secs"] = time.perf_counter() - started
        asyncio.run(_analyze(dsn))
        at["before"] = measure_size(stack, url, storage_root, loaded["storage_uri"], info, sql, f"{target}-before",
                                    runs)
        started = time.perf_counter()
        migrate.upgrade(url)
        at["upgrade_secs"] = time.perf_counter() - started
        asyncio.run(_analyze(dsn))
        at["after"] = measure_size(stack, url, storage_root, loaded["storage_uri"], info, sql, f"{target}-after", runs)
        at["sizes"] = asyncio.run(sizes(dsn))
        result["sizes"].append(at)
    return result


async def _set_capture_off(url: str) -> None:
    from sqlalchemy.engine import make_url

    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        await conn.execute(f'ALTER DATABASE "{make_url(url).database}" SET strata.capture = \'off\'')
    finally:
        await conn.close()


async def _analyze(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("VACUUM (ANALYZE) splits")
    finally:
        await conn.close()


# --- the section ---------------------------------------------------------------------------------------------

def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _plan_nodes(explain: str) -> str:
    nodes = []
    for line in explain.splitlines():
        stripped = line.strip().lstrip("->").strip()
        if "(cost=" in stripped or "(actual" in stripped:
            name = stripped.split("  (")[0]
            if name not in nodes:
                nodes.append(name)
    return "; ".join(nodes[:4])


def _buffers(explain: str) -> str:
    for line in explain.splitlines():
        if "Buffers:" in line:
            return line.strip().removeprefix("Buffers: ")
    return ""


def render(result: dict[str, Any]) -> str:
    sizes = result["sizes"]
    names = [f"{fmt_int(s['target'])}" for s in sizes]
    lines = [
        "## Metastore growth: the hot statements at " + " and ".join(names) + " split rows",
        "",
        f"One database grown in place (docs in `bench/bench_metastore_growth.py`): bench_query's EXPLAIN index "
        f"({fmt_int(result['targets'][0])} published splits over {BASE_DAYS} days, ~{result['per_window']:,} a "
        "window, 5 statistics rows each, real files and artifacts in the two windows queried), then older history "
        "generated in PostgreSQL at the same density (97% published, 2% marked for deletion, 1% staged). The "
        "query and its candidates are the same at every size. \"before\" is the schema at "
        f"`{result['base_revision']}`, \"after\" at head (alembic downgrade/upgrade on the same rows, one run).",
        "",
        f"Query: `{result['sql']}`",
        "",
    ]
    header = "| measured | " + " | ".join(f"{n} before | {n} after" for n in names) + " |"
    lines += [header, "|---|" + "---|" * (2 * len(sizes))]

    def row(title: str, get) -> None:
        cells = []
        for s in sizes:
            for part in ("before", "after"):
                try:
                    cells.append(get(s[part]))
                except (KeyError, TypeError):
                    cells.append("n/a")
        lines.append(f"| {title} | " + " | ".join(cells) + " |")

    row("EXPLAIN over HTTP, first-time plan, p50", lambda m: _ms(m["http"]["unkept"]["p50"]))
    row("EXPLAIN over HTTP, first-time plan, p99", lambda m: _ms(m["http"]["unkept"]["p99"]))
    row("query-api planning_ms, p50", lambda m: _ms(m["http"]["planning"]["p50"]))
    row("EXPLAIN over HTTP, kept plan, p50", lambda m: _ms(m["http"]["kept"]["p50"]))
    row("registration (metastore side), splits/s", lambda m: f"{m['register']['splits_per_sec']:,.0f}")
    row("registration, repeated batch (idempotent)", lambda m: _ms(m["register"]["again_secs"]))
    row("incremental compaction planning, 8 windows, p50", lambda m: _ms(m["planning"]["p50"]))
    statement_names = list(sizes[0]["after"]["statements"])
    for name in statement_names:
        row(f"statement: {name}, median (rows)",
            lambda m, n=name: f"{_ms(m['statements'][n]['median'])} ({fmt_int(m['statements'][n]['rows'])})")
    lines.append("")
    for s in sizes:
        counts = s["sizes"]["counts"]
        rel = s["sizes"]["relations"]
        grow = s["grow"]
        grown = (f" Grown in {fmt_s(grow['insert_secs'])} (insert) + {fmt_s(grow['restore_secs'])} (indexes) + "
                 f"{fmt_s(grow['vacuum_secs'])} (VACUUM ANALYZE)." if grow else "")
        lines.append(
            f"- **{fmt_int(s['target'])}**: {fmt_int(counts['splits'])} rows, {fmt_int(counts['published'])} "
            f"published, {fmt_int(counts['marked'])} marked for deletion.{grown} Upgrade to head "
            f"{fmt_s(s['upgrade_secs'])}, downgrade {fmt_s(s['downgrade_secs'])}. Sizes: "
            + ", ".join(f"{k} {fmt_bytes(v)}" for k, v in rel.items()) + ".")
    lines += ["", "Plans (nodes; buffers of the top node):", ""]
    lines += ["| statement | " + " | ".join(f"{n} before | {n} after" for n in names) + " |",
              "|---|" + "---|" * (2 * len(sizes))]
    for name in statement_names:
        row(name, lambda m, n=name: f"{_plan_nodes(m['statements'][n]['explain'])} "
                                    f"({_buffers(m['statements'][n]['explain'])})")
    lines += ["", "<details><summary>EXPLAIN (ANALYZE, BUFFERS) at the largest size, before and after</summary>",
              ""]
    last = sizes[-1]
    for name in statement_names:
        for part in ("before", "after"):
            st = last[part]["statements"].get(name)
            if st is None:
                continue
            lines += [f"**{name}, {part}**", "", "```sql", st["sql"].strip(), "```", "", "```", st["explain"],
                      "```", ""]
    lines.append("</details>")
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="split rows, comma-separated, ascending")
    parser.add_argument("--runs", type=int, default=HTTP_RUNS, help="first-time EXPLAINs per measurement")
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    args = parser.parse_args()
    targets = tuple(int(s) for s in args.sizes.split(","))
    outcome: dict[str, Any] = {}

    def section(stack: Stack) -> str:
        outcome["result"] = run(stack, targets=targets, runs=args.runs)
        return render(outcome["result"])

    try:
        run_and_write({SECTION: section}, write=not args.no_write)
    finally:
        if "result" in outcome:
            path = stack_json_path()
            path.write_text(json.dumps(outcome["result"], default=str, indent=1))
            print(f"[growth] raw results in {path}", flush=True)


def stack_json_path():
    from bench.harness import DATA_DIR

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    return DATA_DIR / "metastore_growth.json"


if __name__ == "__main__":
    main()
