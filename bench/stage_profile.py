"""Where the time of an API path goes: py-spy samples the indexer-api server process (all threads; Python
frames only, so time spent inside pyarrow counts for the Python line that called it) while the benchmark's
requests run, and the samples are grouped into the stages of the request.

    .tools/bin/uv run --with py-spy python -m bench.stage_profile ingest   [--runs 3] [--keep-profile out.txt]
    .tools/bin/uv run --with py-spy python -m bench.stage_profile register [--batches 3] [--keep-profile out.txt]

py-spy is not a project dependency: `--with py-spy` brings it for this command only. The ingest target also
times the CPU stages of an ingest request in-process (no HTTP, database or disk: decode_body, cut_batch,
compute_column_stats, encode_split), bench_ingest's plain-pyarrow baseline, and, on the same table,
pc.sort_indices on the five sort keys against a rank-key sort (one uint64 key per row packing the window index,
the ranks of metric_name, service and host, and the offset in the window; a stable numpy argsort), checking that
both give the same order. The register target also times the footer checks in-process, one thread vs the
server's pool of 8.
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.bench_ingest import ARROW_STREAM, WINDOW, arrow_stream, baseline, make_table, rebase
from bench.bench_register import write_splits
from bench.common import metrics_index_config
from bench.harness import Stack

# (stage, substrings of a frame): a sample goes to the first stage (in list order) whose substring appears in
# any frame of its stack; samples matching none are shown by their leaf frame.
INGEST_STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("decode body (ipc read, cast)", ("decode_body (",)),
    ("cut: pc.sort_indices", ("sort_indices (strata_core/domain/sort_schema.py",)),
    # The server cuts in two steps (admit_rows per request, cut_admitted per group); the in-process part calls
    # cut_batch, which is the two in a row.
    ("cut: late rows, window starts, take, slices", ("admit_rows (", "cut_admitted (", "cut_batch (")),
    ("column stats + regex", ("compute_column_stats (",)),
    ("encode_split (parquet to memory, copy, re-read footer)", ("encode_split (",)),
    ("storage write_bytes (file write + rename)", ("write_bytes (",)),
    (
        "metastore stage/publish (SQLAlchemy, asyncpg)",
        ("_stage_upload_publish (", "SplitRepository", "asyncpg"),
    ),
    ("request body receive (read_limited, h11, starlette)", ("read_limited (", "h11/", "data_received (")),
    ("response (pydantic, json)", ("serialize_response (", "jsonable_encoder (", "render (")),
    ("load_index, auth, routing", ("load_index (", "dependency (", "solve_dependencies (")),
]

REGISTER_STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("footer check: pq.read_metadata", ("read_metadata (",)),
    (
        "footer check: canonical_uri/exists/size/open (storage)",
        ("canonical_uri (", "exists (strata_core", "size (strata_core", "open_input ("),
    ),
    ("footer check: footer_stats_and_spans", ("footer_stats_and_spans (",)),
    ("footer check: schema, kv, SplitMetadata, rest", ("inspect_split (", "_inspect_all (")),
    ("repo.get_many (existing splits + stats)", ("get_many (",)),
    ("repo.find_by_uris", ("find_by_uris (",)),
    ("repo.insert (column arrays, asyncpg)", ("insert (strata_metastore/repositories.py",)),
    ("commit", ("commit (",)),
    (
        "request body: json + pydantic validation",
        ("request_body_to_args (", "_validate", "json (starlette", "body (starlette", "loads ("),
    ),
    ("response (pydantic, json)", ("serialize_response (", "jsonable_encoder (", "render (")),
    ("load_index, auth, routing", ("load_index (", "dependency (", "solve_dependencies (")),
    ("event loop / threads idle-ish", ("select (", "_worker (", "wait (threading")),
]


def summarise(collapsed: Path, stages: list[tuple[str, tuple[str, ...]]]) -> list[tuple[str, int]]:
    counts: collections.Counter[str] = collections.Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        for stage, needles in stages:
            if any(n in frame for frame in frames for n in needles):
                counts[stage] += int(count)
                break
        else:
            leaf = frames[-1].split(" (")[0] if frames else "?"
            counts[f"other: {leaf}"] += int(count)
    return counts.most_common()


class Spy:
    """py-spy record on a pid, for the duration of a `with` block."""

    def __init__(self, pid: int, output: Path, rate: int, gil: bool = False) -> None:
        py_spy = shutil.which("py-spy")
        if py_spy is None:
            raise SystemExit("py-spy not found: run with `uv run --with py-spy python -m bench.stage_profile ...`")
        self.command = [
            py_spy,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(rate),
            "--format",
            "raw",
            "--threads",
            "--output",
            str(output),
            *(["--gil"] if gil else []),
        ]
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Spy:
        self.proc = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            time.sleep(0.3)
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=60)


def _timed(out: list[tuple[str, float]], label: str, fn: Callable, *args, **kwargs):
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    out.append((label, time.perf_counter() - started))
    return result


def rank_key_order(table: pa.Table) -> np.ndarray:
    """A rank-key sort: one uint64 key per row packing (window index, rank of metric_name, service,
    host, offset in window), then a stable numpy argsort. Same order as pc.sort_indices for this data
    (checked)."""
    ts = table.column("timestamp_secs").combine_chunks().to_numpy()
    windows = ts - np.mod(ts, WINDOW)
    key = ((windows - windows.min()) // WINDOW).astype(np.uint64)
    for name in ("metric_name", "service", "host"):
        encoded = pc.dictionary_encode(table.column(name).combine_chunks())
        ranks = np.empty(len(encoded.dictionary), dtype=np.uint64)
        ranks[pc.sort_indices(encoded.dictionary).to_numpy()] = np.arange(
            len(encoded.dictionary), dtype=np.uint64
        )
        key = (key << np.uint64(int(len(encoded.dictionary)).bit_length())) | ranks[
            encoded.indices.to_numpy()
        ]
    key = (key << np.uint64(int(WINDOW).bit_length())) | (ts - windows).astype(np.uint64)
    return np.argsort(key, kind="stable")


def ingest_in_process(rows: int) -> list[tuple[str, float]]:
    from strata_core.domain.column_stats import compute_column_stats
    from strata_core.domain.index_config import IndexSettings
    from strata_core.domain.ingest_batch import cut_batch
    from strata_core.domain.split import SplitMetadata
    from strata_core.splitfile.writer import encode_split
    from strata_indexer.ingest.decode import decode_body

    settings = IndexSettings.model_validate(
        {k: v for k, v in metrics_index_config("x").items() if k != "index_id"}
    )
    table, _ = rebase(make_table(rows))
    body = arrow_stream(table)
    out: list[tuple[str, float]] = []
    decoded = _timed(out, "decode_body", decode_body, body, "arrow", settings.field_types())
    batch = _timed(
        out,
        "cut_batch (windows, pc.sort_indices, take)",
        cut_batch,
        decoded,
        settings.timestamp_field,
        settings.parsed_sort_schema,
        settings.window_duration_secs,
        settings.late_data_acceptance_secs,
        int(time.time()),
    )
    stats_secs = encode_secs = 0.0
    for part in batch.parts:
        started = time.perf_counter()
        stats = compute_column_stats(part.table, frozenset(settings.parsed_sort_schema.column_names))
        stats_secs += time.perf_counter() - started
        metadata = SplitMetadata(
            split_id="01J00000000000000000000000",
            index_uid="x:1",
            source_id="s",
            partition_id="p",
            doc_mapping_uid="d",
            sort_schema=settings.sort_schema,
            window_start=part.window_start,
            window_duration_secs=settings.window_duration_secs,
            time_range_start=part.time_range_start,
            time_range_end=part.time_range_end,
            num_rows=part.table.num_rows,
            column_stats=stats,
        )
        started = time.perf_counter()
        encode_split(part.table, metadata, settings.parquet)
        encode_secs += time.perf_counter() - started
    out.append((f"compute_column_stats ({len(batch.parts)} parts)", stats_secs))
    out.append((f"encode_split ({len(batch.parts)} parts)", encode_secs))
    with tempfile.TemporaryDirectory() as tmp:
        _timed(out, "baseline (for comparison)", baseline, table, Path(tmp))
    ts = table.column("timestamp_secs").combine_chunks().to_numpy()
    keyed = table.append_column("__w", pa.array(ts - np.mod(ts, WINDOW)))
    reference = _timed(
        out,
        "  of which pc.sort_indices on 5 keys",
        pc.sort_indices,
        keyed,
        sort_keys=[("__w", "ascending")]
        + [(c, "ascending") for c in ("metric_name", "service", "host", "timestamp_secs")],
    )
    order = _timed(out, "  prototype: rank-key uint64 + stable argsort", rank_key_order, table)
    if not np.array_equal(order, reference.to_numpy()):
        out.append(("  (prototype order differs from pc.sort_indices!)", float("nan")))
    return out


def profile_ingest(args: argparse.Namespace) -> None:
    print("in-process CPU stages, 1 run (no HTTP, database or disk):")
    for label, seconds in ingest_in_process(args.rows):
        print(f"  {label:50s} {seconds:7.3f} s")
    with Stack() as stack:
        server = stack.start_indexer(stack.create_database("strata_bench_profile"), stack.path("objects"))
        offsets = make_table(args.rows)
        headers = {"Content-Type": ARROW_STREAM, "Authorization": f"Bearer {stack.keys.writer}"}
        collapsed = stack.workdir / "ingest.collapsed"
        with httpx.Client(base_url=server.base_url, timeout=600) as client:
            client.post(
                "/v1/indexes",
                json=metrics_index_config("profile"),
                headers=stack.keys.header(stack.keys.admin),
            ).raise_for_status()
            warm, _ = rebase(offsets.slice(0, 20_000))
            client.post(
                "/v1/indexes/profile/ingest", content=arrow_stream(warm), headers=headers
            ).raise_for_status()
            bodies = [arrow_stream(rebase(offsets)[0]) for _ in range(args.runs)]
            walls = []
            with Spy(server.pid, collapsed, args.rate, args.gil):
                for body in bodies:
                    started = time.perf_counter()
                    client.post(
                        "/v1/indexes/profile/ingest", content=body, headers=headers
                    ).raise_for_status()
                    walls.append(time.perf_counter() - started)
        _report(collapsed, INGEST_STAGES, args, walls, "request")


def profile_register(args: argparse.Namespace) -> None:
    from strata_core.domain.index_config import IndexSettings
    from strata_core.storage import ObjectStore
    from strata_indexer.splits.inspect import IndexIdentity, inspect_split
    from strata_indexer.splits.schemas import SplitToRegister

    with Stack() as stack:
        root = stack.path("objects")
        storage = ObjectStore(root.resolve().as_uri())
        server = stack.start_indexer(stack.create_database("strata_bench_profile"), root)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {stack.keys.writer}"}
        collapsed = stack.workdir / "register.collapsed"
        with httpx.Client(base_url=server.base_url, timeout=600) as client:
            created = client.post(
                "/v1/indexes",
                json=metrics_index_config("profile"),
                headers=stack.keys.header(stack.keys.admin),
            )
            created.raise_for_status()
            index = created.json()
            batches = [
                write_splits(storage, index, args.batch, 100, seed=10 + n) for n in range(args.batches + 1)
            ]

            identity = IndexIdentity(
                index["index_uid"], index["doc_mapping_uid"], IndexSettings.model_validate(index["config"])
            )
            requests = [SplitToRegister(**item) for item in batches[0]]
            started = time.perf_counter()
            for item in requests:
                inspect_split(item, identity, storage)
            one_thread = time.perf_counter() - started
            with ThreadPoolExecutor(max_workers=8) as pool:
                started = time.perf_counter()
                list(pool.map(lambda item: inspect_split(item, identity, storage), requests))
                eight_threads = time.perf_counter() - started
            print(
                f"in-process inspect_split of {args.batch} files: {one_thread:.3f} s on 1 thread, "
                f"{eight_threads:.3f} s on 8 threads"
            )

            def post(chunk: list[dict]) -> float:
                started = time.perf_counter()
                client.post(
                    "/v1/indexes/profile/splits", content=json.dumps({"splits": chunk}), headers=headers
                ).raise_for_status()
                return time.perf_counter() - started

            post(batches[0])
            walls = []
            with Spy(server.pid, collapsed, args.rate, args.gil):
                walls = [post(chunk) for chunk in batches[1:]]
        _report(collapsed, REGISTER_STAGES, args, walls, "batch")


def _report(collapsed: Path, stages, args: argparse.Namespace, walls: list[float], unit: str) -> None:
    print(f"\nwall per {unit}: {', '.join(f'{w:.3f} s' for w in walls)}")
    if not collapsed.exists():
        raise SystemExit("py-spy wrote no profile")
    if args.keep_profile:
        shutil.copy(collapsed, args.keep_profile)
    counts = summarise(collapsed, stages)
    total = sum(c for _, c in counts)
    per = args.rate * len(walls)
    print(
        f"server samples ({'GIL holder only' if args.gil else 'threads not idle, all threads'}) at "
        f"{args.rate}/s: {total} = {total / per:.2f} s per {unit}"
    )
    for stage, count in counts[:25]:
        print(f"  {stage:62s} {count / per:7.3f} s/{unit}  {100 * count / total:5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description="py-spy profile of an indexer-api path")
    parser.add_argument("target", choices=["ingest", "register"])
    parser.add_argument("--rows", type=int, default=1_000_000, help="ingest: rows per request")
    parser.add_argument("--runs", type=int, default=3, help="ingest: requests profiled")
    parser.add_argument("--batch", type=int, default=1_000, help="register: splits per request")
    parser.add_argument("--batches", type=int, default=3, help="register: requests profiled")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument(
        "--gil",
        action="store_true",
        help="sample only the thread holding the GIL (Python CPU time, without threads waiting)",
    )
    parser.add_argument("--keep-profile", type=Path, help="also save py-spy's collapsed stacks here")
    args = parser.parse_args()
    (profile_ingest if args.target == "ingest" else profile_register)(args)


if __name__ == "__main__":
    main()
