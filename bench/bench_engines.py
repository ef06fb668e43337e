"""Query engines: which engine answers a pruned scan, and how fast, side by side in one run.

1. The ten queries of the query benchmark (`bench_query.exec_queries`), end to end through the proxy: Strata
   choosing its engine (the in-process engine for these plans), Strata forced onto Spark, and DuckDB reading the
   same files from a warm connection (its Parquet metadata cached). Runs alternate, so the ratios hold on a noisy
   machine. Goal (issue "Interactive queries"): Strata p50 <= 1.0x DuckDB on every selective query.
2. The engine choice: DuckDB and DataFusion each running the same SQL over the same shaped scan (the plan's row
   groups and columns, already in memory as Arrow), in process, so only the engines differ.
3. The crossover: one GROUP BY over a growing time range (1, 2, 4, ... windows), on the local engine and on
   Spark, with the plan's bytes and rows, to place the local limits.

    .tools/bin/uv run --group bench python -m bench.run engines
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

from bench import bench_query
from bench.bench_query import EXEC_INDEX, WINDOW, api_child, api_keys, child_env, exec_queries

SELECTIVE = ("Q1", "Q2", "Q3", "Q6", "Q8", "Q9")


def _p50(values: list[float]) -> float:
    return statistics.median(values)


def _strata(client: httpx.Client, base: str, sql: str, engine: str | None) -> tuple[float, str]:
    body: dict[str, Any] = {"sql": sql}
    if engine:
        body["engine"] = engine
    started = time.perf_counter()
    response = client.post(base + "/v1/query", json=body, headers={"Accept": "application/json"})
    response.read()
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"query answered {response.status_code}: {response.text[:500]}")
    return seconds, response.headers["x-strata-engine"]


def _duck_timer(paths: list[str]):
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET parquet_metadata_cache = true")

    def run(sql: str) -> float:
        started = time.perf_counter()
        connection.execute(bench_query.duckdb_sql(sql, paths)).fetchall()
        return time.perf_counter() - started
    return run


def _end_to_end(client, proxy_url: str, dataset: dict[str, Any], runs: int, spark_runs: int) -> list[dict]:
    duck = _duck_timer(dataset["paths"])
    out = []
    for query in exec_queries(f'"{EXEC_INDEX}"', dataset["first_window"]):
        sql = query["sql"]
        _strata(client, proxy_url, sql, None)
        _strata(client, proxy_url, sql, "spark")
        duck(sql)
        auto, spark, ducks, engine = [], [], [], ""
        for i in range(runs):
            seconds, engine = _strata(client, proxy_url, sql, None)
            auto.append(seconds)
            ducks.append(duck(sql))
            if i < spark_runs:
                spark.append(_strata(client, proxy_url, sql, "spark")[0])
        entry = {"name": query["name"], "kind": query["kind"], "engine": engine, "auto": _p50(auto),
                 "auto_p99": max(auto), "spark": _p50(spark), "duckdb": _p50(ducks)}
        out.append(entry)
        print(f"[engines] {query['name']}: strata ({engine}) {entry['auto'] * 1000:.1f} ms, spark "
              f"{entry['spark'] * 1000:.0f} ms, duckdb {entry['duckdb'] * 1000:.1f} ms", flush=True)
    return out


def _shaped_scan(plan: dict[str, Any], uri_to_path: dict[str, str]) -> pa.Table:
    columns = [c for c in plan["columns"] if c != "partition_id"]
    tables = [pq.ParquetFile(uri_to_path[f["uri"]]).read_row_groups(f["row_groups"], columns=columns)
              for f in plan["files"]]
    return pa.concat_tables(tables) if tables else None


def _engine_choice(client, query_url: str, dataset: dict[str, Any], runs: int) -> dict[str, Any]:
    import datafusion
    import duckdb

    uri_to_path = {s["uri"]: p for s, p in zip(dataset["splits"], dataset["paths"], strict=True)}
    out = []
    for query in exec_queries(f'"{EXEC_INDEX}"', dataset["first_window"]):
        if "text_match" in query["sql"]:
            continue  # DataFusion's regex functions differ; the engines' comparison needs one SQL for both
        plan = client.post(query_url + "/v1/query/explain", json={"sql": query["sql"]}).json()
        scan = _shaped_scan(plan, uri_to_path)
        if scan is None:
            continue
        sql = query["sql"].replace(f'"{EXEC_INDEX}"', "scan")
        duck = duckdb.connect()
        duck.register("scan", scan)
        context = datafusion.SessionContext()
        context.register_record_batches("scan", [scan.to_batches()])
        timings: dict[str, list[float]] = {"duckdb": [], "datafusion": []}
        duck.execute(sql).to_arrow_table()
        context.sql(sql).to_arrow_table()
        for _ in range(runs):
            started = time.perf_counter()
            duck.execute(sql).to_arrow_table()
            timings["duckdb"].append(time.perf_counter() - started)
            started = time.perf_counter()
            context.sql(sql).to_arrow_table()
            timings["datafusion"].append(time.perf_counter() - started)
        duck.close()
        out.append({"name": query["name"], "rows": scan.num_rows, "duckdb": _p50(timings["duckdb"]),
                    "datafusion": _p50(timings["datafusion"])})
        print(f"[engines] in process {query['name']} ({scan.num_rows:,} rows): duckdb "
              f"{out[-1]['duckdb'] * 1000:.2f} ms, datafusion {out[-1]['datafusion'] * 1000:.2f} ms", flush=True)
    return {"queries": out, "duckdb": duckdb.__version__, "datafusion": datafusion.__version__}


def _crossover(client, query_url: str, dataset: dict[str, Any], windows: int, runs: int) -> list[dict]:
    out = []
    span = 1
    while True:
        lo = dataset["first_window"]
        sql = (f'SELECT service, count(*) AS n, avg(value) AS a FROM "{EXEC_INDEX}" '
               f"WHERE timestamp_secs >= {lo} AND timestamp_secs < {lo + span * WINDOW} GROUP BY service")
        plan = client.post(query_url + "/v1/query/explain", json={"sql": sql}).json()
        timings: dict[str, list[float]] = {"local": [], "spark": []}
        for engine in timings:
            _strata(client, query_url, sql, engine)
        for _ in range(runs):
            for engine in timings:
                timings[engine].append(_strata(client, query_url, sql, engine)[0])
        entry = {"windows": span, "bytes": plan["total_bytes"], "rows": plan["total_rows"],
                 "files": plan["total_files"], "local": _p50(timings["local"]), "spark": _p50(timings["spark"])}
        out.append(entry)
        print(f"[engines] crossover {span} windows ({entry['rows']:,} rows): local {entry['local']:.3f} s, spark "
              f"{entry['spark']:.3f} s", flush=True)
        if span >= windows:
            return out
        span = min(windows, span * 2)


def run(stack, *, rows: int, runs: int, spark_runs: int) -> dict[str, Any]:
    from strata_services.local.processes import free_port
    from strata_services.local.spark_server import LocalSparkConnectServer
    from strata_shared.config import Settings

    url = stack.create_database("strata_bench_engines")
    storage_root = stack.path("engines-storage")
    indexer = stack.start_indexer(url, storage_root)
    print(f"[engines] ingesting {rows:,} rows ...", flush=True)
    dataset = bench_query.ingest_and_index(indexer.base_url, storage_root, rows, 2, 16_384)
    indexer.stop()
    settings = Settings()
    server = LocalSparkConnectServer(free_port(), master=settings.spark_master,
                                     driver_memory=settings.spark_driver_memory, work_dir=stack.path("spark"))
    result: dict[str, Any] = {"rows": dataset["rows"], "files": len(dataset["splits"]),
                              "row_groups": dataset["row_groups"], "data_bytes": dataset["data_bytes"],
                              "runs": runs, "spark_runs": spark_runs}
    keys = api_keys()
    try:
        server.start()
        server.wait_ready(timeout=240)
        env = child_env(url, storage_root, stack.path("home-engines"), server.remote)
        with api_child("query-api", env, stack.path("logs-engines")) as query_api:
            proxy_env = child_env(url, storage_root, stack.path("home-engines-proxy"),
                                  STRATA_QUERY_UPSTREAMS=query_api.url, STRATA_PROXY_RATE_PER_SEC="1000",
                                  STRATA_PROXY_BURST="1000")
            with api_child("proxy", proxy_env, stack.path("logs-engines-proxy")) as proxy, \
                    httpx.Client(headers=keys.header(keys.admin), timeout=600) as client:
                result["end_to_end"] = _end_to_end(client, proxy.url, dataset, runs, spark_runs)
                result["engines"] = _engine_choice(client, query_api.url, dataset, runs)
                result["crossover"] = _crossover(client, query_api.url, dataset, bench_query.EXEC_WINDOWS,
                                                 max(1, spark_runs))
    finally:
        server.stop()
    return result


def render(r: dict[str, Any]) -> str:
    def ms(seconds: float) -> str:
        return f"{seconds * 1000:,.1f} ms"

    lines = ["## Query engines: in-process (DuckDB) vs Spark vs DuckDB over the files", "",
             f"{r['rows']:,} rows in {r['files']} files ({r['row_groups']} row groups, "
             f"{r['data_bytes'] / 1e6:.1f} MB), indexed; the ten queries of the query benchmark. Strata's times are "
             "end to end through the proxy (HTTP, planning, execution, JSON); DuckDB's are a warm in-process "
             f"connection over the same files (metadata cached). Medians of {r['runs']} alternating runs "
             f"({r['spark_runs']} on Spark).", "",
             "| query | kind | engine chosen | Strata p50 | Strata max | Strata on Spark p50 | DuckDB p50 | "
             "Strata / DuckDB |", "|---|---|---|---:|---:|---:|---:|---:|"]
    met = True
    for q in r["end_to_end"]:
        ratio = q["auto"] / q["duckdb"] if q["duckdb"] else float("inf")
        if q["name"] in SELECTIVE:
            met = met and ratio <= 1.0
        lines.append(f"| {q['name']} | {q['kind']} | {q['engine']} | {ms(q['auto'])} | {ms(q['auto_p99'])} | "
                     f"{ms(q['spark'])} | {ms(q['duckdb'])} | {ratio:.2f}x |")
    lines += ["", f"Goal, Strata p50 <= 1.0x DuckDB on the selective queries ({', '.join(SELECTIVE)}): "
                  f"**{'met' if met else 'not met'}**.", "",
              f"### The engine choice: DuckDB {r['engines']['duckdb']} vs DataFusion {r['engines']['datafusion']} "
              "on the same shaped scan (in process, Arrow in memory)", "",
              "| query | scan rows | DuckDB p50 | DataFusion p50 | DataFusion / DuckDB |", "|---|---:|---:|---:|---:|"]
    for q in r["engines"]["queries"]:
        lines.append(f"| {q['name']} | {q['rows']:,} | {q['duckdb'] * 1000:.2f} ms | "
                     f"{q['datafusion'] * 1000:.2f} ms | {q['datafusion'] / q['duckdb']:.2f}x |")
    lines += ["", "### Crossover: one GROUP BY over a growing time range, local engine vs Spark (direct to query-api)",
              "", "| windows | files | rows | bytes read | local p50 | Spark p50 | Spark / local |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    for c in r["crossover"]:
        lines.append(f"| {c['windows']} | {c['files']} | {c['rows']:,} | {c['bytes'] / 1e6:.1f} MB | "
                     f"{ms(c['local'])} | {ms(c['spark'])} | {c['spark'] / c['local']:.2f}x |")
    return "\n".join(lines)
