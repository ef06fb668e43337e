"""Object-store requests of `strata demo`'s five queries on S3 (a moto server started as the tests start it,
`tests/fixtures/s3.py`): per query, the GETs, HEADs, LISTs and bytes of a first run (footers, artifacts and row
groups fetched), a repeated run with the RAM tier on (the default) and a repeated run with it off (only the row
groups), each with `Cache-Control: no-cache` so it runs rather than coming from the result cache; EXPLAIN's
prediction beside them (`--part requests`). Then the cost of counting (`--part overhead`): the row-group reads of
each query's plan, fresh (no RAM tier), with a meter open and without, alternating plan by plan in one run, on S3
and on a local directory.

    .tools/bin/uv run python -m bench.bench_object_requests               # both parts, into docs/benchmarks.md
    .tools/bin/uv run python -m bench.bench_object_requests --part overhead --overhead-runs 21
    .tools/bin/uv run python -m bench.bench_object_requests --no-write    # printed only
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench import bench_query
from bench.harness import Stack

SECTION = "object_requests"
OVERHEAD_SECTION = "object_requests_overhead"
WINDOWS = 3
ROWS_PER_WINDOW = 100_000  # `strata demo`'s defaults
FRESH = {"Cache-Control": "no-cache"}


@contextmanager
def _aws_environment(variables: dict[str, str]):
    """The S3 server's AWS variables in this process (pyarrow reads them) and in the APIs it starts."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _ingest(indexer_url: str, storage, keys, now: int, rows_per_window: int) -> list[dict[str, Any]]:
    from strata_core.domain.index_config import IndexSettings
    from strata_services.demo import DEMO_INDEX, demo_batches, demo_index_config

    config = demo_index_config(now)
    splits: list[dict[str, Any]] = []
    with httpx.Client(base_url=indexer_url, timeout=600) as client:
        created = client.post("/v1/indexes", json=config, headers=keys.header(keys.admin))
        created.raise_for_status()
        for table in demo_batches(now, WINDOWS, rows_per_window, 1):
            response = client.post(f"/v1/indexes/{DEMO_INDEX}/ingest", content=bench_query._ipc_bytes(table),
                                   headers={**keys.header(keys.writer), "Content-Type": bench_query.ARROW_STREAM})
            response.raise_for_status()
            splits.extend(response.json()["splits"])
        settings = IndexSettings.model_validate({k: v for k, v in config.items() if k != "index_id"})
        bench_query.publish_artifacts(client, storage, DEMO_INDEX, created.json()["incarnation"], settings, splits,
                                      {"artifacts_build": 0.0, "artifacts_register": 0.0})
    return splits


def _run(client: httpx.Client, sql: str) -> dict[str, int]:
    response = client.post("/v1/query", json={"sql": sql, "engine": "local"}, headers=FRESH)
    response.raise_for_status()
    return response.json()["summary"]["object_requests"]


def _read_plan(storage, plan: dict[str, Any], metered: bool) -> float:
    """Seconds to read the plan's row groups as the local engine does, nothing cached, with or without a meter."""
    from strata_core.object_requests import metered as open_meter
    from strata_query.execution.hot_tier import HotTier
    from strata_query.planning.caches import FooterCache

    footers = FooterCache(storage)
    for part in plan["files"]:
        footers.get(part["uri"])
    hot = HotTier(storage, footers, 0)
    started = time.perf_counter()
    if metered:
        with open_meter():
            for part in plan["files"]:
                for _ in hot.read_row_groups(part["uri"], part["row_groups"], part["columns"]):
                    pass
    else:
        for part in plan["files"]:
            for _ in hot.read_row_groups(part["uri"], part["row_groups"], part["columns"]):
                pass
    return time.perf_counter() - started


def _overhead(storage, plans: list[dict[str, Any]], runs: int) -> dict[str, float]:
    """Median seconds over `runs` of every plan's reads, without and with a meter: each plan read both ways back
    to back, which goes first alternating, so a burst of load on the shared machine falls on both alike."""
    plain, counted = [], []
    for round_ in range(runs):
        plain_secs = counted_secs = 0.0
        for i, plan in enumerate(plans):
            if (round_ + i) % 2:
                counted_secs += _read_plan(storage, plan, True)
                plain_secs += _read_plan(storage, plan, False)
            else:
                plain_secs += _read_plan(storage, plan, False)
                counted_secs += _read_plan(storage, plan, True)
        plain.append(plain_secs)
        counted.append(counted_secs)
    return {"plain": statistics.median(plain), "counted": statistics.median(counted),
            "ratio": statistics.median(c / p for c, p in zip(counted, plain, strict=True))}


def _opening(s3, storage, plans: list[dict[str, Any]]) -> dict[str, Any]:
    """The requests the S3 server answered for one file's kept row groups read four ways: how the local engine
    read before (a file opened per row group), how it reads now (opened once, the cached footer), a dataset
    fragment given the file's size (no HEAD, but it reads the footer itself), and one call for all the row groups
    (the column chunks coalesced across row groups)."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from strata_query.execution.hot_tier import HotTier
    from strata_query.planning.caches import FooterCache
    from tests.fixtures.s3 import served_requests

    part = max((part for plan in plans for part in plan["files"]), key=lambda part: len(part["row_groups"]))
    uri, groups, columns = part["uri"], part["row_groups"], part["columns"]
    fs, path = storage.fs.inner, storage.resolve(uri)
    size = fs.get_file_info(path).size
    footers = FooterCache(storage)
    footer = footers.get(uri)
    wanted = [c for c in columns if c in footer.schema.names]

    def per_row_group() -> None:
        for group in groups:
            with fs.open_input_file(path) as source:
                pq.ParquetFile(source, metadata=footer).read_row_group(group, columns=wanted)

    def once_per_file() -> None:
        for _ in HotTier(storage, footers, 0).read_row_groups(uri, groups, wanted):
            pass

    def fragment_with_size() -> None:
        fragment = ds.ParquetFileFormat().make_fragment(path, fs, file_size=size, row_groups=groups)
        fragment.to_table(columns=wanted)

    def all_at_once() -> None:
        with fs.open_input_file(path) as source:
            pq.ParquetFile(source, metadata=footer).read_row_groups(groups, columns=wanted)

    ways = {}
    for name, read in (("a file opened per row group (before)", per_row_group),
                       ("opened once, cached footer, a read per row group (now)", once_per_file),
                       ("`make_fragment(file_size=)`, no cached footer possible", fragment_with_size),
                       ("opened once, cached footer, one read for all row groups", all_at_once)):
        with served_requests(s3) as served:
            read()
        ways[name] = dict(served)
        print(f"[object_requests] opening: {name}: {ways[name]}", flush=True)
    return {"row_groups": len(groups), "columns": len(wanted), "ways": ways}


def _local_copy(s3_storage, splits: list[dict[str, Any]], root: Path, plans: list[dict[str, Any]]):
    """The demo's split files copied to a local directory, and the plans pointing at the copies."""
    from strata_core.storage import ObjectStore

    local = ObjectStore(root.resolve().as_uri())
    moved = {}
    for split in splits:
        relative = s3_storage.resolve(split["uri"])[len(s3_storage.root_path) + 1:]
        with s3_storage.open_input(split["uri"]) as source:
            local.write_bytes(relative, source.read())
        moved[split["uri"]] = local.uri_for(relative)
    return local, [{**plan, "files": [{**part, "uri": moved[part["uri"]]} for part in plan["files"]]}
                   for plan in plans]


def run(stack: Stack, *, rows_per_window: int = ROWS_PER_WINDOW, overhead_runs: int = 7,
        parts: tuple[str, ...] = ("requests", "overhead")) -> dict[str, Any]:
    from bench.bench_query import api_child
    from strata_core.storage import ObjectStore
    from strata_services.demo import demo_queries
    from tests.fixtures.s3 import moto_server

    keys = stack.keys
    url = stack.create_database("strata_bench_object_requests")
    now = int(time.time())
    with moto_server(stack.path("moto") / "moto.log") as s3, _aws_environment(s3.environment()):
        storage_uri = s3.storage_uri("bench")
        storage = ObjectStore(storage_uri)
        indexer = stack.start_indexer(url, stack.path("unused-local-root"), storage_uri=storage_uri)
        splits = _ingest(indexer.base_url, storage, keys, now, rows_per_window)
        indexer.stop()
        base_env = {"STRATA_DATABASE_URL": url, "STRATA_STORAGE_URI": storage_uri, "STRATA_API_KEYS": keys.as_json(),
                    "STRATA_SPARK_REMOTE": ""}
        queries = []
        with api_child("query-api", {**base_env, "STRATA_HOME": str(stack.path("home-ram"))},
                       stack.path("logs-ram")) as with_ram, \
                api_child("query-api", {**base_env, "STRATA_HOME": str(stack.path("home-no-ram")),
                                        "STRATA_QUERY_HOT_CACHE_BYTES": "0"}, stack.path("logs-no-ram")) as no_ram, \
                httpx.Client(base_url=with_ram.url, headers=keys.header(keys.admin), timeout=600) as ram_client, \
                httpx.Client(base_url=no_ram.url, headers=keys.header(keys.admin), timeout=600) as plain_client:
            plans = []
            for title, sql in demo_queries(now):
                if "requests" not in parts:
                    plans.append(ram_client.post("/v1/query/explain", json={"sql": sql}).json())
                    continue
                first = _run(ram_client, sql)
                repeated = _run(ram_client, sql)
                _run(plain_client, sql)
                without_ram = _run(plain_client, sql)
                plan = ram_client.post("/v1/query/explain", json={"sql": sql}).json()
                plans.append(plan)
                queries.append({"title": title, "first": first, "repeated": repeated, "without_ram": without_ram,
                                "predicted": plan["object_requests"], "files": plan["total_files"],
                                "row_groups": plan["total_row_groups"]})
                print(f"[object_requests] {title!r}: first {first}, repeated {repeated}, "
                      f"no RAM tier {without_ram}, EXPLAIN {plan['object_requests']}", flush=True)
        opening = _opening(s3, storage, plans) if "requests" in parts else None
        overhead = {}
        if "overhead" in parts:
            local, local_plans = _local_copy(storage, splits, stack.path("local-copy"), plans)
            overhead = {"s3": _overhead(storage, plans, overhead_runs),
                        "local": _overhead(local, local_plans, overhead_runs)}
            print(f"[object_requests] overhead {overhead}", flush=True)
    return {"files": len(splits), "rows": rows_per_window * WINDOWS, "queries": queries, "overhead": overhead,
            "overhead_runs": overhead_runs, "opening": opening}


def _cell(requests: dict[str, int]) -> str:
    return (f"{requests['gets']} / {requests['heads']} / {requests['lists']} / "
            f"{requests['bytes_read'] / 1024:,.0f} KiB")


def render(result: dict[str, Any]) -> str:
    lines = [
        "## Object-store requests of the demo's queries on S3",
        "",
        f"`strata demo`'s index ({result['rows']:,} rows in {result['files']} files, one per window, with their "
        "artifacts) on an S3 server (moto), queried through query-api on the local engine. Each run is fresh "
        "(`Cache-Control: no-cache`); counts are the query summary's `object_requests` (GETs / HEADs / LISTs / "
        "bytes read). *First*: the query's first run, after the queries above it (what they fetched, footers, "
        "artifacts and row groups in the RAM tier, is not fetched again); *repeated*: the same "
        "query again, the RAM tier on (the default); *RAM tier off*: a repeated run on a query-api with "
        "`STRATA_QUERY_HOT_CACHE_BYTES=0`, so only the row groups are fetched again, never a footer or an "
        "artifact; *EXPLAIN*: the plan's own prediction of that scan. The local engine opens each file it reads "
        "once (one HEAD: pyarrow 26's `FileSystem.open_input_file` takes a path only, and S3 learns the size "
        "from a HEAD) and reads its row groups through that handle with the footer planning cached.",
        "",
        "| query | files / row groups | first | repeated | RAM tier off | EXPLAIN |",
        "|---|---|---|---|---|---|",
    ]
    for q in result["queries"]:
        lines.append(f"| {q['title']} | {q['files']} / {q['row_groups']} | {_cell(q['first'])} | "
                     f"{_cell(q['repeated'])} | {_cell(q['without_ram'])} | {_cell(q['predicted'])} |")
    opening = result["opening"]
    lines += [
        "",
        f"Opening a split file on S3: the requests the S3 server answered (its access log) for one file's "
        f"{opening['row_groups']} kept row groups, {opening['columns']} columns, read four ways. pyarrow 26's "
        "`FileSystem.open_input_file` refuses a `FileInfo` (\"Path must be a string\"), so a file opened by path "
        "costs a HEAD for its size; a dataset fragment given the size (which the metastore holds) skips the HEAD "
        "but reads the footer itself, since it cannot be handed the cached one: one HEAD traded for one GET. "
        "Reading the kept row groups in one call coalesces column chunks across row groups too (the last row) "
        "but holds them all at once and no longer matches EXPLAIN's per-row-group `ranged_gets`: not done.",
        "",
        "| read | GETs | HEADs |",
        "|---|---|---|",
    ]
    for name, served in opening["ways"].items():
        lines.append(f"| {name} | {served.get('gets', 0)} | {served.get('heads', 0)} |")
    return "\n".join(lines)


def render_overhead(result: dict[str, Any]) -> str:
    lines = [
        "### The cost of counting object-store requests",
        "",
        f"The cost of counting: every plan's row groups read as the local engine reads them with nothing cached, "
        f"median of {result['overhead_runs']} alternating runs, without a meter and with one (the engine then "
        "counts each file's open and each row group's coalesced reads from the cached footer; no handle is "
        "wrapped), each plan read both ways back to back, which way first alternating; *overhead* is the "
        "median of the rounds' ratios.",
        "",
        "| store | without a meter | with a meter | overhead |",
        "|---|---|---|---|",
    ]
    for store, o in result["overhead"].items():
        lines.append(f"| {store} | {o['plain'] * 1000:.1f} ms | {o['counted'] * 1000:.1f} ms | "
                     f"{(o['ratio'] - 1) * 100:+.1f}% |")
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-window", type=int, default=ROWS_PER_WINDOW)
    parser.add_argument("--overhead-runs", type=int, default=7)
    parser.add_argument("--part", choices=("all", "requests", "overhead"), default="all",
                        help="requests: the queries' counts; overhead: the cost of counting; all: both")
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    args = parser.parse_args()
    parts = ("requests", "overhead") if args.part == "all" else (args.part,)
    measured: dict[str, Any] = {}

    def measure(stack: Stack) -> dict[str, Any]:
        # One ingest and one run for both parts: the second section renders what the first measured.
        if not measured:
            measured.update(run(stack, rows_per_window=args.rows_per_window, overhead_runs=args.overhead_runs,
                                parts=parts))
        return measured

    sections = {SECTION: lambda stack: render(measure(stack)),
                OVERHEAD_SECTION: lambda stack: render_overhead(measure(stack))}
    run_and_write({name: sections[name] for name, part in ((SECTION, "requests"), (OVERHEAD_SECTION, "overhead"))
                   if part in parts}, write=not args.no_write)


if __name__ == "__main__":
    main()
