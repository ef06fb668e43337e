"""`strata skips`: what the maintenance passes (GC, retention, the janitor, compaction and indexing planning)
currently skip, read from planner-api and indexer-api, which each list their own passes; needs an admin key."""

from __future__ import annotations

import argparse
from typing import Any

from strata_core.config import Settings
from strata_frame.maintenance.passes import LISTING_HEAD, MaintenancePass
from strata_services.client import call
from strata_services.output import FORMATS, emit

API_OF_HEAD = {"compaction": "planner-api", "indexing": "indexer-api"}


def _skips_of(settings: Settings, head: str, passes: list[str], index: str | None) -> list[dict[str, Any]]:
    skips: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"pass": passes, "limit": 1000, **({"index_id": index} if index else {}),
                                  **({"cursor": cursor} if cursor else {})}
        page = call(settings, API_OF_HEAD[head], "GET", f"/v1/{head}/maintenance/skips", "admin",
                    what=f"listing the skips of {', '.join(passes)}", params=params)
        skips += page["skips"]
        cursor = page.get("next_cursor")
        if not cursor:
            return skips


def cmd_skips(args: argparse.Namespace, settings: Settings) -> int:
    wanted = [MaintenancePass(p) for p in (args.passes or list(MaintenancePass))]
    skips = []
    for head in sorted({LISTING_HEAD[p] for p in wanted}):
        skips += _skips_of(settings, head, [str(p) for p in wanted if LISTING_HEAD[p] == head], args.index)
    emit(skips, ["pass", "index_id", "entry", "reason_class", "attempts", "first_seen_at", "last_seen_at",
                 "reason"], args.format, document=skips)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    skips = sub.add_parser("skips", help="entries the maintenance passes skip (a file outside the storage root or "
                                         "that cannot be deleted, an unreadable artifact, an index whose planning "
                                         "fails), with the reason and how many passes met each")
    skips.add_argument("--pass", dest="passes", action="append", choices=[str(p) for p in MaintenancePass],
                       help="only this pass (repeat for several; default every pass)")
    skips.add_argument("--index", help="only this index's entries")
    skips.add_argument("--format", choices=FORMATS, default="table", help="table (default), json or ndjson")
    skips.set_defaults(func=cmd_skips)
