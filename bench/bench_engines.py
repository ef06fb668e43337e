"""Query engines: which engine answers a pruned scan, and how fast, side by side in one run.

1. The ten queries of the query benchmark (`bench_query.exec_queries`), end to end through the proxy: Strata
   choosing its engine (the in-process engine for these plans), Strata forced onto Spark, and DuckDB reading the
   same files from a warm connection (its Parquet metadata cached). Runs alternate, so the ratios hold on a noisy
   machine. Goal (issue "Interactive queries"): Strata p50 <= 1.0x DuckDB on every selective query. Strata is
   timed two ways: repeated, as a dashboard repeats a query (answered from the result query-api kept from its first
   run, while the index's published files are unchanged), and run every time (`Cache-Control: no-cache`).
2. The engine choice: DuckDB and DataFusion each running the same SQL over the same shaped scan (the plan's row
   groups and columns, already in memory as Arrow), in process, so only the engines differ.
3. The crossover: one GROUP BY over a growing time range (1, 2, 4, ... windows), on the local engine and on
   Spark, with the plan's bytes and rows, to place the local limits.
4. Background work: the selective queries idle, then while merges of 4M rows (two merges of 2M rows, 16 splits
   each, `strata_jobs.spark_merge.submit_merges` in a loop from another Spark Connect session) hold the server's
   slots, then idle again. Goal: p50 within 1.5x of idle.
5. A noisy tenant: 64 clients (threads of a niced process of their own) flood EXPLAIN through a proxy with its
   default limits while a quiet tenant sends one query every half second; the quiet tenant's p50 idle vs under
   the flood. Goal: within 2x.
6. `strata demo`'s five queries (`strata_services.demo`: its index settings, rows and SQL), end to end through
   the proxy vs DuckDB over the same files from a warm connection, alternating. The demo's rows are ingested in one
   batch, so each window is one sorted file as after the demo's compaction, with the artifacts its index names.
   Goal (issue "Interactive queries"): each under 50 ms, and <= 1.0x DuckDB on the selective ones (those whose
   plan reads fewer row groups than the index holds).
   Timed repeated and run every time, as in part 1.
7. A heavy scan: more rows ingested into the same index (16M in all, without artifacts: no predicate to prune
   with), then one GROUP BY over every row on the local engine and on Spark, to place the crossover beyond the
   3M rows of part 3.

Parts 3, 4, 5 and 7 measure engines, load and fairness, so every query there runs (`Cache-Control: no-cache`).

    .tools/bin/uv run --group bench python -m bench.run engines
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq

from bench import bench_query
from bench.bench_query import EXEC_INDEX, WINDOW, api_child, api_keys, child_env, exec_queries
from bench.harness import QUIET_TENANT

SELECTIVE = ("Q1", "Q2", "Q3", "Q6", "Q8", "Q9")
FRESH = {"Cache-Control": "no-cache"}


def _p50(values: list[float]) -> float:
    return statistics.median(values)


def _strata(client: httpx.Client, base: str, sql: str, engine: str | None, *, fresh: bool = False
            ) -> tuple[float, str, str]:
    """Seconds, engine and result-cache outcome of one query. `fresh`: run on the engine (`Cache-Control:
    no-cache`), never answered from the result kept from an earlier run; the parts measuring an engine, load or
    fairness use it."""
    body: dict[str, Any] = {"sql": sql}
    if engine:
        body["engine"] = engine
    headers = {"Accept": "application/json", **FRESH} if fresh else {"Accept": "application/json"}
    started = time.perf_counter()
    response = client.post(base + "/v1/query", json=body, headers=headers)
    response.read()
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"query answered {response.status_code}: {response.text[:500]}")
    expected = "bypass" if fresh else "hit"
    if response.headers["x-strata-result-cache"] not in (expected, "miss"):
        raise RuntimeError(f"a {'fresh' if fresh else 'repeated'} query's result came from "
                           f"{response.headers['x-strata-result-cache']!r}")
    return seconds, response.headers["x-strata-engine"], response.headers["x-strata-result-cache"]


def _duck_timer(paths: list[str], table: str = f'"{EXEC_INDEX}"'):
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET parquet_metadata_cache = true")

    def run(sql: str) -> float:
        started = time.perf_counter()
        connection.execute(bench_query.duckdb_sql(sql, paths, table)).fetchall()
        return time.perf_counter() - started
    return run


def _flight_timer(flight_url: str, key: str, fresh: bool = True):
    """Times a query over Arrow Flight SQL as a notebook sends it (the ADBC driver's DB-API cursor, one kept
    connection, as DuckDB's is), run every time (`cache-control: no-cache` on every call) unless `fresh` is False
    (then answered from the kept result: the door's own cost). Returns the timer and the connection's close."""
    import adbc_driver_flightsql
    import adbc_driver_flightsql.dbapi as flight_sql

    options = {adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {key}"}
    if fresh:
        options["adbc.flight.sql.rpc.call_header.cache-control"] = "no-cache"
    connection = flight_sql.connect(flight_url, autocommit=True, db_kwargs=options)

    def run(sql: str) -> float:
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(sql)
            cursor.fetch_arrow_table()
        return time.perf_counter() - started
    return run, connection.close


def _end_to_end(client, proxy_url: str, dataset: dict[str, Any], runs: int, spark_runs: int,
                flight_url: str) -> list[dict]:
    duck = _duck_timer(dataset["paths"])
    flight, close_flight = _flight_timer(flight_url, api_keys().noisy)
    out = []
    for query in exec_queries(f'"{EXEC_INDEX}"', dataset["first_window"]):
        sql = query["sql"]
        _strata(client, proxy_url, sql, None)
        if spark_runs:
            _strata(client, proxy_url, sql, "spark", fresh=True)
        duck(sql)
        flight(sql)
        auto, fresh, spark, ducks, flights, engine, hits = [], [], [], [], [], "", 0
        for i in range(runs):
            seconds, engine, outcome = _strata(client, proxy_url, sql, None)
            hits += outcome == "hit"
            auto.append(seconds)
            fresh.append(_strata(client, proxy_url, sql, None, fresh=True)[0])
            flights.append(flight(sql))
            ducks.append(duck(sql))
            if i < spark_runs:
                spark.append(_strata(client, proxy_url, sql, "spark", fresh=True)[0])
        entry = {"name": query["name"], "kind": query["kind"], "engine": engine, "auto": _p50(auto),
                 "auto_p99": max(auto), "hits": hits, "fresh": _p50(fresh), "fresh_max": max(fresh),
                 "spark": _p50(spark) if spark else float("nan"), "flight": _p50(flights),
                 "flight_max": max(flights),
                 "duckdb": _p50(ducks)}
        out.append(entry)
        print(f"[engines] {query['name']}: strata ({engine}) repeated {entry['auto'] * 1000:.1f} ms, run "
              f"{entry['fresh'] * 1000:.1f} ms, flight sql run {entry['flight'] * 1000:.1f} ms, spark "
              f"{entry['spark'] * 1000:.0f} ms, duckdb {entry['duckdb'] * 1000:.1f} ms", flush=True)
    close_flight()
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


def _local_vs_spark(client, query_url: str, sql: str, runs: int) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """The query's plan, and its times forced onto each engine: one warm-up each, then `runs` alternating."""
    plan = client.post(query_url + "/v1/query/explain", json={"sql": sql}).json()
    timings: dict[str, list[float]] = {"local": [], "spark": []}
    for engine in timings:
        _strata(client, query_url, sql, engine, fresh=True)
    for _ in range(runs):
        for engine in timings:
            timings[engine].append(_strata(client, query_url, sql, engine, fresh=True)[0])
    return plan, timings


def _crossover(client, query_url: str, dataset: dict[str, Any], windows: int, runs: int) -> list[dict]:
    out = []
    span = 1
    while True:
        lo = dataset["first_window"]
        sql = (f'SELECT service, count(*) AS n, avg(value) AS a FROM "{EXEC_INDEX}" '
               f"WHERE timestamp_secs >= {lo} AND timestamp_secs < {lo + span * WINDOW} GROUP BY service")
        plan, timings = _local_vs_spark(client, query_url, sql, runs)
        entry = {"windows": span, "bytes": plan["total_bytes"], "rows": plan["total_rows"],
                 "files": plan["total_files"], "local": _p50(timings["local"]), "spark": _p50(timings["spark"])}
        out.append(entry)
        print(f"[engines] crossover {span} windows ({entry['rows']:,} rows): local {entry['local']:.3f} s, spark "
              f"{entry['spark']:.3f} s", flush=True)
        if span >= windows:
            return out
        span = min(windows, span * 2)


def _ingest_quiet_tenant(indexer_url: str, rows: int, first_window: int) -> int:
    """The quiet tenant's own rows, in its own partition of the same index."""
    keys = api_keys()
    table = bench_query.exec_table(rows, 0, first_window, seed=4242)
    response = httpx.post(f"{indexer_url}/v1/indexes/{EXEC_INDEX}/ingest", params={"partition_id": QUIET_TENANT},
                          content=bench_query._ipc_bytes(table), timeout=600,
                          headers={**keys.header(keys.writer), "Content-Type": bench_query.ARROW_STREAM})
    if response.status_code != 200:
        raise RuntimeError(f"quiet tenant ingest answered {response.status_code}: {response.text[:500]}")
    return table.num_rows


class BackgroundMerges:
    """Merges looping on the server from their own Spark Connect session, as the planner's workers submit them."""

    def __init__(self, remote: str, datasets: list[list[Any]], workdir: Any) -> None:
        import threading

        self.remote, self.datasets, self.workdir = remote, datasets, workdir
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="background-merges", daemon=True)
        self.merges = 0
        self.rows = 0
        self.error: BaseException | None = None
        self.started = threading.Event()

    def _loop(self) -> None:
        from pyspark.sql.connect.session import SparkSession

        from bench.bench_merge import merge_spec
        from strata_jobs.spark_merge import submit_merges

        spark = SparkSession.builder.remote(self.remote).create()
        try:
            round_ = 0
            while not self.stop_event.is_set():
                round_ += 1
                specs = [merge_spec(paths, self.workdir / f"merge-{round_}-{i}", f"bg-{round_}-{i}")
                         for i, paths in enumerate(self.datasets)]
                self.started.set()
                outcomes = submit_merges(spark, specs, f"bench-background-{round_}")
                failed = [o.error for o in outcomes if o.error]
                if failed:
                    raise RuntimeError(f"background merge failed: {failed[0]}")
                self.merges += len(outcomes)
                self.rows += sum(o.result.output_rows for o in outcomes if o.result)
        except BaseException as error:  # reported by stop(): a bench without load would measure nothing
            self.error = error
        finally:
            spark.stop()

    def __enter__(self) -> BackgroundMerges:
        self.thread.start()
        self.started.wait(timeout=120)
        time.sleep(3.0)  # the merge tasks are running, not just submitted
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        self.thread.join(timeout=600)
        if self.error is not None:
            raise RuntimeError("the background merges did not run") from self.error


def _during_compaction(client, proxy_url: str, dataset: dict[str, Any], remote: str, merge_sets: list,
                       workdir: Any, runs: int, spark_runs: int) -> dict[str, Any]:
    queries = [q for q in exec_queries(f'"{EXEC_INDEX}"', dataset["first_window"]) if q["name"] in SELECTIVE]

    def block() -> dict[str, dict[str, list[float]]]:
        out: dict[str, dict[str, list[float]]] = {}
        for _ in range(runs):
            for q in queries:
                out.setdefault(q["name"], {"auto": [], "spark": []})["auto"].append(
                    _strata(client, proxy_url, q["sql"], None, fresh=True)[0])
        for _ in range(spark_runs):
            out[queries[0]["name"]]["spark"].append(
                _strata(client, proxy_url, queries[0]["sql"], "spark", fresh=True)[0])
        return out

    block()  # warm
    before = block()
    with BackgroundMerges(remote, merge_sets, workdir) as merges:
        busy = block()
    after = block()
    result = {"queries": [], "merges": merges.merges, "merged_rows": merges.rows}
    for q in queries:
        idle = before[q["name"]]["auto"] + after[q["name"]]["auto"]
        entry = {"name": q["name"], "idle": _p50(idle), "busy": _p50(busy[q["name"]]["auto"])}
        if before[q["name"]]["spark"]:
            entry["spark_idle"] = _p50(before[q["name"]]["spark"] + after[q["name"]]["spark"])
            entry["spark_busy"] = _p50(busy[q["name"]]["spark"])
        result["queries"].append(entry)
        print(f"[engines] during compaction {q['name']}: idle {entry['idle'] * 1000:.1f} ms, busy "
              f"{entry['busy'] * 1000:.1f} ms", flush=True)
    return result


def _flood_process(proxy_url: str, key: str, sql: str, flooders: int, stop: Any, statuses: Any) -> None:
    """The noisy tenant's clients, in a process of their own: in the bench's process their threads would hold the
    GIL the quiet tenant's client needs, and the measure would be of the bench. Niced, as clients on other
    machines would not take this machine's CPU from the stack."""
    import os
    import threading

    os.nice(10)
    lock = threading.Lock()
    counts: dict[int, int] = {}

    def flood() -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as noisy:
            while not stop.is_set():
                code = noisy.post(proxy_url + "/v1/query/explain", json={"sql": sql}).status_code
                with lock:
                    counts[code] = counts.get(code, 0) + 1

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(flooders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses.update(counts)


def _cpu_secs(pid: int) -> float:
    """User + system CPU seconds a process has used (its threads included)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy_secs() -> float:
    """CPU seconds the whole machine has been busy (every core, idle and iowait excluded)."""
    import os

    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _quiet_tenant(proxy, query_api, dataset: dict[str, Any], samples: int, flooders: int) -> dict[str, Any]:
    import multiprocessing

    proxy_url = proxy.url

    keys = api_keys()
    lo = dataset["first_window"]
    quiet_sql = (f'SELECT service, count(*) AS n FROM "{EXEC_INDEX}" WHERE timestamp_secs >= {lo} '
                 f"AND timestamp_secs < {lo + WINDOW} GROUP BY service")
    noisy_sql = f'SELECT count(*) FROM "{EXEC_INDEX}" WHERE host = \'{bench_query.host_name(7)}\''

    def quiet_samples(client: httpx.Client) -> tuple[list[float], list[float]]:
        """(through the proxy, straight to query-api), alternating: the second tells the proxy's share."""
        out: tuple[list[float], list[float]] = ([], [])
        for _ in range(samples):
            for base, times in ((proxy_url, out[0]), (query_api.url, out[1])):
                started = time.perf_counter()
                response = client.post(base + "/v1/query", json={"sql": quiet_sql},
                                       headers={"Accept": "application/json", **FRESH})
                times.append(time.perf_counter() - started)
                if response.status_code != 200:
                    raise RuntimeError(f"the quiet tenant's query answered {response.status_code}: "
                                       f"{response.text}")
                time.sleep(0.25)
        return out

    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, httpx.Client(headers=keys.header(keys.quiet), timeout=60) as quiet:
        quiet_samples(quiet)  # warm
        idle, idle_direct = quiet_samples(quiet)
        stop, statuses = manager.Event(), manager.dict()
        flooder = context.Process(target=_flood_process,
                                  args=(proxy_url, keys.noisy, noisy_sql, flooders, stop, statuses))
        started = time.perf_counter()
        flooder.start()
        try:
            time.sleep(3.0)  # the flood is under way
            pids = {"proxy": proxy.pid, "query-api": query_api.pid, "flood": flooder.pid}
            cpu_before = {name: _cpu_secs(pid) for name, pid in pids.items()}
            machine_before = _machine_busy_secs()
            sampled = time.perf_counter()
            flooded, flooded_direct = quiet_samples(quiet)
            window = time.perf_counter() - sampled
            cpu = {name: (_cpu_secs(pid) - cpu_before[name]) / window for name, pid in pids.items()}
            cpu["machine"] = (_machine_busy_secs() - machine_before) / window
        finally:
            stop.set()
            flooder.join(timeout=120)
            if flooder.is_alive():
                flooder.kill()
        elapsed = time.perf_counter() - started
        counts = dict(statuses)
    result = {"idle": _p50(idle), "idle_max": max(idle), "flood": _p50(flooded), "flood_max": max(flooded),
              "idle_direct": _p50(idle_direct), "flood_direct": _p50(flooded_direct),
              "samples": samples, "flooders": flooders, "statuses": counts, "flood_secs": elapsed, "cpu": cpu}
    print(f"[engines] quiet tenant: idle {result['idle'] * 1000:.1f} ms, under flood {result['flood'] * 1000:.1f} "
          f"ms (direct to query-api {result['idle_direct'] * 1000:.1f} / {result['flood_direct'] * 1000:.1f} ms); "
          f"flood answered {counts}; cores busy during the flood {cpu}", flush=True)
    return result


DEMO_WINDOWS = 3
DEMO_ROWS_PER_WINDOW = 100_000  # `strata demo`'s defaults


def _ingest_demo(indexer_url: str, storage_root: Path, windows: int, rows_per_window: int) -> dict[str, Any]:
    """`strata demo`'s index and rows, with their artifacts published; the files' paths and the queries' `now`."""
    from strata_core.domain.index_config import IndexSettings
    from strata_core.storage import ObjectStore
    from strata_services.demo import DEMO_INDEX, demo_batches, demo_index_config

    keys = api_keys()
    now = int(time.time())
    config = demo_index_config(now)
    storage = ObjectStore(storage_root.resolve().as_uri())
    splits: list[dict[str, Any]] = []
    with httpx.Client(base_url=indexer_url, timeout=600) as client:
        created = client.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
        if created.status_code != 201:
            raise RuntimeError(f"demo index creation answered {created.status_code}: {created.text[:500]}")
        for table in demo_batches(now, windows, rows_per_window, 1):
            response = client.post(f"/v1/indexes/{DEMO_INDEX}/ingest", content=bench_query._ipc_bytes(table),
                                   headers={**keys.header(keys.writer), "Content-Type": bench_query.ARROW_STREAM})
            if response.status_code != 200:
                raise RuntimeError(f"demo ingest answered {response.status_code}: {response.text[:500]}")
            splits.extend(response.json()["splits"])
        timings = {"artifacts_build": 0.0, "artifacts_register": 0.0}
        settings = IndexSettings.model_validate({k: v for k, v in config.items() if k != "index_id"})
        bench_query.publish_artifacts(client, storage, DEMO_INDEX, created.json()["incarnation"], settings, splits,
                                      timings)
    paths = [storage.resolve(s["uri"]) for s in splits]
    footers = [pq.read_metadata(p) for p in paths]
    return {"now": now, "paths": paths, "files": len(paths), "rows": sum(f.num_rows for f in footers),
            "row_groups": sum(f.num_row_groups for f in footers), "windows": windows}


def _demo_queries(client, proxy_url: str, query_url: str, demo: dict[str, Any], runs: int,
                  flight_url: str) -> dict[str, Any]:
    from strata_services.demo import TABLE, demo_queries

    duck = _duck_timer(demo["paths"], TABLE)
    flight, close_flight = _flight_timer(flight_url, api_keys().noisy)
    # The Flight door's own cost: the same cursor's calls answered from the kept result (no engine run).
    flight_kept, close_flight_kept = _flight_timer(flight_url, api_keys().noisy, fresh=False)
    # The floor of any answer through the proxy: a request query-api answers without planning or running anything
    # (an unknown plan id, 404), over the same two HTTP hops.
    floor = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        client.get(proxy_url + "/v1/query/plans/01JQ0000000000000000000000").read()
        floor.append(time.perf_counter() - started)
    out = []
    for title, sql in demo_queries(demo["now"]):
        plan = client.post(proxy_url + "/v1/query/explain", json={"sql": sql}).json()
        _strata(client, proxy_url, sql, None)
        duck(sql)
        flight(sql)
        flight_kept(sql)
        strata, fresh, direct, direct_fresh, ducks, planning, flights, engine, hits = [], [], [], [], [], [], [], "", 0
        flights_kept = []
        for _ in range(runs):
            seconds, engine, outcome = _strata(client, proxy_url, sql, None)
            hits += outcome == "hit"
            strata.append(seconds)
            fresh.append(_strata(client, proxy_url, sql, None, fresh=True)[0])
            flights.append(flight(sql))
            flights_kept.append(flight_kept(sql))
            ducks.append(duck(sql))
            # Where Strata's time goes: without the proxy, and the server's own planning time.
            direct.append(_strata(client, query_url, sql, None)[0])
            direct_fresh.append(_strata(client, query_url, sql, None, fresh=True)[0])
            planning.append(client.post(query_url + "/v1/query/explain", json={"sql": sql}).json()["planning_ms"])
        first = plan["stages"][0]
        entry = {"title": title, "engine": engine, "strata": _p50(strata), "strata_max": max(strata), "hits": hits,
                 "fresh": _p50(fresh), "fresh_max": max(fresh), "direct": _p50(direct),
                 "direct_fresh": _p50(direct_fresh), "planning": _p50(planning) / 1000,
                 "flight": _p50(flights), "flight_max": max(flights), "flight_kept": _p50(flights_kept),
                 "duckdb": _p50(ducks), "files": plan["total_files"], "row_groups": plan["total_row_groups"],
                 "row_groups_before": first["row_groups_before"],
                 "selective": plan["total_row_groups"] < first["row_groups_before"]}
        out.append(entry)
        print(f"[engines] demo {title!r} ({entry['row_groups']}/{entry['row_groups_before']} row groups): strata "
              f"({engine}) repeated {entry['strata'] * 1000:.1f} ms, run {entry['fresh'] * 1000:.1f} ms, flight sql "
              f"run {entry['flight'] * 1000:.1f} ms, duckdb {entry['duckdb'] * 1000:.1f} ms", flush=True)
    close_flight()
    close_flight_kept()
    return {**{k: v for k, v in demo.items() if k not in ("paths", "now")}, "queries": out, "runs": runs,
            "floor": _p50(floor[1:])}


def _ingest_more(indexer_url: str, rows: int, first_window: int) -> int:
    """`rows` more rows in the index, every collector's, in requests of 250,000 (no artifacts: the heavy scan has
    no predicate for them)."""
    keys = api_keys()
    per_request = 250_000
    done = 0
    with httpx.Client(base_url=indexer_url, timeout=600) as client:
        while done < rows:
            n = min(per_request, rows - done)
            collector = (done // per_request) % bench_query.COLLECTORS
            body = bench_query._ipc_bytes(bench_query.exec_table(n, collector, first_window, seed=9000 + done))
            response = client.post(f"/v1/indexes/{EXEC_INDEX}/ingest", content=body,
                                   headers={**keys.header(keys.writer), "Content-Type": bench_query.ARROW_STREAM})
            if response.status_code != 200:
                raise RuntimeError(f"ingest answered {response.status_code}: {response.text[:500]}")
            done += n
    return done


def _heavy_scan(client, query_url: str, dataset: dict[str, Any], runs: int) -> dict[str, Any]:
    lo = dataset["first_window"]
    sql = (f'SELECT service, count(*) AS n, avg(value) AS a FROM "{EXEC_INDEX}" '
           f"WHERE timestamp_secs >= {lo} AND timestamp_secs < {lo + bench_query.EXEC_WINDOWS * WINDOW} "
           "GROUP BY service")
    plan, timings = _local_vs_spark(client, query_url, sql, runs)
    entry = {"bytes": plan["total_bytes"], "rows": plan["total_rows"], "files": plan["total_files"],
             "chosen": (plan.get("engine") or {}).get("engine"), "local": _p50(timings["local"]),
             "spark": _p50(timings["spark"]), "runs": runs}
    print(f"[engines] heavy scan ({entry['rows']:,} rows, {entry['files']} files, engine chosen {entry['chosen']}): "
          f"local {entry['local']:.3f} s, spark {entry['spark']:.3f} s", flush=True)
    return entry


PARTS = ("end_to_end", "engines", "crossover", "compaction", "tenants", "demo", "heavy")
HEAVY_ROWS = 16_000_000


def run(stack, *, rows: int, runs: int, spark_runs: int, merge_rows: int = 4_000_000,
        parts: tuple[str, ...] = PARTS, heavy_total: int = HEAVY_ROWS,
        demo_rows_per_window: int = DEMO_ROWS_PER_WINDOW, spark_niceness: int | None = None,
        query_api_python: str | None = None) -> dict[str, Any]:
    from strata_core.config import Settings
    from strata_services.local.processes import free_port
    from strata_services.local.spark_server import LocalSparkConnectServer

    url = stack.create_database("strata_bench_engines")
    storage_root = stack.path("engines-storage")
    indexer = stack.start_indexer(url, storage_root)
    print(f"[engines] ingesting {rows:,} rows ...", flush=True)
    dataset = bench_query.ingest_and_index(indexer.base_url, storage_root, rows, 2, 16_384)
    quiet_rows = _ingest_quiet_tenant(indexer.base_url, max(10_000, rows // 100), dataset["first_window"])
    demo = (_ingest_demo(indexer.base_url, storage_root, DEMO_WINDOWS, demo_rows_per_window)
            if "demo" in parts else None)
    indexer.stop()
    from bench.bench_merge import generate_dataset

    merge_sets = []
    if "compaction" in parts:
        print(f"[engines] generating {merge_rows:,} rows to merge in the background ...", flush=True)
        merge_sets = [generate_dataset(stack.path(f"engines-merge-input-{i}"), merge_rows // 2, 16, seed=i)
                      for i in range(2)]
    settings = Settings()
    niceness = {} if spark_niceness is None else {"niceness": spark_niceness}
    # Without Spark (`--no-spark`, spark_runs=0: a machine too busy to start its JVM in time), the parts that
    # need no Spark still run, the end-to-end table's Spark column empty.
    server = LocalSparkConnectServer(free_port(), master=settings.spark_master,
                                     driver_memory=settings.spark_driver_memory, work_dir=stack.path("spark"),
                                     **niceness) if spark_runs else None
    result: dict[str, Any] = {"rows": dataset["rows"], "files": len(dataset["splits"]),
                              "row_groups": dataset["row_groups"], "data_bytes": dataset["data_bytes"],
                              "runs": runs, "spark_runs": spark_runs, "quiet_rows": quiet_rows,
                              "merge_rows": merge_rows, "spark_niceness": server.niceness if server else None}
    keys = api_keys()
    try:
        if server is not None:
            server.start()
            server.wait_ready(timeout=240)
        flight_port = free_port()
        env = child_env(url, storage_root, stack.path("home-engines"), server.remote if server else "",
                        STRATA_FLIGHT_PORT=str(flight_port))
        flight_url = f"grpc://127.0.0.1:{flight_port}"
        # Queries run as tenant "default" (the ingested dataset), so the quiet tenant's rows stay out of them.
        with api_child("query-api", env, stack.path("logs-engines"), query_api_python) as query_api:
            proxy_env = child_env(url, storage_root, stack.path("home-engines-proxy"),
                                  STRATA_QUERY_UPSTREAMS=query_api.url, STRATA_PROXY_RATE_PER_SEC="1000",
                                  STRATA_PROXY_BURST="1000")
            with api_child("proxy", proxy_env, stack.path("logs-engines-proxy")) as proxy, \
                    httpx.Client(headers=keys.header(keys.noisy), timeout=600) as client:
                if demo is not None:
                    # First: the demo's queries without a time range read its default lookback (an hour), which
                    # holds every demo row only for the first quarter hour after ingest.
                    result["demo"] = _demo_queries(client, proxy.url, query_api.url, demo, runs, flight_url)
                if "end_to_end" in parts:
                    result["end_to_end"] = _end_to_end(client, proxy.url, dataset, runs, spark_runs, flight_url)
                if "engines" in parts:
                    result["engines"] = _engine_choice(client, query_api.url, dataset, runs)
                if "crossover" in parts:
                    result["crossover"] = _crossover(client, query_api.url, dataset, bench_query.EXEC_WINDOWS,
                                                     max(1, spark_runs))
                if "compaction" in parts:
                    result["compaction"] = _during_compaction(
                        client, proxy.url, dataset, server.remote, merge_sets, stack.path("engines-merge-output"),
                        max(3, runs // 2), spark_runs)
            if "tenants" in parts:
                # A proxy with its default limits, as a deployment has it, for the noisy tenant to hit: once with
                # its 429s held (the default), once answering them at once, side by side.
                result["tenants"] = {}
                for label, delay in (("held", None), ("immediate", "0")):
                    extra = {} if delay is None else {"STRATA_PROXY_REJECT_DELAY_SECS": delay}
                    limited_env = child_env(url, storage_root, stack.path(f"home-engines-proxy-{label}"),
                                            STRATA_QUERY_UPSTREAMS=query_api.url, **extra)
                    with api_child("proxy", limited_env, stack.path(f"logs-engines-proxy-{label}")) as limited:
                        result["tenants"][label] = _quiet_tenant(limited, query_api, dataset, max(5, runs), 64)
            if "heavy" in parts:
                # Last: the rows added change the dataset every other part measures.
                heavy_rows = heavy_total - dataset["rows"]
                print(f"[engines] ingesting {heavy_rows:,} more rows for the heavy scan ...", flush=True)
                try:
                    indexer = stack.start_indexer(url, storage_root)
                    try:
                        _ingest_more(indexer.base_url, heavy_rows, dataset["first_window"])
                    finally:
                        indexer.stop()
                    with httpx.Client(headers=keys.header(keys.noisy), timeout=1800) as client:
                        result["heavy"] = _heavy_scan(client, query_api.url, dataset, max(1, min(spark_runs, 2)))
                except Exception as error:  # noqa: BLE001 - the other parts' numbers stand; the doc says what failed
                    result["heavy"] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    finally:
        if server is not None:
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
             f"({r['spark_runs']} on Spark)."]
    if "end_to_end" in r:
        lines += ["", "Each query is timed two ways, alternating: repeated as a dashboard repeats it (answered from "
                      "the result kept from its first run while its published files are unchanged; `hits` counts the "
                      "runs that were), and run every time (`Cache-Control: no-cache`: planned from the kept plan, "
                      "executed on the engine).", "",
                  "| query | kind | engine chosen | repeated p50 | hits | run p50 | run max | run on Spark p50 | "
                  "Flight SQL run p50 | DuckDB p50 | repeated / DuckDB | run / DuckDB | Flight SQL run / DuckDB |",
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        met = {"repeated": True, "run": True, "flight": True}
        for q in r["end_to_end"]:
            repeated = q["auto"] / q["duckdb"] if q["duckdb"] else float("inf")
            run = q["fresh"] / q["duckdb"] if q["duckdb"] else float("inf")
            flight = q["flight"] / q["duckdb"] if q["duckdb"] else float("inf")
            if q["name"] in SELECTIVE:
                met["repeated"] = met["repeated"] and repeated <= 1.0
                met["run"] = met["run"] and run <= 1.0
                met["flight"] = met["flight"] and flight <= 1.0
            lines.append(f"| {q['name']} | {q['kind']} | {q['engine']} | {ms(q['auto'])} | {q['hits']}/{r['runs']} | "
                         f"{ms(q['fresh'])} | {ms(q['fresh_max'])} | {ms(q['spark'])} | {ms(q['flight'])} | "
                         f"{ms(q['duckdb'])} | {repeated:.2f}x | {run:.2f}x | {flight:.2f}x |")
        lines += ["", f"Goal, Strata p50 <= 1.0x DuckDB on the selective queries ({', '.join(SELECTIVE)}): repeated "
                      f"**{'met' if met['repeated'] else 'not met'}**, run every time "
                      f"**{'met' if met['run'] else 'not met'}**; over Flight SQL (ADBC, straight to query-api's "
                      f"Flight port), run every time, **{'met' if met['flight'] else 'not met'}**."]
    if "engines" in r:
        lines += ["", f"### The engine choice: DuckDB {r['engines']['duckdb']} vs DataFusion "
                      f"{r['engines']['datafusion']} on the same shaped scan (in process, Arrow in memory)", "",
                  "| query | scan rows | DuckDB p50 | DataFusion p50 | DataFusion / DuckDB |",
                  "|---|---:|---:|---:|---:|"]
        for q in r["engines"]["queries"]:
            lines.append(f"| {q['name']} | {q['rows']:,} | {q['duckdb'] * 1000:.2f} ms | "
                         f"{q['datafusion'] * 1000:.2f} ms | {q['datafusion'] / q['duckdb']:.2f}x |")
    if "crossover" in r:
        lines += ["", "### Crossover: one GROUP BY over a growing time range, local engine vs Spark "
                      "(direct to query-api)", "",
                  "| windows | files | rows | bytes read | local p50 | Spark p50 | Spark / local |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for c in r["crossover"]:
            lines.append(f"| {c['windows']} | {c['files']} | {c['rows']:,} | {c['bytes'] / 1e6:.1f} MB | "
                         f"{ms(c['local'])} | {ms(c['spark'])} | {c['spark'] / c['local']:.2f}x |")
    if "compaction" in r:
        c = r["compaction"]
        lines += ["", f"### Queries while merges of {r['merge_rows']:,} rows run on the same Spark server", "",
                  f"Two merges of {r['merge_rows'] // 2:,} rows (16 splits each) submitted in a loop from another "
                  f"Spark Connect session ({c['merges']} merges, {c['merged_rows']:,} rows written during the busy "
                  f"block, the server's JVM at nice {r.get('spark_niceness', 0)}); the selective queries through the "
                  "proxy, idle (before and after) and busy. Goal: p50 within 1.5x of idle.", "",
                  "| query | idle p50 | busy p50 | busy / idle | forced Spark idle p50 | forced Spark busy p50 |",
                  "|---|---:|---:|---:|---:|---:|"]
        worst = 0.0
        for q in c["queries"]:
            ratio = q["busy"] / q["idle"]
            worst = max(worst, ratio)
            spark = (f"{ms(q['spark_idle'])} | {ms(q['spark_busy'])}" if "spark_idle" in q else "- | -")
            lines.append(f"| {q['name']} | {ms(q['idle'])} | {ms(q['busy'])} | {ratio:.2f}x | {spark} |")
        lines += ["", f"Worst ratio {worst:.2f}x: goal **{'met' if worst <= 1.5 else 'not met'}**."]
    if "tenants" in r:
        held, immediate = r["tenants"]["held"], r["tenants"]["immediate"]
        ratio = held["flood"] / held["idle"]

        def answers(t: dict[str, Any]) -> str:
            return ", ".join(f"{code}: {n:,}" for code, n in sorted(t["statuses"].items()))

        lines += ["", "### A quiet tenant while another floods the proxy", "",
                  f"{held['flooders']} clients of tenant `default` (threads of a separate process at nice 10, "
                  "ignoring Retry-After) send EXPLAIN back to back through a proxy with its default limits; tenant "
                  f"`{QUIET_TENANT}` ({r['quiet_rows']:,} rows of its own) runs one GROUP BY every 0.5 s, "
                  f"{held['samples']} samples each way. Side by side: the proxy holding each 429 for "
                  "`STRATA_PROXY_REJECT_DELAY_SECS` (1 s, the default) and answering it at once (0).", "",
                  "| 429s | quiet idle p50 | quiet under the flood p50 | max | flood / idle | same, straight to "
                  "query-api: idle / flood | the flood's answers | cores busy: proxy | query-api | flood | machine |",
                  "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        for label, t in (("held 1 s", held), ("at once", immediate)):
            lines.append(f"| {label} | {ms(t['idle'])} | {ms(t['flood'])} | {ms(t['flood_max'])} | "
                         f"{t['flood'] / t['idle']:.2f}x | {ms(t['idle_direct'])} / {ms(t['flood_direct'])} | "
                         f"{answers(t)} in {t['flood_secs']:.0f} s | "
                         f"{t['cpu']['proxy']:.2f} | {t['cpu']['query-api']:.2f} | {t['cpu']['flood']:.2f} | "
                         f"{t['cpu']['machine']:.2f} |")
        lines += ["", f"Ratio with the default {ratio:.2f}x: goal (within 2x) "
                      f"**{'met' if ratio <= 2.0 else 'not met'}**."]
    if "demo" in r:
        d = r["demo"]
        lines += ["", "### `strata demo`'s five queries, end to end through the proxy vs DuckDB over the same files",
                  "",
                  f"The demo's index (`strata_services.demo`: its settings, artifacts and rows) with its default "
                  f"{d['rows']:,} rows over {d['windows']} windows, ingested in one batch: {d['files']} sorted files "
                  f"({d['row_groups']} row groups), as after the demo's compaction. Its five queries as it sends "
                  f"them (JSON answers); DuckDB a warm connection over the same files. Medians of {d['runs']} "
                  "alternating runs, each query timed repeated (answered from its kept result; `hits` counts the "
                  "runs that were) and run every time (`Cache-Control: no-cache`). Selective: the plan reads fewer "
                  "row groups than the index holds. Where Strata's time goes: the same query straight to query-api "
                  "(no proxy), and query-api's own `planning_ms` from EXPLAIN. Flight SQL: the same query through "
                  "the ADBC driver's DB-API cursor on one kept connection, straight to query-api's Flight port, run "
                  "every time (`cache-control: no-cache` call header), and repeated (answered from the kept result "
                  "on a second connection without the header: what the door and the driver cost with no engine "
                  "run).", "",
                  "| query | row groups read | engine | repeated p50 | hits | run p50 | run max | Flight SQL run p50 | "
                  "Flight SQL repeated p50 | DuckDB p50 | repeated / DuckDB | run / DuckDB | Flight SQL run / DuckDB "
                  "| Flight SQL repeated / DuckDB | straight to query-api: repeated / run p50 | planning p50 |",
                  "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        under, selective_met = True, {"repeated": True, "run": True, "flight": True}
        http_fresh_worst = 0.0
        for q in d["queries"]:
            repeated = q["strata"] / q["duckdb"] if q["duckdb"] else float("inf")
            run = q["fresh"] / q["duckdb"] if q["duckdb"] else float("inf")
            flight = q["flight"] / q["duckdb"] if q["duckdb"] else float("inf")
            under = under and max(q["strata"], q["fresh"]) < 0.050
            http_fresh_worst = max(http_fresh_worst, run)
            if q["selective"]:
                selective_met["repeated"] = selective_met["repeated"] and repeated <= 1.0
                selective_met["run"] = selective_met["run"] and run <= 1.0
                selective_met["flight"] = selective_met["flight"] and flight <= 1.0
            lines.append(f"| {q['title']} | {q['row_groups']} of {q['row_groups_before']}"
                         f"{'' if q['selective'] else ' (not selective)'} | {q['engine']} | {ms(q['strata'])} | "
                         f"{q['hits']}/{d['runs']} | {ms(q['fresh'])} | {ms(q['fresh_max'])} | {ms(q['flight'])} | "
                         f"{ms(q['flight_kept'])} | {ms(q['duckdb'])} | {repeated:.2f}x | {run:.2f}x | {flight:.2f}x | "
                         f"{q['flight_kept'] / q['duckdb']:.2f}x | "
                         f"{ms(q['direct'])} / {ms(q['direct_fresh'])} | {ms(q['planning'])} |")
        lines += ["", f"Goals: each under 50 ms, both ways, **{'met' if under else 'not met'}**; <= 1.0x DuckDB on "
                      f"the selective ones: repeated **{'met' if selective_met['repeated'] else 'not met'}**, run "
                      f"every time **{'met' if selective_met['run'] else 'not met'}**, over Flight SQL run every time "
                      f"**{'met' if selective_met['flight'] else 'not met'}**; through the proxy run every time "
                      f"<= 1.3x DuckDB on every query (worst {http_fresh_worst:.2f}x) "
                      f"**{'met' if http_fresh_worst <= 1.3 else 'not met'}**."]
        if "floor" in d:
            lines += ["", f"The floor through the proxy: a request that query-api answers without planning or running "
                          f"anything (an unknown plan id, 404) takes {ms(d['floor'])} p50 over the same two hops."]
    if "heavy" in r and "error" in r["heavy"]:
        lines += ["", f"### A heavy scan: not measured ({r['heavy']['error']})"]
    elif "heavy" in r:
        h = r["heavy"]
        lines += ["", "### A heavy scan: every row of the index, local engine vs Spark (direct to query-api)", "",
                  f"More rows ingested into the same index after the parts above (no artifacts), then one GROUP BY "
                  f"over all four windows; medians of {h['runs']} alternating runs after one warm-up each.", "",
                  "| files | rows | bytes read | engine chosen | local p50 | Spark p50 | Spark / local |",
                  "|---:|---:|---:|---|---:|---:|---:|",
                  f"| {h['files']} | {h['rows']:,} | {h['bytes'] / 1e6:.1f} MB | {h['chosen']} | {ms(h['local'])} | "
                  f"{ms(h['spark'])} | {h['spark'] / h['local']:.2f}x |"]
    return "\n".join(lines)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--part", choices=PARTS, action="append", help="only this part (repeatable); printed only")
    parser.add_argument("--no-spark", action="store_true",
                        help="no Spark server: only the parts that need none (demo, end_to_end without its Spark "
                             "column); printed only")
    parser.add_argument("--query-api-python", default=None,
                        help="serve query-api from another checkout's interpreter (its code), the rest from this "
                             "one: a baseline for a change, run back to back; printed only")
    parser.add_argument("--spark-nice", type=int, default=None,
                        help="the Spark server's niceness instead of LocalSparkConnectServer's (SPARK_NICENESS)")
    args = parser.parse_args()
    from bench.report import run_and_write

    parts = tuple(args.part or PARTS)
    quick = args.quick
    run_and_write({"engines": lambda stack: render(run(
        stack, rows=240_000 if quick else 3_000_000, runs=3 if quick else 20,
        spark_runs=0 if args.no_spark else 1 if quick else 3,
        merge_rows=400_000 if quick else 4_000_000, parts=parts,
        heavy_total=1_000_000 if quick else HEAVY_ROWS, spark_niceness=args.spark_nice,
        query_api_python=args.query_api_python))},
        write=not (quick or args.part or args.no_spark or args.query_api_python))


if __name__ == "__main__":
    main()
