"""The `strata` command: run the local stack (up/down/status/restart), serve one API, migrate, ingest files, and operate
the running stack (indexes, windows, jobs, compaction, queries, standalone workers). Every failure it can name is
one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path

import httpx

from strata_core.config import Settings
from strata_core.observability.logs import LOG_FORMATS
from strata_services.client import CliError, api_key, api_url, problem_text, stack_state
from strata_services.cluster import add_commands as add_cluster_commands
from strata_services.compact import add_commands as add_compaction_commands
from strata_services.deletes_cli import add_commands as add_deletes_commands
from strata_services.lifecycle_cli import add_commands as add_lifecycle_commands
from strata_services.listing import add_commands as add_listing_commands
from strata_services.local.processes import pid_alive
from strata_services.local.supervision import describe
from strata_services.metastore_cli import add_commands as add_metastore_commands
from strata_services.query_cli import add_commands as add_query_commands
from strata_services.skips_cli import add_commands as add_skips_commands
from strata_services.worker_cli import add_commands as add_worker_commands

SERVABLE = ("planner-api", "indexer-api", "query-api", "proxy")
APIS = ("planner-api", "indexer-api", "query-api")


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    from strata_services.local.stack import LocalStack, install_stop_signals

    stop_event = threading.Event()
    install_stop_signals(stop_event)
    existing = stack_state(settings.home)
    if existing and pid_alive(existing.get("pid", -1)):
        raise CliError(f"a stack is already running (pid {existing['pid']}); `strata down` stops it")
    stack = LocalStack(settings, replicas=args.replicas, report=lambda line: print(line, flush=True))
    apis = "planner-api, indexer-api, query-api" + (f" ({args.replicas} replicas each)" if args.replicas > 1 else "")
    print(f"starting strata: postgresql, spark connect, {apis}, proxy ...", flush=True)
    try:
        stack.start()
        print("\nstrata is up:")
        for name, url in stack.urls().items():
            print(f"  {name:<14} {url}")
        print(f"  api keys       {stack.keys_source}")
        print(f"  storage        {settings.resolved_storage_uri}")
        print(f"  logs           {settings.home / 'logs'} ({settings.log_format} lines)")
        print(f"  console        {stack.urls()['proxy']}/ui/  (paste a key from the api keys)")
        if args.quickstart:
            _run_quickstart(settings)
        print("\nCtrl-C stops everything.", flush=True)
        reason = stack.wait(stop_event)
        print(f"\nstopping strata: {reason}", flush=True)
        return 0 if reason == "stop requested" else 1
    finally:
        stack.stop()
        print("strata stopped.", flush=True)


def _run_quickstart(settings: Settings) -> None:
    from strata_services.client import arrow_ipc
    from strata_services.quickstart import QUICKSTART_INDEX, quickstart_index_config, quickstart_rows

    base = api_url(settings, "indexer-api")
    admin = {"Authorization": f"Bearer {api_key(settings, 'admin')}"}
    now = int(time.time())
    with httpx.Client(base_url=base, timeout=300) as client:
        existing = client.get(f"/v1/indexes/{QUICKSTART_INDEX}", headers=admin)
        if existing.status_code == 404:
            created = client.post("/v1/indexes", json=quickstart_index_config(now), headers=admin)
            if created.status_code != 201:
                raise CliError(f"creating the quickstart index failed: {problem_text(created)}")
        total_rows, batches = 300_000, 4
        started = time.perf_counter()
        splits, written, late = [], 0, 0
        # Several batches, as writers send them: each window gets several small splits for compaction to merge.
        for batch in range(batches):
            body = arrow_ipc(quickstart_rows(total_rows // batches, now, seed=batch))
            response = client.post(f"/v1/indexes/{QUICKSTART_INDEX}/ingest", content=body,
                                   headers={**admin, "Content-Type": "application/vnd.apache.arrow.stream"})
            if response.status_code != 200:
                raise CliError(f"quickstart ingest failed: {problem_text(response)}")
            result = response.json()
            splits += result["splits"]
            written += result["rows_written"]
            late += result["rows_dropped_late"]
        print(f"\nquickstart: ingested {written:,} rows into {QUICKSTART_INDEX!r} in {batches} batches, "
              f"{time.perf_counter() - started:.2f}s ({late} late rows dropped):")
        for split in sorted(splits, key=lambda s: (s["window_start"], s["split_id"])):
            print(f"  split {split['split_id']}  window {split['window_start']}  {split['num_rows']:>7,} rows  "
                  f"{split['size_bytes'] / 1e6:6.2f} MB")
        print(f"  compact them: strata compact --index {QUICKSTART_INDEX} --final --wait")
        print(f"  list them: curl -H 'Authorization: Bearer <key>' {base}/v1/indexes/{QUICKSTART_INDEX}/splits")


def cmd_down(args: argparse.Namespace, settings: Settings) -> int:
    state = stack_state(settings.home)
    if not state or not pid_alive(state.get("pid", -1)):
        print("no running stack")
        return 0
    # The supervisor stops its children (each replica drains first); then none of them may be left.
    pids = {state["pid"]: "supervisor", **{p["pid"]: p["label"] for p in state.get("processes", []) if p.get("pid")}}
    os.kill(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and any(pid_alive(pid) for pid in pids):
        time.sleep(0.3)
    left = [f"{label} (pid {pid})" for pid, label in pids.items() if pid_alive(pid)]
    if left:
        raise CliError(f"the stack did not stop within {args.timeout:.0f}s: {', '.join(left)} still running")
    print(f"strata stopped ({len(pids) - 1} processes)")
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    state = stack_state(settings.home)
    if state and not pid_alive(state.get("pid", -1)):
        state = None
    all_ready = True
    supervisor = f"running (pid {state['pid']})" if state else "not running"
    print(f"stack supervisor: {supervisor}")
    # Every process of the running stack (each replica of each API), else where each one is by default.
    processes = [(p["label"], p["url"]) for p in state.get("processes", [])] if state else []
    # What the supervisor did to each (pid, restarts, last exit), under its readiness.
    supervision = {p["label"]: p for p in state.get("processes", [])} if state else {}
    # query-api's Flight SQL door, under each query-api process.
    flight_urls = ({p["label"]: p["flight_url"] for p in state.get("processes", []) if p.get("flight_url")}
                   if state else {"query-api": f"grpc://{settings.host}:{settings.flight_port}"})
    for label, url in processes or [(name, api_url(settings, name)) for name in SERVABLE]:
        try:
            # As long as the API's own checks may take, plus the way there and back (the proxy's asks each
            # replica in parallel, so the same).
            response = httpx.get(f"{url}/readyz", timeout=settings.readiness_timeout_secs + 4)
            ready = response.status_code == 200
            detail = _readiness_detail(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            ready, detail = False, f"unreachable ({type(exc).__name__})"
        all_ready &= ready
        print(f"  {label:<14} {url:<24} {'ready' if ready else 'NOT READY'}  {detail}")
        if (supervised := supervision.get(label)) is not None:
            print(f"  {'':<14} {describe(supervised, time.time())}")
        if (flight_url := flight_urls.get(label)) is not None:
            listening = _listening(flight_url)
            all_ready &= listening
            print(f"  {'  flight sql':<14} {flight_url:<24} {'listening' if listening else 'NOT LISTENING'}")
    return 0 if all_ready else 1


def cmd_restart(args: argparse.Namespace, settings: Settings) -> int:
    from strata_services.restart_cli import rolling_restart

    return rolling_restart(settings.home, args.api, args.replica, args.timeout, settings.readiness_timeout_secs + 4,
                           say=lambda line: print(line, flush=True))


def _listening(url: str) -> bool:
    """Whether a gRPC URL's port accepts connections (a Flight SQL server answers only gRPC, not /readyz)."""
    host, _, port = url.removeprefix("grpc://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except (OSError, ValueError):
        return False


def _readiness_detail(body: dict) -> str:
    """An API's checks (`postgresql=ok, ...`), the proxy's replicas by API (`query-api: ...=ready ...`), or the
    problem's detail."""
    if upstreams := body.get("upstreams"):
        return "; ".join(f"{api}: " + ", ".join(f"{url}={state}" for url, state in replicas.items())
                         for api, replicas in upstreams.items())
    if checks := body.get("checks"):
        return ", ".join(f"{k}={v}" for k, v in checks.items())
    return str(body.get("detail", ""))


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from strata_core.observability.logs import configure_logging
    from strata_core.observability.tracing import SERVICE_NAMES, configure_tracing, shutdown_tracing
    from strata_services.serving import serve

    configure_logging(SERVICE_NAMES[args.name], settings.log_format, settings.log_level or "INFO")
    configure_tracing(args.name)

    if args.name == "planner-api":
        from strata_planner.app import create_app
    elif args.name == "indexer-api":
        from strata_indexer.app import create_app
    elif args.name == "query-api":
        from strata_query.app import create_app
    else:
        from strata_services.proxy.app import create_proxy_app as create_app
    port = args.port or {"planner-api": settings.planner_port, "indexer-api": settings.indexer_port,
                         "query-api": settings.query_port, "proxy": settings.proxy_port}[args.name]
    host = args.host or settings.host
    if args.name == "query-api":
        # Its Flight SQL server listens on the interface its HTTP server does.
        settings = settings.model_copy(update={"host": host})
    try:
        serve(create_app(settings), host, port, settings)
    finally:
        shutdown_tracing()
    if args.name == "query-api":
        # Everything is closed by now (the lifespan ran, spans were exported). pyarrow's Flight server keeps C++
        # objects and threads into the interpreter's teardown, where DuckDB's bindings then print "leaked"
        # reports into the JSON log: the process ends here instead, its output flushed.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from strata_metastore import migrate

    if not settings.database_url:
        raise CliError("STRATA_DATABASE_URL is not set (the local stack migrates its embedded database itself)")
    migrate.upgrade(settings.database_url)
    print("metastore migrated to head")
    return 0


def cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"{path} is not a file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        from strata_services.client import arrow_ipc

        body, content_type = arrow_ipc(pq.read_table(path)), "application/vnd.apache.arrow.stream"
    elif path.suffix in (".ndjson", ".jsonl", ".json"):
        body, content_type = path.read_bytes(), "application/x-ndjson"
    else:
        raise CliError(f"{path}: expected a .parquet, .ndjson or .jsonl file")
    params = {"partition_id": args.partition} if args.partition else {}
    headers = {"Authorization": f"Bearer {api_key(settings, 'writer')}", "Content-Type": content_type}
    response = httpx.post(f"{api_url(settings, 'indexer-api')}/v1/indexes/{args.index}/ingest", content=body,
                          headers=headers, params=params, timeout=600)
    if response.status_code != 200:
        raise CliError(f"ingest failed: {problem_text(response)}")
    result = response.json()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['rows_written']:,} rows written in {len(result['splits'])} splits "
          f"({result['rows_dropped_late']} late rows dropped, {result['rows_null_timestamp']} with null timestamps)")
    for split in result["splits"]:
        print(f"  {split['split_id']}  window {split['window_start']}  {split['num_rows']:,} rows")
    return 0


def _demo(args: argparse.Namespace, settings: Settings) -> int:
    from strata_services.demo import cmd_demo

    return cmd_demo(args, settings)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1, not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="strata", description="Strata control plane for Parquet observability data")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('strata-services')}")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="run the local stack on embedded defaults until Ctrl-C")
    up.add_argument("--quickstart", action="store_true", help="create a sample index and ingest sample data")
    up.add_argument("--replicas", type=_positive_int, default=1,
                    help="processes of each API, all behind the proxy (default 1); replica i listens on the API's "
                         "port + 10 * i")
    up.add_argument("--log-format", choices=LOG_FORMATS, help="the services' log lines in .strata/logs: json "
                                                              "(default, one object per line) or text")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="stop the local stack started by `strata up`")
    down.add_argument("--timeout", type=float, default=60.0,
                      help="seconds to wait for the stack to stop before giving up (default 60)")
    down.set_defaults(func=cmd_down)
    sub.add_parser("status", help="readiness of every API, and each process's pid and restarts under `strata up`"
                   ).set_defaults(func=cmd_status)
    restart = sub.add_parser("restart", help="rolling restart of the local stack: one process at a time, each "
                                             "drained, started again and back in the proxy's rotation before the "
                                             "next")
    restart.add_argument("api", nargs="?", choices=SERVABLE,
                         help="restart only this API's replicas (or the proxy); default every replica of every API")
    restart.add_argument("--replica", type=_positive_int,
                         help="only this replica, numbered as `strata status` names them (query-api is 1, "
                              "query-api-2 is 2)")
    restart.add_argument("--timeout", type=float, default=180.0,
                         help="seconds each process may take to drain, start and be ready again (default 180)")
    restart.set_defaults(func=cmd_restart)
    serve = sub.add_parser("serve", help="serve one API (used by the stack and by compose)")
    serve.add_argument("name", choices=SERVABLE)
    serve.add_argument("--host", help="address to listen on (default STRATA_HOST)")
    serve.add_argument("--port", type=int, help="port to listen on (default the API's STRATA_*_PORT)")
    serve.add_argument("--log-format", choices=LOG_FORMATS, help="json (default) or text")
    serve.set_defaults(func=cmd_serve)
    migrate_cmd = sub.add_parser("migrate", help="upgrade the metastore at STRATA_DATABASE_URL to head")
    migrate_cmd.set_defaults(func=cmd_migrate)
    demo = sub.add_parser("demo", help="on the running stack: ingest, compact, index, and query demo data")
    demo.add_argument("--windows", type=int, default=3, help="15-minute windows of data (default 3)")
    demo.add_argument("--rows-per-window", type=int, default=100_000, help="rows per window (default 100,000)")
    demo.add_argument("--batches", type=int, default=4, help="ingest batches (splits per window before compaction)")
    demo.set_defaults(func=_demo)
    ingest = sub.add_parser("ingest", help="ingest a local Parquet or NDJSON file into an index")
    ingest.add_argument("file", help="a .parquet file, or newline-delimited JSON (.ndjson/.jsonl)")
    ingest.add_argument("--index", required=True, help="the index id")
    ingest.add_argument("--partition", help="the partition the rows go to (default the index's default)")
    ingest.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    ingest.set_defaults(func=cmd_ingest)
    add_listing_commands(sub)
    add_query_commands(sub)
    add_compaction_commands(sub)
    add_deletes_commands(sub)
    add_worker_commands(sub)
    add_lifecycle_commands(sub)
    add_skips_commands(sub)
    add_cluster_commands(sub)
    add_metastore_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = Settings()
    logging.basicConfig(level=settings.log_level or "WARNING", format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if getattr(args, "log_format", None):
        settings = settings.model_copy(update={"log_format": args.log_format})
    try:
        return args.func(args, settings)
    except CliError as exc:
        print(f"strata: {exc}", file=sys.stderr)
        return 2
    except httpx.TransportError as exc:
        print(f"strata: {unreachable(exc)}", file=sys.stderr)
        return 2


def unreachable(exc: httpx.TransportError) -> str:
    try:
        url = exc.request.url.copy_with(path="/", query=None)
    except RuntimeError:  # an error raised before a request existed
        url = None
    where = f" at {url}" if url else ""
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer{where} in time ({type(exc).__name__}): the stack is overloaded or stuck"
    return (f"cannot reach the stack{where} ({exc or type(exc).__name__}): is it running? "
            f"Start it with `strata up` (`strata status` shows each API)")


if __name__ == "__main__":
    sys.exit(main())
