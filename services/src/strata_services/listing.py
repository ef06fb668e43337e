"""`strata indexes`, `strata windows`, `strata debt` and `strata jobs`: what the stack holds, read through the
public APIs, as a table for people or JSON/NDJSON for scripts."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any

from strata_core.config import Settings
from strata_core.domain.job_statuses import LIVE_STATUSES, JobStatus
from strata_services.client import QUEUE_API, call
from strata_services.compact import parse_time
from strata_services.output import FORMATS, emit, iso_time

READ_SCOPES = ("admin", "worker", "writer")


def cmd_indexes(args: argparse.Namespace, settings: Settings) -> int:
    if args.index_id:
        index = call(settings, "indexer-api", "GET", f"/v1/indexes/{args.index_id}", "admin",
                     what=f"reading index {args.index_id!r}")
        config = index["config"]
        rows = [{"field": name, "value": value} for name, value in index.items() if name != "config"]
        rows += [{"field": f"config.{name}", "value": value} for name, value in config.items()]
        emit(rows, ["field", "value"], args.format, document=index)
        return 0
    indexes: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = call(settings, "indexer-api", "GET", "/v1/indexes", "admin", what="listing indexes",
                    params={"limit": 1000, **({"cursor": cursor} if cursor else {})})
        indexes += page["indexes"]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    rows = [{"index_id": i["index_id"], "version": i["version"], "fields": len(i["config"]["fields"]),
             "timestamp_field": i["config"]["timestamp_field"],
             "window_secs": i["config"].get("window_duration_secs"), "created_at": i["created_at"],
             "description": i["config"].get("description")} for i in indexes]
    emit(rows, ["index_id", "version", "fields", "timestamp_field", "window_secs", "created_at", "description"],
         args.format, document=indexes)
    return 0


def cmd_windows(args: argparse.Namespace, settings: Settings) -> int:
    params: dict[str, Any] = {"limit": args.limit}
    if args.start is not None:
        params["window_start_gte"] = parse_time(args.start)
    if args.end is not None:
        params["window_start_lt"] = parse_time(args.end)
    page = call(settings, "planner-api", "GET", f"/v1/indexes/{args.index}/windows", *READ_SCOPES, "query",
                what=f"listing the windows of {args.index!r}", params=params)
    rows = [{**w, "window": iso_time(w["window_start"]), "mb": round(w["bytes"] / 1e6, 2),
             "levels": " ".join(f"L{level}:{n}" for level, n in sorted(w["levels"].items())),
             "waiting": w["splits_waiting"], "waiting_mb": round(w["bytes_waiting"] / 1e6, 2)}
            for w in page["windows"]]
    emit(rows, ["window", "splits", "rows", "mb", "levels", "waiting", "waiting_mb", "live_jobs",
                "marked_for_deletion", "closed", "final", "last_compacted_at"], args.format, document=page)
    return 0


def _debt_rows(debt: dict[str, Any]) -> list[dict[str, Any]]:
    c, indexing = debt["compaction"], debt["indexing"]
    delay = c["first_merge_delay_secs"]
    rows = [("published splits", debt["published_splits"]),
            ("splits waiting for a merge", c["splits_waiting"]),
            ("bytes waiting", c["bytes_waiting"]),
            *((f"  level {level}", f"{v['splits']:,} splits, {v['bytes'] / 1e6:,.2f} MB")
              for level, v in sorted(c["levels"].items(), key=lambda item: int(item[0]))),
            ("oldest waiting split, age (s)", c["oldest_waiting_split_age_secs"]),
            ("closed windows not final", c["closed_windows_not_final"]),
            ("oldest of them, closed for (s)", c["oldest_closed_window_not_final_age_secs"]),
            ("compaction jobs unassigned", c["jobs_unassigned"]),
            ("compaction jobs in progress", c["jobs_in_progress"]),
            ("merges/s (last 60 s)", c["merges_per_sec"]),
            ("rows merged/s (last 60 s)", c["rows_merged_per_sec"]),
            ("first merge delay p50/p90/max (s)",
             "-" if not delay["count"] else f"{delay['p50']:,.1f} / {delay['p90']:,.1f} / {delay['max']:,.1f} "
                                            f"({delay['count']:,} splits, last 10 min)"),
            ("indexing: files waiting", indexing["files_waiting"]),
            ("indexing: oldest waiting (s)", indexing["oldest_waiting_secs"]),
            ("indexing jobs in progress", indexing["jobs_in_progress"])]
    return [{"measure": measure, "value": value} for measure, value in rows]


def cmd_debt(args: argparse.Namespace, settings: Settings) -> int:
    debt = call(settings, "planner-api", "GET", f"/v1/indexes/{args.index}/debt", *READ_SCOPES, "query",
                what=f"reading the debt of {args.index!r}")
    if args.format == "table":
        print(f"{debt['index_id']}: compaction and indexing debt at {debt['measured_at']}")
    emit(_debt_rows(debt), ["measure", "value"], args.format, document=debt)
    return 0


def _jobs(args: argparse.Namespace, settings: Settings) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"limit": args.limit}
    if args.index:
        params["index_id"] = args.index
    if args.status:
        params["status"] = args.status
    page = call(settings, QUEUE_API[args.queue], "GET", f"/v1/{args.queue}/jobs", *READ_SCOPES,
                what=f"listing {args.queue} jobs", params=params)
    return page["jobs"]


def _job_rows(queue: str, jobs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    what = ("window", "kind", "level") if queue == "compaction" else ("split_id", "reason")
    rows = [{**job, "window": iso_time(job.get("window_start")),
             "error": (job["last_error"] or "").splitlines()[0] if job["last_error"] else None} for job in jobs]
    return rows, ["job_id", "status", "stage", "progress", "failures", *what, "worker_id", "created_at", "error"]


def cmd_jobs(args: argparse.Namespace, settings: Settings) -> int:
    if not args.watch:
        jobs = _jobs(args, settings)
        rows, columns = _job_rows(args.queue, jobs)
        emit(rows, columns, args.format, document=jobs)
        return 0
    interactive = sys.stdout.isatty() and args.format == "table"
    try:
        while True:
            jobs = _jobs(args, settings)
            rows, columns = _job_rows(args.queue, jobs)
            if interactive:
                print("\033[2J\033[H", end="")
            if args.format == "table":
                live = sum(1 for job in jobs if job["status"] in LIVE_STATUSES)
                print(f"{args.queue} jobs at {datetime.now(UTC).isoformat(timespec='seconds')}: {len(jobs)} listed, "
                      f"{live} live (Ctrl-C to stop)")
            emit(rows, columns, args.format, document=jobs)
            sys.stdout.flush()
            if not any(job["status"] in LIVE_STATUSES for job in jobs) and not args.forever:
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 130


def add_commands(sub: argparse._SubParsersAction) -> None:
    indexes = sub.add_parser("indexes", help="list the indexes, or show one")
    indexes.add_argument("index_id", nargs="?", help="show this index's metadata and config")
    indexes.add_argument("--format", choices=FORMATS, default="table", help="table (default), json or ndjson")
    indexes.set_defaults(func=cmd_indexes)

    windows = sub.add_parser("windows", help="an index's time windows, newest first: splits, levels, live jobs")
    windows.add_argument("index", help="the index id")
    windows.add_argument("--from", dest="start", help="first window start (epoch seconds or RFC 3339)")
    windows.add_argument("--to", dest="end", help="windows starting before this")
    windows.add_argument("--limit", type=int, default=100, help="at most this many windows (default 100)")
    windows.add_argument("--format", choices=FORMATS, default="table", help="table (default), json or ndjson")
    windows.set_defaults(func=cmd_windows)

    debt = sub.add_parser("debt", help="how far compaction and indexing are behind an index's writes: splits "
                                       "waiting by level, closed windows not final, merge rate, files waiting")
    debt.add_argument("index", help="the index id")
    debt.add_argument("--format", choices=("table", "json"), default="table", help="table (default) or json")
    debt.set_defaults(func=cmd_debt)

    jobs = sub.add_parser("jobs", help="compaction or indexing jobs, oldest first")
    jobs.add_argument("--queue", choices=sorted(QUEUE_API), default="compaction",
                      help="which queue (default compaction)")
    jobs.add_argument("--index", help="only this index's jobs")
    jobs.add_argument("--status", action="append", choices=[s.value for s in JobStatus],
                      help="only jobs in this status (repeat for several)")
    jobs.add_argument("--limit", type=int, default=100, help="at most this many jobs (default 100)")
    jobs.add_argument("--watch", action="store_true",
                      help="refresh until no listed job is unassigned or in progress (Ctrl-C stops)")
    jobs.add_argument("--forever", action="store_true", help="with --watch: keep refreshing until Ctrl-C")
    jobs.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes with --watch")
    jobs.add_argument("--format", choices=FORMATS, default="table", help="table (default), json or ndjson")
    jobs.set_defaults(func=cmd_jobs)
