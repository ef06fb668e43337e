"""`strata delete` and `strata deletes`: row-level deletes through planner-api (README "Deletes"). A delete is
accepted at once (from then on no query returns a row it matches); `--wait` follows its rewrite with a progress
bar and prints the receipt; `--verify` runs the condition over the data again; `--cancel` cancels one none of whose
rewrites has published yet."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from strata_core.config import Settings
from strata_services.client import call
from strata_services.compact import _bar
from strata_services.output import FORMATS, emit

ENDED = ("succeeded", "failed", "cancelled")


def _path(index: str, *rest: str) -> str:
    return "/".join([f"/v1/indexes/{index}/deletes", *rest])


def _get(settings: Settings, index: str, delete_id: str, *rest: str) -> dict[str, Any]:
    return call(settings, "planner-api", "GET", _path(index, delete_id, *rest), "writer",
                what=f"reading delete {delete_id}")


def _wait(settings: Settings, index: str, delete_id: str, poll_secs: float) -> dict[str, Any]:
    interactive = sys.stdout.isatty()
    while True:
        delete = _get(settings, index, delete_id)
        progress = delete["progress"]
        line = (f"{_bar(progress['fraction'])} {progress['splits_done']}/{progress['splits_covered']} splits "
                f"done  {delete['status']}")
        print(("\r" + line.ljust(100)) if interactive else line, end="" if interactive else "\n", flush=True)
        if delete["status"] in ENDED:
            print()
            return delete
        time.sleep(poll_secs)


def _print_delete(delete: dict[str, Any]) -> None:
    print(f"delete {delete['delete_id']} on {delete['index_id']}: {delete['status']}")
    print(f"  where {delete['where']}" + (f"  (partition {delete['partition_id']})" if delete["partition_id"] else ""))
    print(f"  accepted {delete['cutoff']['accepted_at']}, covers {delete['progress']['splits_covered']} splits")
    if delete["error"]:
        print(f"  error: {delete['error']}")
    receipt = delete.get("receipt")
    if receipt:
        print(f"  receipt: {receipt['splits_rewritten']} splits rewritten, {receipt['splits_unchanged']} unchanged "
              f"(no matching row), {receipt['rows_removed']} rows removed, {receipt['artifacts_rebuilt']} artifacts "
              f"rebuilt so far, completed {receipt['completed_at']}")
        if receipt["splits_rewritten"]:
            # The indexer builds the new splits' artifacts after the publish: a receipt read at once counts few.
            print("  (the new splits' artifacts are built by the indexer after the publish; the receipt "
                  "(GET /v1/indexes/{index}/deletes/{id}) counts them as they land)")
        for split in receipt["splits"]:
            if split["state"] == "rewritten":
                print(f"    {split['split_id']} -> {', '.join(split['new_split_ids']) or '(no rows left)'}: "
                      f"{split['rows_removed']} of {split['rows_before']} rows removed")
            elif split["state"] == "unchanged":
                print(f"    {split['split_id']} unchanged: 0 of {split['rows_before']} rows matched, kept as it is")


def _print_verification(result: dict[str, Any]) -> None:
    verdict = "verified: no matching row left" if result["verified"] else (
        f"NOT verified: {result['matching_rows']} matching rows left")
    print(f"{verdict} ({result['splits_examined']} splits examined)")
    for split in result["splits_with_matches"]:
        note = " (published after the delete: not covered)" if split["published_after_delete"] else ""
        print(f"  {split['split_id']}: {split['matching_rows']} rows{note}")


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    if args.verify:
        result = _get(settings, args.index, args.verify, "verify")
        _print_verification(result)
        return 0 if result["verified"] else 1
    if args.cancel:
        delete = call(settings, "planner-api", "POST", _path(args.index, args.cancel, "cancel"), "writer",
                      what=f"cancelling delete {args.cancel}")
        print(f"cancelled delete {delete['delete_id']}: the rows it matched are visible to queries again")
        return 0
    if not args.where:
        raise SystemExit("strata delete: --where is required (or --verify / --cancel DELETE_ID)")
    body = {"where": args.where, **({"partition_id": args.partition} if args.partition else {}),
            **({"reason": args.reason} if args.reason else {})}
    delete = call(settings, "planner-api", "POST", _path(args.index), "writer", what="accepting the delete",
                  json=body)
    print(f"accepted delete {delete['delete_id']}: matching rows are hidden from queries from now on")
    if args.wait:
        delete = _wait(settings, args.index, delete["delete_id"], args.poll_secs)
        _print_delete(delete)
        return 0 if delete["status"] == "succeeded" else 1
    return 0


def cmd_deletes(args: argparse.Namespace, settings: Settings) -> int:
    if args.delete_id:
        _print_delete(_get(settings, args.index, args.delete_id))
        return 0
    page = call(settings, "planner-api", "GET", _path(args.index), "writer", what="listing deletes")
    rows = [{"delete_id": d["delete_id"], "status": d["status"], "accepted_at": d["cutoff"]["accepted_at"],
             "splits": f"{d['progress']['splits_done']}/{d['progress']['splits_covered']}",
             "rows_removed": (d["receipt"] or {}).get("rows_removed", ""), "where": d["where"]}
            for d in page["deletes"]]
    emit(rows, ["delete_id", "status", "accepted_at", "splits", "rows_removed", "where"], args.format,
         document=page)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    delete = sub.add_parser("delete", help="delete the rows of an index matching a SQL condition (hidden from "
                                           "queries at once, then rewritten out of the files)")
    delete.add_argument("index", help="the index to delete rows from")
    delete.add_argument("--where", help="SQL boolean expression over the index's columns, e.g. \"user_id = 'u1'\"")
    delete.add_argument("--partition", help="only this partition (tenant)")
    delete.add_argument("--reason", help="why (kept with the delete and its receipt)")
    delete.add_argument("--wait", action="store_true", help="follow the rewrite and print the receipt")
    delete.add_argument("--verify", metavar="DELETE_ID",
                        help="run a delete's condition over the data again; non-zero exit if rows remain")
    delete.add_argument("--cancel", metavar="DELETE_ID",
                        help="cancel a delete none of whose rewrites has published yet (its rows come back)")
    delete.add_argument("--poll-secs", type=float, default=1.0, help="seconds between progress reads with --wait")
    delete.set_defaults(func=cmd_delete)
    deletes = sub.add_parser("deletes", help="an index's deletes, or one with its receipt")
    deletes.add_argument("index", help="the index whose deletes to list")
    deletes.add_argument("delete_id", nargs="?", help="show this delete, with its receipt once it succeeded")
    deletes.add_argument("--format", choices=FORMATS, default="table", help="table (default), json or ndjson")
    deletes.set_defaults(func=cmd_deletes)
