"""`strata query` and `strata explain`: SQL through the proxy, as a user's client sends it. Tables for people;
JSON, NDJSON and Arrow stream to stdout (or a file) as the server streams them, so a large result is never held
whole by the CLI."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, BinaryIO

import httpx

from strata_core.config import Settings
from strata_services.client import CliError, api_key, api_url, problem_text
from strata_services.output import FORMATS, emit, table

MEDIA = {"table": "application/json", "json": "application/json", "ndjson": "application/x-ndjson",
         "arrow": "application/vnd.apache.arrow.stream"}


def _sql(text: str) -> str:
    sql = sys.stdin.read() if text == "-" else text
    if not sql.strip():
        raise CliError("no SQL given (pass it as the argument, or `-` to read it from stdin)")
    return sql


def _client(settings: Settings, timeout: float) -> httpx.Client:
    return httpx.Client(base_url=api_url(settings, "proxy"), timeout=timeout,
                        headers={"Authorization": f"Bearer {api_key(settings, 'query')}"})


def _sink(output: str | None, binary: bool) -> BinaryIO:
    if output:
        return open(output, "wb")  # noqa: SIM115 - closed by the caller
    if binary and sys.stdout.isatty():
        raise CliError("an Arrow stream is binary: pass --output FILE, or redirect stdout")
    return sys.stdout.buffer


def cmd_query(args: argparse.Namespace, settings: Settings) -> int:
    body: dict[str, Any] = {"sql": _sql(args.sql)}
    if args.engine:
        body["engine"] = args.engine
    if args.max_rows:
        body["max_rows"] = args.max_rows
    if args.timeout:
        body["timeout_secs"] = args.timeout
    headers = {"Accept": MEDIA[args.format]}
    if args.no_cache:
        headers["Cache-Control"] = "no-cache"
    with _client(settings, (args.timeout or 300) + 30) as http, \
            http.stream("POST", "/v1/query", json=body, headers=headers) as response:
        if response.status_code >= 400:
            response.read()
            raise CliError(f"query failed: {problem_text(response)}")
        if args.format != "table":
            sink = _sink(args.output, binary=args.format == "arrow")
            try:
                for chunk in response.iter_bytes():
                    sink.write(chunk)
                sink.flush()
            finally:
                if args.output:
                    sink.close()
            return 0
        response.read()
        result = response.json()
    columns = [c["name"] for c in result["columns"]]
    table(result["rows"], columns)
    summary = result["summary"]
    cut = f", cut at the row cap of {summary['row_cap']:,}" if summary["truncated"] else ""
    reason = response.headers.get("x-strata-engine-reason")
    scanned = (f"{summary['files_scanned']} files, {summary['row_groups_scanned']} row groups, "
               f"{summary['bytes_scanned'] / 1e6:.2f} MB")
    ran = (f"the result kept from an earlier {summary['engine']} run over the same files ({scanned})"
           if summary.get("result_cache") == "hit" else f"{summary['engine']} engine: {reason}; {scanned} read")
    print(f"({summary['rows']:,} rows{cut}; {ran}; planned in {summary['planning_ms']:.1f} ms, "
          f"{summary['elapsed_ms']:.1f} ms in all)", file=sys.stderr)
    return 0


def cmd_explain(args: argparse.Namespace, settings: Settings) -> int:
    body: dict[str, Any] = {"sql": _sql(args.sql)}
    if args.engine:
        body["engine"] = args.engine
    with _client(settings, 120) as http:
        response = http.post("/v1/query/explain", json=body)
    if response.status_code >= 400:
        raise CliError(f"explain failed: {problem_text(response)}")
    plan = response.json()
    if args.format != "table":
        emit(plan["files"], [], args.format, document=plan)
        return 0
    time_range = plan["time_range"]
    engine = plan.get("engine") or {}
    print(f"index {plan['index_id']}  tenant {plan['tenant'] or '-'}  planned in {plan['planning_ms']:.1f} ms")
    print(f"predicate: {plan['predicate']}")
    print(f"time range on {time_range['column']} ({time_range['source']}): "
          f"{json.dumps(time_range['intervals'])}")
    print(f"engine: {engine.get('engine') or 'none'} ({engine.get('reason', '-')})")
    print(f"columns read: {', '.join(plan['columns'])}")
    print()
    table([{"stage": s["stage"], "files": f"{s['files_before']:,} -> {s['files_after']:,}",
            "row_groups": f"{s['row_groups_before']:,} -> {s['row_groups_after']:,}",
            "mb": f"{s['bytes_before'] / 1e6:,.2f} -> {s['bytes_after'] / 1e6:,.2f}"} for s in plan["stages"]],
          ["stage", "files", "row_groups", "mb"])
    print()
    table([{"split_id": f["split_id"], "partition": f["partition_id"], "row_groups": len(f["row_groups"]),
            "rows": f["rows"], "bytes": f["bytes"], "pruned_with": f["pruned_with"]} for f in plan["files"]],
          ["split_id", "partition", "row_groups", "rows", "bytes", "pruned_with"])
    print(f"\nreads {plan['total_files']:,} files, {plan['total_row_groups']:,} row groups, "
          f"{plan['total_rows']:,} rows, {plan['total_bytes'] / 1e6:.2f} MB")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    query = sub.add_parser("query", help="run SQL through the proxy and print or stream the result")
    query.add_argument("sql", help="one SELECT over one index (the index id is the table); `-` reads stdin")
    query.add_argument("--format", choices=[*FORMATS, "arrow"], default="table",
                       help="table (default; summary on stderr), json, ndjson, or arrow (an Arrow IPC stream)")
    query.add_argument("--output", help="write the json/ndjson/arrow result to this file instead of stdout")
    query.add_argument("--engine", choices=["local", "spark"],
                       help="force the engine (default: the one the plan's size selects)")
    query.add_argument("--no-cache", action="store_true",
                       help="run the query even when the result of an earlier run over the same files is kept")
    query.add_argument("--max-rows", type=int, help="cut the result after this many rows (reported, never silent)")
    query.add_argument("--timeout", type=float, help="seconds before the server interrupts the query")
    query.set_defaults(func=cmd_query)

    explain = sub.add_parser("explain", help="show the plan of SQL: time range, pruning stages, files kept")
    explain.add_argument("sql", help="one SELECT over one index; `-` reads stdin")
    explain.add_argument("--format", choices=FORMATS, default="table",
                         help="table (default), json (the whole plan) or ndjson (one kept file per line)")
    explain.add_argument("--engine", choices=["local", "spark"], help="plan as if forcing this engine")
    explain.set_defaults(func=cmd_explain)
