"""The operator's lifecycle commands over the APIs: `strata pause|resume` (a queue, for one index), `strata retry`
(one excluded job, or every excluded job of an index) and `strata retention apply|drop` (whole windows dropped).
Compaction and retention are planner-api's, indexing is indexer-api's; every call needs an admin key."""

from __future__ import annotations

import argparse
from typing import Any

from strata_core.config import Settings
from strata_services.client import QUEUE_API, CliError, call
from strata_services.compact import parse_time
from strata_services.output import FORMATS, emit, iso_time


def cmd_pause(args: argparse.Namespace, settings: Settings) -> int:
    state = call(settings, QUEUE_API[args.queue], "POST", f"/v1/indexes/{args.index}/{args.queue}/pause", "admin",
                 what=f"pausing {args.queue} of {args.index!r}",
                 params={"cancel_running": "true"} if args.cancel_running else {})
    if args.format != "table":
        emit([state], [], args.format, document=state)
        return 0
    cancelled = state["cancelled_job_ids"]
    print(f"{args.queue} of {args.index} paused since {state['paused_at']}: no new jobs are handed out"
          + (f"; cancelled {len(cancelled)} running: {', '.join(cancelled)}" if cancelled
             else "; running jobs finish"))
    return 0


def cmd_resume(args: argparse.Namespace, settings: Settings) -> int:
    state = call(settings, QUEUE_API[args.queue], "POST", f"/v1/indexes/{args.index}/{args.queue}/resume", "admin",
                 what=f"resuming {args.queue} of {args.index!r}")
    if args.format != "table":
        emit([state], [], args.format, document=state)
        return 0
    print(f"{args.queue} of {args.index} resumed: its waiting jobs are handed out from the next poll")
    return 0


def cmd_retry(args: argparse.Namespace, settings: Settings) -> int:
    api = QUEUE_API[args.queue]
    if (args.job_id is None) == (args.index is None):
        raise CliError("give either a job id or --index (every excluded job of that index), not both or neither")
    if args.job_id is not None:
        job = call(settings, api, "POST", f"/v1/{args.queue}/jobs/{args.job_id}/retry", "admin",
                   what=f"retrying {args.queue} job {args.job_id}")
        rows = [{"job_id": job["job_id"], "status": job["status"], "stage": job["stage"],
                 "failures_logged": len(job["failure_log"])}]
        emit(rows, ["job_id", "status", "stage", "failures_logged"], args.format, document=job)
        return 0
    result = call(settings, api, "POST", f"/v1/indexes/{args.index}/{args.queue}/jobs/retry", "admin",
                  what=f"retrying the excluded {args.queue} jobs of {args.index!r}")
    rows = [{"job_id": j, "outcome": "retried"} for j in result["retried"]] + \
           [{"job_id": j, "outcome": "cancelled (inputs changed)"} for j in result["cancelled"]]
    emit(rows, ["job_id", "outcome"], args.format, document=result)
    return 0


def _print_report(report: dict[str, Any], fmt: str) -> None:
    rows = [{"window": iso_time(w["window_start"]), "splits": w["splits"], "rows": w["rows"],
             "mb": round(w["bytes"] / 1e6, 2), "cancelled_jobs": len(w["cancelled_job_ids"])}
            for w in report["windows"]]
    if fmt != "table":
        emit(rows, [], fmt, document=report)
        return
    verb = "would drop" if report["dry_run"] else "dropped"
    print(f"{report['index_id']}: {verb} {len(rows)} windows ending at or before {iso_time(report['cutoff'])} "
          f"({report['splits']} splits, {report['rows']:,} rows, {report['bytes'] / 1e6:.2f} MB)")
    if rows:
        emit(rows, ["window", "splits", "rows", "mb", "cancelled_jobs"], fmt)
    if not report["dry_run"] and rows:
        print("their files are deleted by the garbage collector after its grace period")


def cmd_retention_apply(args: argparse.Namespace, settings: Settings) -> int:
    report = call(settings, "planner-api", "POST", f"/v1/indexes/{args.index}/retention/apply", "admin",
                  what=f"applying the retention of {args.index!r}", json={"dry_run": args.dry_run}, timeout=600)
    _print_report(report, args.format)
    return 0


def cmd_retention_drop(args: argparse.Namespace, settings: Settings) -> int:
    params = {"older_than": parse_time(args.older_than), "dry_run": "true" if args.dry_run else "false"}
    report = call(settings, "planner-api", "DELETE", f"/v1/indexes/{args.index}/windows", "admin",
                  what=f"dropping windows of {args.index!r}", params=params, timeout=600)
    _print_report(report, args.format)
    return 0


def _queue_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queue", choices=sorted(QUEUE_API), help="which queue: compaction or indexing")


def _format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="table", help="table (default), json or ndjson")


def add_commands(sub: argparse._SubParsersAction) -> None:
    pause = sub.add_parser("pause", help="pause compaction or indexing of one index: no new jobs are handed out")
    _queue_argument(pause)
    pause.add_argument("index", help="the index id")
    pause.add_argument("--cancel-running", action="store_true",
                       help="also cancel the index's running jobs (by default they finish)")
    _format_argument(pause)
    pause.set_defaults(func=cmd_pause)

    resume = sub.add_parser("resume", help="resume compaction or indexing of one index")
    _queue_argument(resume)
    resume.add_argument("index", help="the index id")
    _format_argument(resume)
    resume.set_defaults(func=cmd_resume)

    retry = sub.add_parser("retry", help="put an excluded job back in its queue (failure count reset, log kept)")
    _queue_argument(retry)
    retry.add_argument("job_id", nargs="?", help="the excluded job to retry")
    retry.add_argument("--index", help="instead of one job: every excluded job of this index")
    _format_argument(retry)
    retry.set_defaults(func=cmd_retry)

    retention = sub.add_parser("retention", help="drop whole windows older than a period (retention)")
    actions = retention.add_subparsers(dest="retention_command", required=True)
    apply = actions.add_parser("apply", help="apply the index's configured retention now")
    apply.add_argument("index", help="the index id (its config must set retention.period_secs)")
    apply.add_argument("--dry-run", action="store_true", help="only list the windows that would be dropped")
    _format_argument(apply)
    apply.set_defaults(func=cmd_retention_apply)
    drop = actions.add_parser("drop", help="drop the index's windows ending at or before a time")
    drop.add_argument("index", help="the index id")
    drop.add_argument("--older-than", required=True,
                      help="drop windows ending at or before this (epoch seconds or RFC 3339; not in the future)")
    drop.add_argument("--dry-run", action="store_true", help="only list the windows that would be dropped")
    _format_argument(drop)
    drop.set_defaults(func=cmd_retention_drop)
