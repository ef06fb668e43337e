"""`strata metastore rebuild | verify | checkpoint`: the operator's side of the commit log (README, "Losing
PostgreSQL"). They talk to PostgreSQL and the bucket directly, not to the APIs: a rebuild runs when there is no
metastore for the APIs to serve from.

The database is STRATA_DATABASE_URL, else the running local stack's embedded one; the bucket is
STRATA_STORAGE_URI (else the local stack's directory)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime

from strata_core.config import Settings
from strata_core.errors import StrataError
from strata_services.client import CliError, stack_state

# The metastore's modules (SQLAlchemy, Alembic: about a second) are imported by the commands that use them, not when
# the CLI starts: every other command would pay for them.


def _database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    state = stack_state(settings.home) or {}
    if state.get("database_url"):
        return state["database_url"]
    raise CliError("no database: set STRATA_DATABASE_URL (or run this beside `strata up`, whose embedded "
                   "PostgreSQL it then uses)")


async def _with_sessions(settings: Settings, work):
    from strata_core.storage import ObjectStore
    from strata_metastore.engine import create_engine, session_factory

    engine = create_engine(_database_url(settings), pool_size=2)
    storage = ObjectStore(settings.resolved_storage_uri)
    try:
        return await work(session_factory(engine, storage), storage)
    except StrataError as exc:  # a database that is not empty, PostgreSQL unavailable: named, not a traceback
        raise CliError(exc.detail) from exc
    finally:
        await engine.dispose()


def _progress(what: str, done: int, total: int) -> None:
    print(f"  {what}: {done:,}/{total:,}", file=sys.stderr)


def cmd_rebuild(args: argparse.Namespace, settings: Settings) -> int:
    from strata_metastore import migrate
    from strata_metastore.rebuild import rebuild

    migrate.upgrade(_database_url(settings))
    report = asyncio.run(_with_sessions(settings, lambda sessions, storage: rebuild(
        sessions, storage, datetime.now(UTC), from_dump=args.from_dump, progress=_progress)))
    if args.json:
        print(json.dumps(report.as_json(), default=str))
        return 0
    start = f"checkpoint {report.checkpoint_seq}" if report.checkpoint_seq is not None else "the first entry"
    print(f"rebuilt from {start} and {report.entries_applied:,} entries after it, through entry {report.last_seq} "
          f"({report.objects_read:,} objects read, {report.seconds:.1f} s)")
    for table, rows in sorted(report.rows.items()):
        print(f"  {table}: {rows:,} rows")
    print(f"  windows marked for compaction planning: {report.windows_marked:,}; indexing jobs queued: "
          f"{report.indexing_jobs:,}; delete coverage back to pending: {report.coverage_reset:,}")
    return 0


def cmd_verify(args: argparse.Namespace, settings: Settings) -> int:
    from strata_metastore.verify import verify

    report = asyncio.run(_with_sessions(settings, verify))
    if args.json:
        print(json.dumps(report.as_json(), default=str))
    else:
        print(f"checked {report.entries_checked:,} entries after checkpoint {report.checkpoint_seq}: "
              + ("PostgreSQL and the bucket agree" if report.agrees else "DRIFT"))
        for kind, count in report.drift.items():
            if count:
                print(f"  {kind}: {count:,}")
        for table, drift in report.tables.items():
            for example in drift.examples:
                print(f"  {table}: {example}")
        for uri in report.missing_files[:20]:
            print(f"  missing file: {uri}")
    return 0 if report.agrees else 1


def cmd_checkpoint(args: argparse.Namespace, settings: Settings) -> int:
    from strata_metastore.commit_log_passes import write_checkpoint

    report = asyncio.run(_with_sessions(settings, write_checkpoint))
    if report is None:
        print("no entry since the last checkpoint")
    else:
        print(f"checkpoint {report.seq}: {report.entries_folded:,} entries folded; "
              + ", ".join(f"{t} {n:,}" for t, n in report.rows.items()))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    metastore = sub.add_parser("metastore", help="the metastore against the bucket's commit log: rebuild, verify, "
                                                 "checkpoint")
    commands = metastore.add_subparsers(dest="metastore_command", required=True)
    rebuild_cmd = commands.add_parser(
        "rebuild", help="restore every index, split, artifact snapshot and delete from the bucket into an empty "
                        "database (migrated first); stop the APIs before, start them after")
    rebuild_cmd.add_argument("--from-dump", action="store_true",
                             help="the database was restored from an older dump: roll it forward to the bucket's "
                                  "latest commit instead of refusing a database that holds indexes")
    rebuild_cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    rebuild_cmd.set_defaults(func=cmd_rebuild)
    verify_cmd = commands.add_parser("verify", help="compare PostgreSQL with the bucket both ways; exit 1 on drift")
    verify_cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    verify_cmd.set_defaults(func=cmd_verify)
    checkpoint_cmd = commands.add_parser("checkpoint", help="fold the log into a checkpoint now (planner-api does "
                                                            "it periodically)")
    checkpoint_cmd.set_defaults(func=cmd_checkpoint)
