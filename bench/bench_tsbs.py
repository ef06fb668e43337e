"""TSBS devops (cpu-only) through Strata, side by side in one run with DuckDB over the same published files.

The Time Series Benchmark Suite's data (`bench/tsbs.py`: 100 hosts, one row per host every 10 s, 12 hours, ending
now) ingested into an index named `cpu`, and its 15 query types as TSBS's TimescaleDB generator writes them. Per
type, runs alternating so the ratios hold on a noisy machine:
1. DuckDB over the same files from a warm connection (Parquet metadata cached, answer fetched as Arrow): the
   reference time, and the reference answer every door's answer must equal.
2. Strata through the proxy (HTTP, JSON answer), run every time (`Cache-Control: no-cache`) and repeated (answered
   from the kept result); Arrow Flight SQL (ADBC DB-API cursor) the same two ways. Goal (issue 32): fresh p50 <=
   the same door's kept p50 + 1.25x DuckDB's p50, so the door's fixed cost is measured, not hidden in a ratio.
3. The 20,000+-row result (high-cpu-all): Flight SQL run every time <= 1.5x DuckDB, NDJSON through the proxy run
   every time <= 3x.
4. The same types on Spark at 10x the data (1,000 hosts, an index `cpu_10x`), `"engine": "spark"`, answers equal
   to DuckDB's; Spark and DuckDB times reported.

A type the SQL front refuses is reported with its status and detail, and the run goes on.

    .tools/bin/uv run --group bench python -m bench.bench_tsbs            # rewrites its section of docs/benchmarks.md
    .tools/bin/uv run --group bench python -m bench.bench_tsbs --quick    # small sizes, printed only
    .tools/bin/uv run --group bench python -m bench.run tsbs

Spark: the server named by STRATA_SPARK_REMOTE when set (a shared one), else a local Spark Connect server started
and stopped here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from bench import tsbs
from bench.bench_query import ARROW_STREAM, api_child, api_keys, child_env

SECTION = "tsbs"
BASE_INDEX = "cpu"
SPARK_INDEX = "cpu_10x"
FRESH = {"Cache-Control": "no-cache"}
FRESH_GOAL_DUCKDB = 1.25
FLIGHT_ROWS_GOAL = 1.5
NDJSON_ROWS_GOAL = 3.0
MANY_ROWS = 20_000


class Refused(Exception):
    """Strata answered a query with an error status: the type is reported, not timed."""


def _ingest(indexer_url: str, storage_root: Path, index_id: str, data: tsbs.CpuData, now: int) -> list[str]:
    """The data in the index, an hour per request; the published files' paths."""
    from strata_core.storage import ObjectStore

    keys = api_keys()
    storage = ObjectStore(storage_root.resolve().as_uri())
    with httpx.Client(base_url=indexer_url, timeout=600) as client:
        created = client.post("/v1/indexes", json=tsbs.index_config(index_id, data, now),
                              headers=keys.header(keys.admin))
        if created.status_code != 201:
            raise RuntimeError(f"index creation answered {created.status_code}: {created.text[:500]}")
        uris = []
        for table in tsbs.cpu_batches(data):
            sink = pa.BufferOutputStream()
            with ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            response = client.post(f"/v1/indexes/{index_id}/ingest", content=sink.getvalue().to_pybytes(),
                                   headers={**keys.header(keys.writer), "Content-Type": ARROW_STREAM})
            if response.status_code != 200:
                raise RuntimeError(f"ingest answered {response.status_code}: {response.text[:500]}")
            body = response.json()
            if body.get("rows_dropped_late"):
                raise RuntimeError(f"ingest dropped {body['rows_dropped_late']} rows as late")
            uris.extend(s["uri"] for s in body["splits"])
    return [storage.resolve(u) for u in uris]


class Duck:
    """DuckDB over the files, the index's name a view of them, so TSBS's SQL runs as written (its literals as
    DuckDB reads them)."""

    def __init__(self, index_id: str, paths: list[str]) -> None:
        import duckdb

        self.connection = duckdb.connect()
        self.connection.execute("SET parquet_metadata_cache = true")
        files = "[" + ", ".join(f"'{p}'" for p in paths) + "]"
        self.connection.execute(f"CREATE VIEW {tsbs.quoted(index_id)} AS SELECT * FROM read_parquet({files})")

    def run(self, sql: str) -> tuple[float, pa.Table]:
        started = time.perf_counter()
        table = self.connection.sql(tsbs.duckdb_text(sql)).to_arrow_table()
        return time.perf_counter() - started, table


def _http(client: httpx.Client, base: str, sql: str, *, fresh: bool, accept: str = "application/json",
          engine: str | None = None) -> tuple[float, httpx.Response]:
    body: dict[str, Any] = {"sql": sql}
    if engine:
        body["engine"] = engine
    headers = {"Accept": accept, **(FRESH if fresh else {})}
    started = time.perf_counter()
    response = client.post(base + "/v1/query", json=body, headers=headers)
    response.read()
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise Refused(f"{response.status_code}: {_detail(response)}")
    outcome = response.headers.get("x-strata-result-cache")
    if outcome not in (("bypass", "miss") if fresh else ("hit", "miss")):
        raise RuntimeError(f"a {'fresh' if fresh else 'repeated'} query's result came from {outcome!r}")
    return seconds, response


def _detail(response: httpx.Response) -> str:
    try:
        problem = response.json()
    except ValueError:
        return response.text[:300]
    errors = "; ".join(f"{e.get('field')}: {e.get('message')}" for e in problem.get("errors") or [])
    return errors or str(problem.get("detail"))[:300]


def _arrow(response: httpx.Response) -> pa.Table:
    return ipc.open_stream(response.content).read_all()


class Flight:
    """One kept ADBC connection (as a notebook holds one), every call run (`cache-control: no-cache`) unless
    `fresh` is False: then answered from the kept result, the door's own cost."""

    def __init__(self, url: str, key: str, *, fresh: bool, engine: str | None = None) -> None:
        import adbc_driver_flightsql
        import adbc_driver_flightsql.dbapi as flight_sql

        options = {adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value: f"Bearer {key}"}
        if fresh:
            options["adbc.flight.sql.rpc.call_header.cache-control"] = "no-cache"
        if engine:
            options["adbc.flight.sql.rpc.call_header.x-strata-engine"] = engine
        self.connection = flight_sql.connect(url, autocommit=True, db_kwargs=options)

    def run(self, sql: str) -> tuple[float, pa.Table]:
        started = time.perf_counter()
        try:
            with self.connection.cursor() as cursor:
                cursor.execute(sql)
                table = cursor.fetch_arrow_table()
        except Exception as error:  # noqa: BLE001 - the driver's errors carry the server's problem as text
            raise Refused(f"flight: {str(error)[:300]}") from error
        return time.perf_counter() - started, table

    def close(self) -> None:
        self.connection.close()


def _p50(values: list[float]) -> float:
    return statistics.median(values)


def _check(kind: str, door: str, got: pa.Table, expected: tuple) -> str | None:
    """None when the door's answer equals DuckDB's, else what differs (names apart from values, so a naming
    difference does not hide whether the values agree)."""
    ordered = kind not in tsbs.UNORDERED
    answer = tsbs.answer(got, ordered)
    if answer == expected:
        return None
    names, rows = answer
    if names != expected[0]:
        if sorted(names) == sorted(expected[0]):
            what, aligned = f"{door}: the same columns in another order ({', '.join(names[:3])}, ... where DuckDB " \
                f"has {', '.join(expected[0][:3])}, ...)", got.select(expected[0])
        else:
            theirs, ours = sorted(set(names) - set(expected[0])), sorted(set(expected[0]) - set(names))
            what, aligned = f"{door}: columns {theirs} where DuckDB names {ours}", None
            if len(names) == len(expected[0]):
                aligned = got.rename_columns(expected[0])
        if aligned is not None:
            what += "; values equal" if tsbs.answer(aligned, ordered)[1] == expected[1] else "; values differ too"
        return what
    first = next((i for i, (a, b) in enumerate(zip(rows, expected[1], strict=False)) if a != b), min(len(rows),
                 len(expected[1])))
    return f"{door}: {len(rows)} rows vs DuckDB's {len(expected[1])}, first difference at row {first}"


def _base_types(client: httpx.Client, proxy_url: str, flight_url: str, duck: Duck, texts: dict[str, str],
                runs: int) -> list[dict[str, Any]]:
    keys = api_keys()
    fresh_flight = Flight(flight_url, keys.noisy, fresh=True)
    kept_flight = Flight(flight_url, keys.noisy, fresh=False)
    out = []
    try:
        for kind, sql in texts.items():
            entry: dict[str, Any] = {"kind": kind}
            out.append(entry)
            _, reference = duck.run(sql)
            expected = tsbs.answer(reference, kind not in tsbs.UNORDERED)
            entry["rows"] = reference.num_rows
            try:
                # Answers first (Arrow over HTTP, Flight), which also warms the plan cache, the RAM tier and the
                # kept result the repeated runs are answered from.
                _, response = _http(client, proxy_url, sql, fresh=True, accept=ARROW_STREAM)
                entry["engine"] = response.headers.get("x-strata-engine")
                mismatches = [m for m in (_check(kind, "http", _arrow(response), expected),
                                          _check(kind, "flight", fresh_flight.run(sql)[1], expected)) if m]
                _http(client, proxy_url, sql, fresh=False)
                kept_flight.run(sql)
            except Refused as refused:
                entry["refused"] = str(refused)
                print(f"[tsbs] {kind}: refused {refused}", flush=True)
                continue
            entry["mismatches"] = mismatches
            times: dict[str, list[float]] = {k: [] for k in ("duckdb", "fresh", "kept", "flight", "flight_kept")}
            for _ in range(runs):
                times["duckdb"].append(duck.run(sql)[0])
                times["fresh"].append(_http(client, proxy_url, sql, fresh=True)[0])
                times["kept"].append(_http(client, proxy_url, sql, fresh=False)[0])
                times["flight"].append(fresh_flight.run(sql)[0])
                times["flight_kept"].append(kept_flight.run(sql)[0])
            entry.update({k: _p50(v) for k, v in times.items()})
            entry["goal_http"] = entry["fresh"] <= entry["kept"] + FRESH_GOAL_DUCKDB * entry["duckdb"]
            entry["goal_flight"] = entry["flight"] <= entry["flight_kept"] + FRESH_GOAL_DUCKDB * entry["duckdb"]
            print(f"[tsbs] {kind} ({entry['rows']:,} rows, {entry['engine']}): duckdb {entry['duckdb'] * 1e3:.1f} ms, "
                  f"proxy fresh {entry['fresh'] * 1e3:.1f} / kept {entry['kept'] * 1e3:.1f} ms, flight fresh "
                  f"{entry['flight'] * 1e3:.1f} / kept {entry['flight_kept'] * 1e3:.1f} ms"
                  + (f"; DIFFERS: {mismatches}" if mismatches else ""), flush=True)
    finally:
        fresh_flight.close()
        kept_flight.close()
    return out


def _many_rows(client: httpx.Client, proxy_url: str, flight_url: str, duck: Duck, sql: str,
               runs: int) -> dict[str, Any]:
    """The high-cpu-all result: every row crosses the door, so the encoding's cost shows."""
    flight = Flight(flight_url, api_keys().noisy, fresh=True)
    try:
        seconds, reference = duck.run(sql)
        out: dict[str, Any] = {"rows": reference.num_rows}
        try:
            flight.run(sql)
            _http(client, proxy_url, sql, fresh=True, accept="application/x-ndjson")
        except Refused as refused:
            return {**out, "refused": str(refused)}
        times: dict[str, list[float]] = {"duckdb": [], "flight": [], "ndjson": []}
        for _ in range(runs):
            times["duckdb"].append(duck.run(sql)[0])
            times["flight"].append(flight.run(sql)[0])
            times["ndjson"].append(_http(client, proxy_url, sql, fresh=True, accept="application/x-ndjson")[0])
        return {**out, **{k: _p50(v) for k, v in times.items()}}
    finally:
        flight.close()


def _spark_types(client: httpx.Client, query_url: str, duck: Duck, texts: dict[str, str],
                 runs: int) -> list[dict[str, Any]]:
    out = []
    for kind, sql in texts.items():
        entry: dict[str, Any] = {"kind": kind}
        out.append(entry)
        _, reference = duck.run(sql)
        entry["rows"] = reference.num_rows
        try:
            _, response = _http(client, query_url, sql, fresh=True, accept=ARROW_STREAM, engine="spark")
        except Refused as refused:
            entry["refused"] = str(refused)
            print(f"[tsbs] spark {kind}: refused {refused}", flush=True)
            continue
        expected = tsbs.answer(reference, kind not in tsbs.UNORDERED)
        entry["mismatches"] = [m for m in [_check(kind, "spark", _arrow(response), expected)] if m]
        times: dict[str, list[float]] = {"duckdb": [], "spark": []}
        for _ in range(runs):
            times["duckdb"].append(duck.run(sql)[0])
            times["spark"].append(_http(client, query_url, sql, fresh=True, engine="spark")[0])
        entry.update({k: _p50(v) for k, v in times.items()})
        print(f"[tsbs] spark {kind} ({entry['rows']:,} rows): duckdb {entry['duckdb'] * 1e3:.1f} ms, spark "
              f"{entry['spark'] * 1e3:.1f} ms" + (f"; DIFFERS: {entry['mismatches']}" if entry["mismatches"] else ""),
              flush=True)
    return out


def run(stack, *, hosts: int = 100, hours: int = 12, runs: int = 20, spark_scale: int = 10,
        spark_runs: int = 3) -> dict[str, Any]:
    from strata_core.config import Settings
    from strata_services.local.processes import free_port
    from strata_services.local.spark_server import LocalSparkConnectServer

    now = int(time.time())
    base = tsbs.recent(hosts, hours * tsbs.HOUR, now)
    big = tsbs.recent(hosts * spark_scale, hours * tsbs.HOUR, now, seed=2) if spark_scale else None
    url = stack.create_database("strata_bench_tsbs")
    storage_root = stack.path("tsbs-storage")
    indexer = stack.start_indexer(url, storage_root)
    print(f"[tsbs] ingesting {base.rows:,} rows" + (f" and {big.rows:,} for Spark" if big else "") + " ...",
          flush=True)
    started = time.perf_counter()
    base_paths = _ingest(indexer.base_url, storage_root, BASE_INDEX, base, now)
    big_paths = _ingest(indexer.base_url, storage_root, SPARK_INDEX, big, now) if big else []
    ingest_secs = time.perf_counter() - started
    indexer.stop()
    result: dict[str, Any] = {
        "hosts": hosts, "hours": hours, "rows": base.rows, "files": len(base_paths),
        "row_groups": sum(pq.read_metadata(p).num_row_groups for p in base_paths),
        "bytes": sum(os.path.getsize(p) for p in base_paths), "runs": runs, "spark_runs": spark_runs,
        "spark_rows": big.rows if big else 0, "spark_files": len(big_paths), "ingest_secs": ingest_secs}
    remote = os.environ.get("STRATA_SPARK_REMOTE", "")
    server = None
    if big and not remote:
        settings = Settings()
        server = LocalSparkConnectServer(free_port(), master=settings.spark_master,
                                         driver_memory=settings.spark_driver_memory, work_dir=stack.path("spark"))
    result["spark_server"] = "shared (STRATA_SPARK_REMOTE)" if remote else "local, started by the benchmark"
    keys = api_keys()
    try:
        if server is not None:
            server.start()
            server.wait_ready(timeout=240)
            remote = server.remote
        flight_port = free_port()
        env = child_env(url, storage_root, stack.path("home-tsbs"), remote, STRATA_FLIGHT_PORT=str(flight_port))
        flight_url = f"grpc://127.0.0.1:{flight_port}"
        with api_child("query-api", env, stack.path("logs-tsbs")) as query_api, contextlib.ExitStack() as close:
            proxy_env = child_env(url, storage_root, stack.path("home-tsbs-proxy"),
                                  STRATA_QUERY_UPSTREAMS=query_api.url, STRATA_PROXY_RATE_PER_SEC="1000",
                                  STRATA_PROXY_BURST="1000")
            proxy = close.enter_context(api_child("proxy", proxy_env, stack.path("logs-tsbs-proxy")))
            client = close.enter_context(httpx.Client(headers=keys.header(keys.noisy), timeout=1800))
            duck = Duck(BASE_INDEX, base_paths)
            texts = tsbs.queries(base, table=BASE_INDEX)
            result["queries"] = texts
            result["types"] = _base_types(client, proxy.url, flight_url, duck, texts, runs)
            result["many_rows"] = _many_rows(client, proxy.url, flight_url, duck, texts["high-cpu-all"], runs)
            if big:
                big_duck = Duck(SPARK_INDEX, big_paths)
                result["spark"] = _spark_types(client, query_api.url, big_duck,
                                               tsbs.queries(big, table=SPARK_INDEX), spark_runs)
    finally:
        if server is not None:
            server.stop()
    return result


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


def render(r: dict[str, Any]) -> str:
    lines = ["## TSBS devops (cpu-only): the 15 query types, Strata beside DuckDB over the same files", "",
             f"TSBS's cpu-only data (`bench/tsbs.py`): {r['hosts']} hosts, one row each every 10 s over "
             f"{r['hours']} hours ending at the run, {r['rows']:,} rows in {r['files']} files ({r['row_groups']} "
             f"row groups, {r['bytes'] / 1e6:.1f} MB), the index `cpu` sorted by hostname then time; the queries "
             "exactly as TSBS's TimescaleDB generator writes them (`time_bucket`, `hostname IN`, its timestamp "
             "literals, the CTE of double-groupby, DISTINCT ON of lastpoint). DuckDB reads the same files from a "
             "warm connection (its answer fetched as Arrow); every Strata answer is checked equal to DuckDB's "
             f"before it is timed. Medians of {r['runs']} alternating runs. Fresh: `Cache-Control: no-cache` "
             "(planned, executed); kept: answered from the result kept from an earlier run. Through the proxy the "
             "answer is JSON; Flight SQL is the ADBC driver's DB-API cursor on one kept connection. Goal: fresh "
             f"p50 <= kept p50 of the same door + {FRESH_GOAL_DUCKDB}x DuckDB's p50.", "",
             "| type | rows | engine | DuckDB | proxy fresh | proxy kept | goal | Flight fresh | Flight kept | goal "
             "| fresh / DuckDB (proxy, Flight) |",
             "|---|---:|---|---:|---:|---:|---|---:|---:|---|---:|"]
    refused = []
    for e in r["types"]:
        if "refused" in e:
            refused.append(e)
            lines.append(f"| {e['kind']} | {e['rows']:,} | refused | | | | | | | | |")
            continue
        differs = " (answer differs)" if e["mismatches"] else ""
        lines.append(
            f"| {e['kind']}{differs} | {e['rows']:,} | {e['engine']} | {_ms(e['duckdb'])} | {_ms(e['fresh'])} | "
            f"{_ms(e['kept'])} | {'met' if e['goal_http'] else 'MISSED'} | {_ms(e['flight'])} | "
            f"{_ms(e['flight_kept'])} | {'met' if e['goal_flight'] else 'MISSED'} | "
            f"{e['fresh'] / e['duckdb']:.2f}x, {e['flight'] / e['duckdb']:.2f}x |")
    m = r["many_rows"]
    lines += ["", f"### A result of {m['rows']:,} rows (high-cpu-all), run every time", ""]
    if "refused" in m:
        lines.append(f"Refused: {m['refused']}")
    else:
        lines += ["| DuckDB (Arrow) | Flight SQL | Flight / DuckDB (goal <= 1.5x) | NDJSON through the proxy | "
                  "NDJSON / DuckDB (goal <= 3x) |", "|---:|---:|---:|---:|---:|",
                  f"| {_ms(m['duckdb'])} | {_ms(m['flight'])} | {m['flight'] / m['duckdb']:.2f}x "
                  f"({'met' if m['flight'] <= FLIGHT_ROWS_GOAL * m['duckdb'] else 'MISSED'}) | {_ms(m['ndjson'])} | "
                  f"{m['ndjson'] / m['duckdb']:.2f}x "
                  f"({'met' if m['ndjson'] <= NDJSON_ROWS_GOAL * m['duckdb'] else 'MISSED'}) |"]
        if m["rows"] < MANY_ROWS:
            lines.append(f"\nFewer than {MANY_ROWS:,} rows at this size: not the goal's result.")
    if r.get("spark"):
        lines += ["", f"### On Spark at {r['spark_rows'] // max(1, r['rows'])}x the data", "",
                  f"{r['spark_rows']:,} rows ({r['hosts'] * r['spark_rows'] // max(1, r['rows'])} hosts) in "
                  f"{r['spark_files']} files, index `cpu_10x`, straight to query-api with `\"engine\": \"spark\"`, "
                  f"run every time; Spark Connect server {r['spark_server']}. Medians of {r['spark_runs']} "
                  "alternating runs.", "",
                  "| type | rows | DuckDB | Spark | answer |", "|---|---:|---:|---:|---|"]
        for e in r["spark"]:
            if "refused" in e:
                lines.append(f"| {e['kind']} | {e['rows']:,} | | | refused: {e['refused'][:160]} |")
            else:
                lines.append(f"| {e['kind']} | {e['rows']:,} | {_ms(e['duckdb'])} | {_ms(e['spark'])} | "
                             f"{'equal' if not e['mismatches'] else '; '.join(e['mismatches'])} |")
    refusals = refused + [e for e in r.get("spark", []) if "refused" in e]
    if refusals:
        lines += ["", "### Refused by the SQL front", "",
                  "| type | where | answer |", "|---|---|---|"]
        for e in refused:
            lines.append(f"| {e['kind']} | proxy, local | {e['refused']} |")
        for e in r.get("spark", []):
            if "refused" in e:
                lines.append(f"| {e['kind']} | query-api, Spark | {e['refused']} |")
    lines += ["", "<details><summary>The queries of this run</summary>", ""]
    for kind, sql in r["queries"].items():
        lines += [f"`{kind}`:", "```sql", "\n".join(x.rstrip() for x in sql.strip("\n").splitlines()), "```"]
    lines += ["</details>", "", f"Ingest of both indexes took {r['ingest_secs']:.1f} s."]
    return "\n".join(lines)


def main() -> None:
    from datetime import UTC, datetime

    from bench.common import machine_facts
    from bench.harness import Stack
    from bench.report import DOC_PATH, invocation, update_sections

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--no-spark", action="store_true", help="without the 10x part on Spark; printed only")
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the doc")
    args = parser.parse_args()
    quick = args.quick
    facts = machine_facts()
    started, load = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), os.getloadavg()[0]
    with Stack() as stack:
        body = render(run(stack, hosts=20 if quick else 100, hours=2 if quick else 12,
                          runs=args.runs or (3 if quick else 20), spark_scale=0 if args.no_spark else 10,
                          spark_runs=1 if quick else 3))
    # Only this section: the doc's machine section belongs to `bench.run`'s full runs.
    body += (f"\n\n_Measured {started} with `{invocation()}` on {facts['nproc']} CPUs ({facts['cpu']}, "
             f"{facts['memory']}); 1-minute load average {load:.2f} before, {os.getloadavg()[0]:.2f} after._")
    print(body, flush=True)
    if not (quick or args.no_spark or args.no_write):
        update_sections({SECTION: body})
        print(f"[bench] wrote {SECTION} to {DOC_PATH}")


if __name__ == "__main__":
    main()
