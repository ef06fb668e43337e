"""Benchmark 3: the split table at 1,000,000 rows: the three lookups the services make, with their plans.

The table (schema from the Alembic migrations) is filled with COPY through asyncpg: 1 index, 50 partitions,
windows of 900 s over 10 days (~1,040 splits per window, rows in window order as they would arrive), states
70% published, 18% deleted, 10% marked_for_deletion, 2% staged. split_column_stats stays empty. Then VACUUM
ANALYZE, and for each query EXPLAIN (ANALYZE, BUFFERS) once and the latency (median of 20 executions through
asyncpg, rows fetched):

  (a) splits of index X, state published, window range of one hour;
  (b) splits overlapping a 15-minute time range T (GiST on int8range(time_range_start, time_range_end, '[]'));
  (c) a page (limit 101) of the GET listing order (index_uid, window_start, split_id) after a keyset cursor,
      with the SQL that SplitRepository.list_page generates (captured from SQLAlchemy), at the start, middle
      and end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from datetime import UTC, datetime
from typing import Any

import asyncpg
from sqlalchemy import event
from ulid import ULID

from bench.common import fmt_bytes, fmt_int, fmt_ms, fmt_s, median
from bench.harness import Stack, asyncpg_dsn

SECTION = "metastore"
WINDOW = 900
SORT_SCHEMA = "metric_name,service,host,timestamp_secs@v1"
DOC_MAPPING_UID = "c286fb2cc47564d4"
STATES = (("published", 0.70), ("deleted", 0.18), ("marked_for_deletion", 0.10), ("staged", 0.02))
COLUMNS = (
    "split_id",
    "index_uid",
    "source_id",
    "partition_id",
    "doc_mapping_uid",
    "sort_schema",
    "window_start",
    "window_duration_secs",
    "time_range_start",
    "time_range_end",
    "num_rows",
    "size_bytes",
    "uri",
    "row_groups",
    "num_merge_ops",
    "generation",
    "root_split_ids",
    "state",
    "created_at",
    "updated_at",
    "published_at",
    "marked_for_deletion_at",
)
REPEATS = 20


def _records(
    index_uid: str,
    incarnation: str,
    first_window: int,
    windows: int,
    total: int,
    begin: int,
    end: int,
    rng: random.Random,
) -> list[tuple]:
    state_names = [s for s, _ in STATES]
    state_weights = [w for _, w in STATES]
    out = []
    for i in range(begin, end):
        window_start = first_window + (i * windows // total) * WINDOW
        created = window_start + WINDOW + rng.randint(0, 600)
        split_id = str(ULID.from_timestamp(created + rng.random()))
        state = rng.choices(state_names, state_weights)[0]
        num_rows = rng.randint(10_000, 2_000_000)
        size_bytes = num_rows * 12
        stamp = datetime.fromtimestamp(created, UTC)
        out.append(
            (
                split_id,
                index_uid,
                "ingest-api",
                f"tenant-{rng.randrange(50):02d}",
                DOC_MAPPING_UID,
                SORT_SCHEMA,
                window_start,
                WINDOW,
                window_start + rng.randint(0, 300),
                window_start + rng.randint(600, WINDOW - 1),
                num_rows,
                size_bytes,
                f"file:///var/lib/strata/data/indexes/bench-metastore/{incarnation}/splits/{split_id}.parquet",
                json.dumps(
                    [
                        {
                            "row_offset": 0,
                            "num_rows": num_rows,
                            "byte_offset": 4,
                            "byte_length": size_bytes - 2048,
                        }
                    ]
                ),
                rng.choice((0, 0, 0, 1, 2)),
                0,
                [split_id],
                state,
                stamp,
                stamp,
                stamp if state != "staged" else None,
                stamp if state in ("marked_for_deletion", "deleted") else None,
            )
        )
    return out


async def fill(dsn: str, total: int, days: int, seed: int = 7) -> dict[str, Any]:
    incarnation = str(ULID())
    index_uid = f"bench-metastore:{incarnation}"
    now = int(time.time())
    windows = days * 86_400 // WINDOW
    first_window = now - now % WINDOW - windows * WINDOW
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ($1, 'bench-metastore', $2, '{}'::jsonb, $3, 1)",
            index_uid,
            incarnation,
            DOC_MAPPING_UID,
        )
        rng = random.Random(seed)
        started = time.perf_counter()
        copy_secs = 0.0
        chunk = 50_000
        for begin in range(0, total, chunk):
            records = _records(
                index_uid, incarnation, first_window, windows, total, begin, min(total, begin + chunk), rng
            )
            copy_started = time.perf_counter()
            await conn.copy_records_to_table("splits", records=records, columns=COLUMNS)
            copy_secs += time.perf_counter() - copy_started
        load_secs = time.perf_counter() - started
        started = time.perf_counter()
        await conn.execute("VACUUM (ANALYZE) splits")
        vacuum_secs = time.perf_counter() - started
        sizes = await conn.fetch(
            "SELECT c.relname AS name, pg_relation_size(c.oid) AS bytes FROM pg_class c "
            "WHERE c.oid = 'splits'::regclass OR c.oid IN (SELECT indexrelid FROM pg_index "
            "WHERE indrelid = 'splits'::regclass) ORDER BY c.relname"
        )
        settings = await conn.fetch(
            "SELECT name, current_setting(name) AS value FROM pg_settings WHERE name IN "
            "('shared_buffers', 'work_mem', 'effective_cache_size', 'random_page_cost', "
            "'jit')"
        )
    finally:
        await conn.close()
    return {
        "index_uid": index_uid,
        "first_window": first_window,
        "windows": windows,
        "load_secs": load_secs,
        "copy_secs": copy_secs,
        "vacuum_secs": vacuum_secs,
        "sizes": [(r["name"], r["bytes"]) for r in sizes],
        "pg_settings": {r["name"]: r["value"] for r in settings},
    }


async def capture_list_page_sql(
    url: str, index_uid: str, states: tuple[str, ...], after: tuple[int, str] | None, limit: int
) -> tuple[str, tuple]:
    """The exact SQL (and parameters) SplitRepository.list_page sends for this page."""
    from strata_core.domain.split import SplitState
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.repositories import SplitFilter, SplitRepository

    engine = create_engine(url)
    captured: list[tuple[str, tuple]] = []

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _capture(_conn, _cursor, statement, parameters, _context, _many):  # noqa: ANN001
        captured.append((statement, tuple(parameters)))

    try:
        async with session_factory(engine)() as session:
            flt = SplitFilter(index_uid=index_uid, states=tuple(SplitState(s) for s in states))
            try:
                await SplitRepository(session).list_page(flt, limit=limit, after=after)
            except Exception:  # noqa: BLE001 - only the SQL matters here, not mapping the rows
                if not captured:
                    raise
    finally:
        await engine.dispose()
    selects = [c for c in captured if c[0].lstrip().upper().startswith("SELECT") and "FROM splits" in c[0]]
    if not selects:
        raise RuntimeError(f"no splits SELECT captured: {captured}")
    return selects[0]


def _walk(plan: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [plan]
    for child in plan.get("Plans", []):
        nodes.extend(_walk(child))
    return nodes


def _plan_summary(plan: dict[str, Any]) -> str:
    parts = []
    for node in _walk(plan):
        name = node["Node Type"]
        if node.get("Index Name"):
            name += f" on {node['Index Name']}"
        if name not in parts:
            parts.append(name)
    return " → ".join(parts)


def _literal(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "NULL"}[value]
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


async def _generic_plan(conn: asyncpg.Connection, sql: str, params: tuple) -> dict[str, Any] | None:
    """The plan PostgreSQL uses once it switches a prepared statement to a generic plan (asyncpg and
    SQLAlchemy keep statements prepared), with its execution time: PREPARE + EXPLAIN ANALYZE EXECUTE under
    plan_cache_mode=force_generic_plan."""
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await conn.execute(f"PREPARE bench_generic AS {sql}")
            try:
                arguments = f"({', '.join(_literal(p) for p in params)})" if params else ""
                raw = await conn.fetchval(
                    f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE bench_generic{arguments}"
                )
            finally:
                await conn.execute("DEALLOCATE bench_generic")
    except asyncpg.PostgresError as exc:
        return {"plan": f"n/a ({exc.__class__.__name__})", "execution_ms": None}
    explained = (json.loads(raw) if isinstance(raw, str) else raw)[0]
    return {"plan": _plan_summary(explained["Plan"]), "execution_ms": explained.get("Execution Time")}


async def measure(conn: asyncpg.Connection, sql: str, params: tuple) -> dict[str, Any]:
    for _ in range(3):
        rows = await conn.fetch(sql, *params)
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        rows = await conn.fetch(sql, *params)
        times.append(time.perf_counter() - started)
    raw = await conn.fetchval("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, *params)
    explained = (json.loads(raw) if isinstance(raw, str) else raw)[0]
    text = "\n".join(r[0] for r in await conn.fetch("EXPLAIN (ANALYZE, BUFFERS) " + sql, *params))
    generic = await _generic_plan(conn, sql, params)
    top = explained["Plan"]
    return {
        "rows": len(rows),
        "median": median(times),
        "p_max": max(times),
        "execution_ms": explained.get("Execution Time"),
        "planning_ms": explained.get("Planning Time"),
        "plan": _plan_summary(top),
        "generic_plan": generic,
        "shared_hit": top.get("Shared Hit Blocks", 0),
        "shared_read": top.get("Shared Read Blocks", 0),
        "text": text,
    }


async def run_queries(url: str, info: dict[str, Any], total: int) -> list[dict[str, Any]]:
    dsn = asyncpg_dsn(url)
    index_uid = info["index_uid"]
    hour = info["first_window"] + (info["windows"] // 2) * WINDOW
    hour -= hour % 3600
    t0 = hour + 450
    t1 = t0 + WINDOW
    conn = await asyncpg.connect(dsn)
    queries: list[dict[str, Any]] = []
    try:

        async def cursor_at(offset: int) -> tuple[int, str]:
            row = await conn.fetchrow(
                "SELECT window_start, split_id FROM splits WHERE index_uid = $1 "
                "ORDER BY window_start, split_id OFFSET $2 LIMIT 1",
                index_uid,
                offset,
            )
            return row["window_start"], row["split_id"]

        def add(key: str, title: str, sql: str, params: tuple, note: str = "") -> None:
            queries.append({"key": key, "title": title, "sql": sql, "params": params, "note": note})

        add(
            "a",
            "(a) index X, published, windows of one hour",
            "SELECT * FROM splits WHERE index_uid = $1 AND state = 'published' "
            "AND window_start >= $2 AND window_start < $3",
            (index_uid, hour, hour + 3600),
        )
        add(
            "b",
            "(b) overlapping a 15-minute range (as asked: range overlap only)",
            "SELECT * FROM splits WHERE index_uid = $1 "
            "AND int8range(time_range_start, time_range_end, '[]') && int8range($2, $3, '[]')",
            (index_uid, t0, t1),
        )
        add(
            "b2",
            "(b') same, published only",
            "SELECT * FROM splits WHERE index_uid = $1 AND state = 'published' "
            "AND int8range(time_range_start, time_range_end, '[]') && int8range($2, $3, '[]')",
            (index_uid, t0, t1),
        )
        add(
            "b3",
            "(b'') same, published, plus a window bound (window_start in (t0 - 3600, t1])",
            "SELECT * FROM splits WHERE index_uid = $1 AND state = 'published' "
            "AND window_start > $2::bigint - 3600 AND window_start <= $3 "
            "AND int8range(time_range_start, time_range_end, '[]') && int8range($2, $3, '[]')",
            (index_uid, t0, t1),
            note="3600 s is the largest valid window, so the bound never drops a split",
        )
        for label, offset in (
            ("first page", None),
            ("cursor at the middle", total // 2),
            ("cursor near the end", total - total // 20),
        ):
            after = None if offset is None else await cursor_at(offset)
            sql, params = await capture_list_page_sql(url, index_uid, (), after, 101)
            add(
                f"c-{label}",
                f"(c) listing page, all states, {label} (SplitRepository.list_page SQL)",
                sql,
                params,
            )
        mid = await cursor_at(total // 2)
        sql, params = await capture_list_page_sql(url, index_uid, ("published",), mid, 101)
        add(
            "c-published-mid",
            "(c) listing page, state=published, cursor at the middle (list_page SQL)",
            sql,
            params,
        )
        late = await cursor_at(total - total // 20)
        for label, cursor in (("middle", mid), ("near the end", late)):
            add(
                f"c-rowcmp-{label}",
                f"(c') same page with a row comparison, all states, cursor {label} (alternative SQL)",
                "SELECT * FROM splits WHERE index_uid = $1 AND (window_start, split_id) > ($2, $3) "
                "ORDER BY window_start, split_id LIMIT 101",
                (index_uid, cursor[0], cursor[1]),
            )
        for query in queries:
            query.update(await measure(conn, query["sql"], query["params"]))
    finally:
        await conn.close()
    return queries


def run(stack: Stack, *, splits: int = 1_000_000, days: int = 10) -> dict[str, Any]:
    url = stack.create_database("strata_bench_metastore")
    info = asyncio.run(fill(asyncpg_dsn(url), splits, days))
    queries = asyncio.run(run_queries(url, info, splits))
    return {"splits": splits, "days": days, "info": info, "queries": queries}


def _generic_text(generic: dict[str, Any] | None) -> str:
    if not generic:
        return "n/a"
    if generic["execution_ms"] is None:
        return generic["plan"]
    return f"{generic['plan']} ({generic['execution_ms']:.2f} ms)"


def _params_text(params: tuple) -> str:
    return ", ".join(repr(p) for p in params)


def render(result: dict[str, Any]) -> str:
    info = result["info"]
    table_bytes = sum(b for name, b in info["sizes"] if name == "splits")
    lines = [
        f"## Metastore: lookups on {fmt_int(result['splits'])} split rows",
        "",
        f"{fmt_int(result['splits'])} synthetic rows in `splits` (schema from the Alembic migrations): 1 "
        "index, 50 "
        f"partitions, {fmt_int(info['windows'])} windows of {WINDOW} s over {result['days']} days "
        f"(~{result['splits'] // info['windows']:,} splits per window, inserted in window order), states "
        + ", ".join(f"{int(w * 100)}% {s}" for s, w in STATES)
        + ". `split_column_stats` is left empty. Loaded with asyncpg COPY in "
        f"{fmt_s(info['load_secs'])} (of which COPY {fmt_s(info['copy_secs'])}), then `VACUUM (ANALYZE)` in "
        f"{fmt_s(info['vacuum_secs'])}. Latency is the median of {REPEATS} executions through asyncpg "
        "(prepared "
        "statement, all rows fetched) after 3 warm-ups; execution time and buffers come from one "
        "`EXPLAIN (ANALYZE, BUFFERS)` after them.",
        "",
        "| query | rows | median latency (max) | EXPLAIN execution | plan (custom, with these parameters) | "
        "generic plan (EXPLAIN ANALYZE execution) | shared buffers hit/read |",
        "|---|---|---|---|---|---|---|",
    ]
    for q in result["queries"]:
        lines.append(
            f"| {q['title']} | {fmt_int(q['rows'])} | {fmt_ms(q['median'])} ({fmt_ms(q['p_max'])}) | "
            f"{q['execution_ms']:.2f} ms | {q['plan']} | {_generic_text(q['generic_plan'])} | "
            f"{fmt_int(q['shared_hit'])} / {fmt_int(q['shared_read'])} |"
        )
    lines += [
        "",
        "Sizes: "
        + ", ".join(f"{name} {fmt_bytes(b)}" for name, b in info["sizes"])
        + f" (table {fmt_bytes(table_bytes)}). PostgreSQL settings: "
        + ", ".join(f"{k}={v}" for k, v in sorted(info["pg_settings"].items()))
        + ".",
        "",
        "<details><summary>SQL and EXPLAIN (ANALYZE, BUFFERS) of each query</summary>",
        "",
    ]
    for q in result["queries"]:
        lines += [
            f"**{q['title']}**" + (f" ({q['note']})" if q["note"] else ""),
            "",
            "```sql",
            q["sql"],
            f"-- parameters: {_params_text(q['params'])}",
            "```",
            "",
            "```",
            q["text"],
            "```",
            "",
        ]
    lines.append("</details>")
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=10)
    parser.add_argument(
        "--no-write", action="store_true", help="print the section instead of updating the docs"
    )
    args = parser.parse_args()
    run_and_write(
        {SECTION: lambda stack: render(run(stack, splits=args.splits, days=args.days))},
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
