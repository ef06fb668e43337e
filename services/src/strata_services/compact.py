"""`strata compact`: plan or trigger compaction, optionally waiting with a progress bar."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime

import httpx

from strata_core.config import Settings
from strata_services.client import CliError, api_key, api_url, problem_text

TERMINAL = {"success", "excluded", "cancelled"}


def parse_time(text: str | None) -> int | None:
    """Epoch seconds, or an RFC 3339 datetime with a timezone."""
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise CliError(f"{text!r} is neither epoch seconds nor an RFC 3339 datetime") from exc
    if value.tzinfo is None:
        raise CliError(f"{text!r} needs a timezone (e.g. 2026-11-21T10:00:00Z)")
    return int(value.timestamp())


def cmd_compact(args: argparse.Namespace, settings: Settings) -> int:
    base = api_url(settings, "planner-api")
    headers = {"Authorization": f"Bearer {api_key(settings, 'admin')}"}
    body = {"final": args.final}
    if args.start is not None:
        body["from"] = parse_time(args.start)
    if args.end is not None:
        body["to"] = parse_time(args.end)
    action = "plan" if args.dry_run else "trigger"
    with httpx.Client(base_url=base, headers=headers, timeout=120) as client:
        response = client.post(f"/v1/indexes/{args.index}/compaction/{action}", json=body)
        if response.status_code != 200:
            raise CliError(f"compaction {action} failed: {problem_text(response)}")
        plan = response.json()
        _print_plan(plan)
        if args.dry_run or not args.wait:
            return 0
        return _wait(client, plan["created_job_ids"], args.poll_secs)


def _print_plan(plan: dict) -> None:
    ops = plan["operations"]
    verb = "would merge" if plan["dry_run"] else "merging"
    print(f"{plan['index_id']}: {plan['windows_examined']} windows examined, {len(ops)} merge operations ({verb})")
    for op in ops:
        print(f"  window {op['window_start']}  partition {op['partition_id']:<12} {op['kind']:<5} level {op['level']}  "
              f"{len(op['split_ids']):>3} splits  {op['num_rows']:>12,} rows  {op['size_bytes'] / 1e6:9.2f} MB")
    if plan["skipped_counts"]:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(plan["skipped_counts"].items()))
        print(f"  splits left alone: {reasons}")
    if not plan["dry_run"]:
        print(f"  created {len(plan['created_job_ids'])} jobs"
              + (f" ({plan['operations_not_created']} deferred)" if plan["operations_not_created"] else ""))


def _bar(fraction: float, width: int = 30) -> str:
    filled = int(round(fraction * width))
    return "[" + "#" * filled + "." * (width - filled) + "]"


def _wait(client: httpx.Client, job_ids: list[str], poll_secs: float) -> int:
    if not job_ids:
        print("nothing to wait for")
        return 0
    interactive = sys.stdout.isatty()
    jobs: dict[str, dict] = {}
    while True:
        for job_id in job_ids:
            response = client.get(f"/v1/compaction/jobs/{job_id}")
            if response.status_code != 200:
                raise CliError(f"reading job {job_id} failed: {problem_text(response)}")
            jobs[job_id] = response.json()
        done = sum(1 for j in jobs.values() if j["status"] in TERMINAL)
        progress = sum(1.0 if j["status"] in TERMINAL else j["progress"] for j in jobs.values()) / len(jobs)
        stages = sorted({j["stage"] or j["status"] for j in jobs.values() if j["status"] not in TERMINAL})
        line = f"{_bar(progress)} {done}/{len(jobs)} jobs done  {', '.join(stages)}"
        print(("\r" + line.ljust(100)) if interactive else line, end="" if interactive else "\n", flush=True)
        if done == len(jobs):
            break
        time.sleep(poll_secs)
    print()
    failed = [j for j in jobs.values() if j["status"] != "success"]
    for job in jobs.values():
        outcome = job["status"]
        detail = f"{len(job['input_split_ids'])} -> {len(job['output_split_ids'])} splits"
        if job["output_bytes"] is not None:
            detail += f", {job['input_bytes'] / 1e6:.2f} MB -> {job['output_bytes'] / 1e6:.2f} MB"
        if job["last_error"] and outcome != "success":
            detail += f": {job['last_error'].splitlines()[0]}"
        print(f"  job {job['job_id']} {outcome}: {detail}")
    return 1 if failed else 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    compact = sub.add_parser("compact", help="plan or trigger compaction of an index")
    compact.add_argument("--index", required=True, help="the index id")
    compact.add_argument("--from", dest="start", help="first window (epoch seconds or RFC 3339)")
    compact.add_argument("--to", dest="end", help="windows starting before this")
    compact.add_argument("--dry-run", action="store_true", help="print the plan, create nothing")
    compact.add_argument("--final", action="store_true", help="merge what remains toward the target size")
    compact.add_argument("--wait", action="store_true",
                         help="show progress until every job ends; non-zero exit if any failed")
    compact.add_argument("--poll-secs", type=float, default=1.0, help="seconds between progress reads with --wait")
    compact.set_defaults(func=cmd_compact)
