"""Where the time of the ingest API path goes: py-spy samples the indexer-api server process (every thread, native
frames of pyarrow included) while the 1M-row ingest of bench_ingest runs a few times, and the samples are grouped
into the stages of the request.

    .tools/bin/uv run --with py-spy python -m bench.profile_ingest [--runs 3] [--keep-profile out.txt]

py-spy is not a project dependency: `--with py-spy` brings it for this command only. Also printed: an in-process
timing of the CPU stages (decode, cut+sort, stats, encode) on the same table, without HTTP, database or disk.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from bench.bench_ingest import ARROW_STREAM, arrow_stream, baseline, make_table, rebase
from bench.common import metrics_index_config
from bench.harness import Stack

# (stage, substrings of a frame that put a sample in it), first match from the leaf up wins; order matters.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("decode body (ipc read, cast)", ("decode_body",)),
    ("cut_batch: sort_indices", ("sort_indices (strata_shared/domain/sort_schema.py",)),
    ("cut_batch: take / rest", ("cut_batch",)),
    ("column stats + regex", ("compute_column_stats",)),
    ("encode_split (parquet write to memory)", ("encode_split",)),
    ("storage write_bytes (file write + move)", ("write_bytes",)),
    ("metastore insert/publish (SQLAlchemy/asyncpg)", ("_stage_upload_publish", "SplitRepository", "sqlalchemy",
                                                     "asyncpg")),
    ("request body receive (read_limited / h11 / starlette)", ("read_limited", "h11", "receive",
                                                              "data_received")),
    ("response serialisation (pydantic/json)", ("serialize_response", "jsonable_encoder", "IngestResponse",
                                                "render")),
    ("load_index / auth / routing", ("load_index", "require", "solve_dependencies")),
]


def _stage_of(frames: list[str]) -> str:
    # frames are root-first; look from the leaf towards the root for the most specific stage.
    for stage, needles in STAGES:
        for frame in frames:
            if any(n in frame for n in needles):
                return stage
    leaf = frames[-1] if frames else "?"
    return f"other: {leaf.split(' (')[0]}"


def summarise(collapsed: Path) -> list[tuple[str, int]]:
    counts: collections.Counter[str] = collections.Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        if frames and frames[0].startswith("process "):
            frames = frames[1:]
        if frames and frames[0].startswith("thread "):
            frames = frames[1:]
        counts[_stage_of(frames)] += int(count)
    return counts.most_common()


def in_process_stages(rows: int) -> list[tuple[str, float]]:
    from strata_indexer.ingest.decode import decode_body
    from strata_shared.domain.column_stats import compute_column_stats
    from strata_shared.domain.index_config import IndexSettings
    from strata_shared.domain.ingest_batch import cut_batch
    from strata_shared.domain.split import SplitMetadata
    from strata_shared.splitfile.writer import encode_split

    config = {k: v for k, v in metrics_index_config("x").items() if k != "index_id"}
    settings = IndexSettings.model_validate(config)
    table, _ = rebase(make_table(rows))
    body = arrow_stream(table)
    out: list[tuple[str, float]] = []

    def timed(label: str, fn, *args, **kwargs):
        started = time.perf_counter()
        result = fn(*args, **kwargs)
        out.append((label, time.perf_counter() - started))
        return result

    decoded = timed("decode_body", decode_body, body, "arrow", settings.field_types())
    batch = timed("cut_batch (window, sort_indices, take)", cut_batch, decoded, settings.timestamp_field,
                  settings.parsed_sort_schema, settings.window_duration_secs, settings.late_data_acceptance_secs,
                  int(time.time()))
    stats_total = encode_total = 0.0
    for part in batch.parts:
        started = time.perf_counter()
        stats = compute_column_stats(part.table, frozenset(settings.parsed_sort_schema.column_names))
        stats_total += time.perf_counter() - started
        metadata = SplitMetadata(split_id="01J00000000000000000000000", index_uid="x:1", source_id="s",
                                 partition_id="p", doc_mapping_uid="d", sort_schema=settings.sort_schema,
                                 window_start=part.window_start, window_duration_secs=settings.window_duration_secs,
                                 time_range_start=part.time_range_start, time_range_end=part.time_range_end,
                                 num_rows=part.table.num_rows, column_stats=stats)
        started = time.perf_counter()
        encode_split(part.table, metadata, settings.parquet)
        encode_total += time.perf_counter() - started
    out.append(("compute_column_stats (3 parts)", stats_total))
    out.append(("encode_split (3 parts)", encode_total))
    with tempfile.TemporaryDirectory() as tmp:
        out.append(("baseline, for comparison", _time(lambda: baseline(table, Path(tmp)))))
    return out


def _time(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description="py-spy profile of the ingest API path")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--keep-profile", type=Path, help="also save py-spy's collapsed stacks here")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("py-spy not found: run with `uv run --with py-spy python -m bench.profile_ingest`")

    print("in-process CPU stages (no HTTP, no database, no disk):")
    for label, seconds in in_process_stages(args.rows):
        print(f"  {label:45s} {seconds:7.3f} s")

    with Stack() as stack:
        database_url = stack.create_database("strata_bench_profile")
        server = stack.start_indexer(database_url, stack.path("objects"))
        offsets = make_table(args.rows)
        headers = {"Content-Type": ARROW_STREAM, "Authorization": f"Bearer {stack.keys.writer}"}
        collapsed = stack.workdir / "ingest.collapsed"
        with httpx.Client(base_url=server.base_url, timeout=600) as client:
            client.post("/v1/indexes", json=metrics_index_config("profile"),
                        headers=stack.keys.header(stack.keys.admin)).raise_for_status()
            warm, _ = rebase(offsets.slice(0, 20_000))
            client.post("/v1/indexes/profile/ingest", content=arrow_stream(warm), headers=headers).raise_for_status()
            bodies = [arrow_stream(rebase(offsets)[0]) for _ in range(args.runs)]
            spy = subprocess.Popen([py_spy, "record", "--pid", str(server.pid), "--rate", str(args.rate),
                                    "--format", "raw", "--native", "--threads",
                                    "--output", str(collapsed)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            try:
                time.sleep(1.0)
                walls = []
                for body in bodies:
                    started = time.perf_counter()
                    client.post("/v1/indexes/profile/ingest", content=body, headers=headers).raise_for_status()
                    walls.append(time.perf_counter() - started)
                time.sleep(0.5)
            finally:
                spy.send_signal(signal.SIGINT)
                spy.wait(timeout=60)
        print(f"\nAPI wall per request: {', '.join(f'{w:.2f} s' for w in walls)}")
        if not collapsed.exists():
            raise SystemExit("py-spy wrote no profile")
        if args.keep_profile:
            shutil.copy(collapsed, args.keep_profile)
        stages = summarise(collapsed)
        total = sum(c for _, c in stages)
        print(f"server samples (non-idle, all threads) at {args.rate}/s: {total} "
              f"= {total / args.rate / args.runs:.2f} s of CPU per request")
        for stage, count in stages[:25]:
            print(f"  {stage:60s} {count / args.rate / args.runs:6.3f} s/request  {100 * count / total:5.1f}%")


if __name__ == "__main__":
    main()
