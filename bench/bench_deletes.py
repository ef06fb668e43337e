"""Row-level deletes: what removing rows costs, and what a pending delete costs a query.

    .tools/bin/uv run python -m bench.bench_deletes                 # 4M rows in 16 splits; rewrites its section
    .tools/bin/uv run python -m bench.bench_deletes --rows 1000000  # smaller, on a busy machine

(1) Rewrite. The data of the merge benchmark (`bench_merge.generate_dataset`: metrics rows, sorted, written as
Strata writes splits) in N splits; the delete matches 20 of the 2,000 hosts, 1% of the rows, spread over every
split. Compared, one after the other in this process, median of `--runs`:
  - strata: the rewrite kernel a rewrite job runs (`strata_jobs.merge.run_merge` with one input and the delete's
    predicate, i.e. `strata_jobs.rewrite`), split after split: read, drop, write, and check DL-1..DL-3, MC-1 and
    MC-4 (per-row hashes of the input and of every output, the predicate again on every output and on the rows
    removed, the written footers);
  - floor: plain pyarrow, split after split: read (strings as dictionaries), `pc.is_in` on the host, filter, and
    write with the same writer settings. No checks.
The job around the kernel (lease, Spark task, publish) is not in either figure: it is the merge's, measured by the
merge benchmark. One untimed pass of each first. Goal: strata <= 1.3x the floor. Beside them, without a goal:
  - untouched: the same kernel with a delete that split statistics cannot rule out on any split (20 host values
    inside every split's host range) but that matches no row: the split is read, the predicate evaluated, nothing
    written (the rewrite reports it unchanged). Before, such a split was copied, at least the floor's cost.

(2) Query latency while the delete is pending. query-api's local engine (DuckDB over the RAM tier, warm) runs a
full-scan aggregate over every split, once as a plan without deletes, once as the plan with the delete pending on
every file builds it (the scan also reads the delete's column and hides the rows it matches). Median of
`--runs` x 5 runs each, interleaved, the RAM tier warm (masked row groups included). Goal: within 1.2x. Reported
beside it, without a goal: the first query after the delete is accepted, over a RAM tier warm with the plain
columns only (it computes the masks and keeps them), once per run on a fresh engine.

(3) Coverage of a delete of one user's rows (its own section, `deletes_coverage`; `--coverage-only` runs just it):
    .tools/bin/uv run python -m bench.bench_deletes --coverage-only
64 splits of the merge benchmark's data (sorted by metric, service, host, time), each given a `user_id` column
drawn from 8 of 256 users (each user in ~2 splits), a bloom built on it as the indexer builds one (with the zone
map), written to a local object store. For 16 users, a delete `user_id = '<user>'`: the splits its coverage takes
with split statistics only (`split_may_match`, the reference PostgreSQL's SQL form is tested against: what
acceptance did before), with the published artifacts as well (`artifact_pruning.splits_ruled_out` on those, what
acceptance does now), and the splits that really hold the user. For the middle one of these users, every covered
split is then rewritten by the rewrite kernel, before and after: what the delete's rewrite jobs read and cost.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_merge import PARQUET, STRING_COLUMNS, generate_dataset, merge_spec, write_parquet
from bench.common import fmt_int, fmt_s, machine_facts, median
from bench.harness import DATA_DIR

SECTION = "deletes"
DELETED_HOSTS = tuple(f"ip-10-0-{i:05d}" for i in range(0, 2000, 100))
# Between two hosts every split holds: inside its host range, in none of its rows.
UNTOUCHED_HOSTS = tuple(f"ip-10-0-{i:05d}x" for i in range(50, 2000, 100))
GOALS = {"rewrite_vs_floor": 1.3, "query_pending_vs_none": 1.2}
QUERY = 'SELECT "service", count(*) AS n, avg("value") AS v FROM "{view}" GROUP BY "service"'


def _predicate(hosts: tuple[str, ...] = DELETED_HOSTS):
    from strata_core.query.predicate import InList

    return InList("host", hosts)


def rewrite_with_strata(paths: list[Path], out_dir: Path, hosts: tuple[str, ...] = DELETED_HOSTS) -> int:
    """Every split through the rewrite kernel; the rows removed."""
    return _rewrite(paths, out_dir, _predicate(hosts))


def rewrite_with_pyarrow(paths: list[Path], out_dir: Path) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    hosts = pa.array(DELETED_HOSTS)
    removed = 0
    for path in paths:
        table = pq.ParquetFile(path, read_dictionary=STRING_COLUMNS).read(use_threads=True)
        matched = pc.is_in(table.column("host"), value_set=hosts)
        kept = table.filter(pc.invert(matched))
        removed += table.num_rows - kept.num_rows
        write_parquet(kept, out_dir / path.name)
    return removed


def _timed(action, out_root: Path, label: str, run: int) -> tuple[float, int]:
    out_dir = out_root / f"{label}-{run}"
    out_dir.mkdir(parents=True)
    started = time.perf_counter()
    removed = action(out_dir)
    seconds = time.perf_counter() - started
    shutil.rmtree(out_dir)
    return seconds, removed


def query_latency(paths: list[Path], runs: int) -> dict[str, Any]:
    """The local engine over every split, without and with the delete pending on every file."""
    import pyarrow.parquet as pq

    from strata_core.domain.fields import FieldType
    from strata_core.query.predicate_json import predicate_to_json
    from strata_core.storage import ObjectStore
    from strata_jobs.pruned_scan import ScanTask
    from strata_query.execution.hot_tier import HotTier
    from strata_query.execution.local_query import LocalEngine
    from strata_query.execution.scan_request import ScanRequest
    from strata_query.planning.caches import FooterCache

    storage = ObjectStore(paths[0].parent.resolve().as_uri())
    engine = LocalEngine(HotTier(storage, FooterCache(storage), 4 << 30), threads=2)
    footers = {path: pq.ParquetFile(path).metadata for path in paths}
    groups = {path: list(range(footer.num_row_groups)) for path, footer in footers.items()}
    total_rows = sum(footer.num_rows for footer in footers.values())
    drop = predicate_to_json(_predicate())

    def request(pending: bool, number: int) -> ScanRequest:
        columns = [("service", FieldType.STRING), ("value", FieldType.F64)]
        if pending:
            columns.append(("host", FieldType.STRING))  # the planner adds the delete's column to the scan
        tasks = [ScanTask(uri=path.resolve().as_uri(), row_groups=groups[path], constants={"partition_id": "t"},
                          drop=drop if pending else None) for path in paths]
        return ScanRequest(query_id=f"q{number}", tasks=tasks, columns=columns, sql_template=QUERY,
                           extra_filter=None, rows=total_rows)

    def once(pending: bool, number: int, on: LocalEngine | None = None) -> tuple[float, int]:
        started = time.perf_counter()
        stream = (on or engine).open(request(pending, number))
        try:
            rows = sum(int(n) for batch in stream for n in batch.column("n").to_pylist())
        finally:
            stream.close()
        return time.perf_counter() - started, rows

    first: list[float] = []
    for run in range(runs):
        fresh = LocalEngine(HotTier(storage, FooterCache(storage), 4 << 30), threads=2)
        try:
            with_host = ScanRequest(query_id=f"w{run}", tasks=request(False, 0).tasks, columns=request(True, 0).columns,
                                    sql_template=QUERY, extra_filter=None, rows=total_rows)
            fresh.open(with_host).close()  # the plain columns warm, the delete's `host` included
            first.append(once(True, 10_000 + run, fresh)[0])
        finally:
            fresh.close()
    try:
        once(True, 0)  # warm the RAM tier with every column either plan reads
        timings: dict[str, list[float]] = {"none": [], "pending": []}
        counted: dict[str, int] = {}
        number = 1
        for _ in range(runs * 5):
            for label in ("none", "pending"):
                seconds, rows = once(label == "pending", number)
                number += 1
                timings[label].append(seconds)
                counted[label] = rows
    finally:
        engine.close()
    return {"seconds": timings, "rows": counted, "first": first}


def run(rows: int, splits: int, runs: int) -> dict[str, Any]:
    data_dir = DATA_DIR / f"merge-{rows}-{splits}"
    paths = generate_dataset(data_dir, rows, splits, seed=7)
    out_root = Path(tempfile.mkdtemp(prefix="strata-bench-deletes-"))
    try:
        rewrite: dict[str, list[float]] = {"strata": [], "floor": [], "untouched": []}
        removed: dict[str, int] = {}
        actions = (("floor", lambda out: rewrite_with_pyarrow(paths, out)),
                   ("strata", lambda out: rewrite_with_strata(paths, out)),
                   ("untouched", lambda out: rewrite_with_strata(paths, out, UNTOUCHED_HOSTS)))
        for label, action in actions:
            _timed(action, out_root, f"warm-{label}", 0)  # untimed: the files in the page cache, first imports
        for number in range(runs):
            for label, action in actions:
                seconds, count = _timed(action, out_root, label, number)
                rewrite[label].append(seconds)
                removed[label] = count
        if removed["untouched"]:
            raise RuntimeError(f"the untouched delete removed {removed['untouched']} rows")
        if removed["strata"] != removed["floor"]:
            raise RuntimeError(f"the kernel removed {removed['strata']} rows, pyarrow {removed['floor']}")
        query = query_latency(paths, runs)
        if query["rows"]["none"] - query["rows"]["pending"] != removed["strata"]:
            raise RuntimeError(f"the pending delete hid {query['rows']['none'] - query['rows']['pending']} rows, "
                               f"the rewrite removed {removed['strata']}")
    finally:
        shutil.rmtree(out_root, ignore_errors=True)
    return {"rows": rows, "splits": splits, "runs": runs, "removed": removed["strata"], "rewrite": rewrite,
            "query": query["seconds"], "first_query": query["first"], "machine": machine_facts()}


def _verdict(ratio: float, goal: float) -> str:
    return f"**{ratio:.2f}x** (goal <= {goal}x: {'met' if ratio <= goal else 'NOT met'})"


def section(result: dict[str, Any], command: str) -> str:
    machine = result["machine"]
    strata, floor = median(result["rewrite"]["strata"]), median(result["rewrite"]["floor"])
    untouched = median(result["rewrite"]["untouched"])
    pending, none = median(result["query"]["pending"]), median(result["query"]["none"])
    lines = [
        "## Deletes",
        "",
        f"`{command}` on {machine['date']}: {machine['cpu']}, {machine['nproc']} CPUs, {machine['memory']}, "
        f"load average at start {machine['load_average_at_start']} (a machine shared with other work: absolute "
        "times move with it, the ratios of one run much less).",
        "",
        f"**Rewrite.** {fmt_int(result['rows'])} rows in {result['splits']} sorted splits; the delete matches 20 "
        f"of 2,000 hosts, {fmt_int(result['removed'])} rows ({result['removed'] / result['rows']:.2%}), in every "
        f"split. Median of {result['runs']} runs after an untimed one, each rewriting every split one after the other.",
        "",
        "| | time | runs |",
        "|---|---|---|",
        f"| floor: pyarrow read + `is_in` + filter + write (same writer settings, zstd {PARQUET.zstd_level}) | "
        f"{fmt_s(floor)} | {', '.join(fmt_s(s) for s in result['rewrite']['floor'])} |",
        f"| Strata's rewrite kernel (`run_merge` with the delete's predicate; DL-1..DL-3, MC-1, MC-4 checked) | "
        f"{fmt_s(strata)} | {', '.join(fmt_s(s) for s in result['rewrite']['strata'])} |",
        f"| the same kernel, a delete no split statistic rules out that matches no row (20 hosts inside every "
        f"split's range, none present): nothing written, each split left unchanged | {fmt_s(untouched)} | "
        f"{', '.join(fmt_s(s) for s in result['rewrite']['untouched'])} |",
        "",
        f"Strata / floor: {_verdict(strata / floor, GOALS['rewrite_vs_floor'])}. The kernel pays for what the "
        "floor skips: the per-row hashes of the input and of every output (compared in sequence: DL-3), the "
        "predicate evaluated again on every output and on the rows removed (DL-2), the column statistics of the "
        "outputs, and an upload under a temporary name then a move. The job around it (lease, Spark task, "
        "publish) is the merge's and is measured in the merge benchmark.",
        "",
        f"Untouched / floor: **{untouched / floor:.2f}x** (no goal): a covered split without a matching row costs "
        "its read and one evaluation of the predicate; it used to be copied, at no less than the floor's cost.",
        "",
        f"**Query while the delete is pending.** `{QUERY.replace('{view}', 'scan')}` over every split on "
        f"query-api's local engine, RAM tier warm, {len(result['query']['none'])} runs each, interleaved.",
        "",
        "| plan | median | runs |",
        "|---|---|---|",
        f"| no delete | {fmt_s(none)} | {', '.join(fmt_s(s) for s in result['query']['none'])} |",
        f"| the delete pending on every file (reads `host` too, hides the matching rows; masked row groups warm) | "
        f"{fmt_s(pending)} | "
        f"{', '.join(fmt_s(s) for s in result['query']['pending'])} |",
        "",
        f"Pending / none: {_verdict(pending / none, GOALS['query_pending_vs_none'])}.",
        "",
        f"The first query after the delete is accepted (RAM tier warm with the plain columns; it computes the "
        f"masks and keeps the masked row groups): {fmt_s(median(result['first_query']))} "
        f"({', '.join(fmt_s(s) for s in result['first_query'])}; no goal).",
    ]
    return "\n".join(lines)


# --- (3) coverage of one user's delete ----------------------------------------------------------------------

COVERAGE_SECTION = "deletes_coverage"
USERS = tuple(f"user-{i:05d}" for i in range(256))
USERS_PER_SPLIT = 8
DELETED_USERS = USERS[::16]


def _coverage_dataset(directory: Path, splits: int, rows: int, seed: int):
    """The splits with their user ids, statistics and artifacts published under a local object store."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.bench_merge import generate_split
    from strata_core.artifacts import build_artifacts
    from strata_core.domain.column_stats import compute_column_stats
    from strata_core.domain.fields import FieldType
    from strata_core.domain.index_config import ArtifactConfig
    from strata_core.domain.split import SplitMetadata
    from strata_core.query.artifact_pruning import ArtifactCandidate, PublishedArtifact
    from strata_core.storage import ObjectStore

    store = ObjectStore(directory.resolve().as_uri())
    rng = np.random.default_rng(seed)
    config = ArtifactConfig(bloom_columns=[{"column": "user_id", "false_positive_rate": 0.01}])
    types = {"user_id": FieldType.STRING, "host": FieldType.STRING, "metric_name": FieldType.STRING}
    found = []
    for number in range(splits):
        table = generate_split(rows, rng)
        holding = np.asarray(USERS)[rng.choice(len(USERS), USERS_PER_SPLIT, replace=False)]
        # Appended after the sort: a user's rows are spread through the split, as a user id is through logs sorted
        # by service and host, so its min/max spans most users.
        table = table.append_column("user_id", pa.array(holding[rng.integers(0, len(holding), rows)]))
        path = directory / f"split_{number:03d}.parquet"
        write_parquet(table, path)
        split_id = f"split-{number:03d}"
        parquet = pq.ParquetFile(path)
        published = []
        for artifact in build_artifacts(parquet, split_id, config, types).artifacts:
            uri = store.uri_for(f"artifacts/{split_id}/{artifact.artifact_type}.{artifact.column}")
            store.write_bytes(uri, artifact.data)
            published.append(PublishedArtifact(str(artifact.artifact_type), artifact.column, uri,
                                               artifact.content_hash))
        metadata = SplitMetadata(
            split_id=split_id, index_uid="bench:1", source_id="bench", partition_id="tenant", doc_mapping_uid="d",
            sort_schema="metric_name,service,host,timestamp_secs@v1", window_start=0, window_duration_secs=900,
            time_range_start=None, time_range_end=None, num_rows=table.num_rows,
            column_stats=compute_column_stats(table))
        found.append((path, metadata.summary(), ArtifactCandidate(split_id, parquet.metadata.num_row_groups,
                                                                   published), set(holding.tolist())))
    return store, found


def coverage(splits: int, rows: int) -> dict[str, Any]:
    from strata_core.query.artifact_pruning import splits_ruled_out
    from strata_core.query.predicate import Compare
    from strata_core.query.pruning import split_may_match

    constants = {"partition_id": lambda s: s.partition_id}
    directory = Path(tempfile.mkdtemp(prefix="strata-bench-delete-coverage-"))
    try:
        store, found = _coverage_dataset(directory, splits, rows, seed=11)
        per_user = []
        for user in DELETED_USERS:
            predicate = Compare("user_id", "=", user)
            by_statistics = [f for f in found if split_may_match(predicate, f[1], constants)]
            started = time.perf_counter()
            ruled_out = splits_ruled_out(predicate, constants, [f[2] for f in by_statistics], store)
            examine = time.perf_counter() - started
            covered = [f for f in by_statistics if f[2].split_id not in ruled_out]
            holders = [f for f in found if user in f[3]]
            if any(f[2].split_id in ruled_out for f in holders):
                raise RuntimeError(f"a split holding {user} was ruled out")
            per_user.append({"user": user, "statistics": len(by_statistics), "artifacts": len(covered),
                             "holders": len(holders), "examine_seconds": examine,
                             "before": [f[0] for f in by_statistics], "after": [f[0] for f in covered]})
        # The rewrites are compared on a user from the middle of the range, where statistics rule out least.
        first = per_user[len(per_user) // 2]
        out_root = directory / "out"
        rewrites: dict[str, tuple[float, int]] = {}
        for label in ("before", "after"):
            out = out_root / label
            out.mkdir(parents=True)
            started = time.perf_counter()
            removed = _rewrite(first[label], out, Compare("user_id", "=", first["user"]))
            rewrites[label] = (time.perf_counter() - started, removed)
        if rewrites["before"][1] != rewrites["after"][1]:
            raise RuntimeError(f"rows removed differ: {rewrites}")
        for entry in per_user:
            del entry["before"], entry["after"]
        return {"splits": splits, "rows": rows, "per_user": per_user, "rewrites": rewrites, "rewritten": first,
                "machine": machine_facts()}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _rewrite(paths: list[Path], out_dir: Path, predicate) -> int:
    """The covered splits through the rewrite kernel, one after the other; the rows removed."""
    from dataclasses import replace

    from strata_core.query.predicate_json import predicate_to_json
    from strata_jobs.merge import run_merge

    drop = predicate_to_json(predicate)
    removed = 0
    for number, path in enumerate(paths):
        spec = replace(merge_spec([path], out_dir, f"bench-rewrite-{number}"), delete_predicate=drop,
                       num_merge_ops=0)
        removed += run_merge(spec).stats["rows_removed"]
    return removed


def coverage_section(result: dict[str, Any], command: str) -> str:
    machine, users = result["machine"], result["per_user"]
    statistics = [u["statistics"] for u in users]
    artifacts = [u["artifacts"] for u in users]
    holders = [u["holders"] for u in users]
    (before, removed), (after, _) = result["rewrites"]["before"], result["rewrites"]["after"]
    first = result["rewritten"]
    lines = [
        "## Deletes: splits read per delete of one user's rows",
        "",
        f"`{command}` on {machine['date']}: {machine['cpu']}, {machine['nproc']} CPUs, {machine['memory']}, "
        f"load average at start {machine['load_average_at_start']}.",
        "",
        f"{result['splits']} sorted splits of {fmt_int(result['rows'])} rows (the merge benchmark's data), each "
        f"holding {USERS_PER_SPLIT} of {len(USERS)} users in a `user_id` column spread through its rows, with a "
        "bloom on `user_id` (1% false positives) and a zone map built as the indexer builds them. A delete "
        f"`user_id = '<user>'` for {len(users)} users: the splits its coverage takes (each read by a rewrite job) "
        "with split statistics only, as acceptance did before (`split_may_match`, the reference of the SQL it "
        "runs), and with the published artifacts as well, as it does now (`artifact_pruning.splits_ruled_out` on "
        "the statistics' candidates).",
        "",
        "| per delete | median | min | max | total over the deletes |",
        "|---|---|---|---|---|",
        f"| splits covered, split statistics only (before) | {median(statistics):g} | {min(statistics)} | "
        f"{max(statistics)} | {sum(statistics)} |",
        f"| splits covered, statistics then artifacts (now) | {median(artifacts):g} | {min(artifacts)} | "
        f"{max(artifacts)} | {sum(artifacts)} |",
        f"| splits that hold the user | {median(holders):g} | {min(holders)} | {max(holders)} | {sum(holders)} |",
        f"| time to read and probe the candidates' artifacts (each bloom, then the zone map of a split it keeps; "
        "8 threads, local disk, no cache) | "
        f"{fmt_s(median([u['examine_seconds'] for u in users]))} | "
        f"{fmt_s(min(u['examine_seconds'] for u in users))} | {fmt_s(max(u['examine_seconds'] for u in users))} | |",
        "",
        f"Splits read per delete: **{sum(statistics) / len(users):.1f} before, {sum(artifacts) / len(users):.1f} "
        f"now** (mean; {sum(holders) / len(users):.1f} hold the user). No split holding its user was ruled out "
        "(the run checks it).",
        "",
        f"The rewrites of one of these deletes (`{first['user']}`, {fmt_int(removed)} rows removed), every "
        "covered split through the rewrite kernel one after the other: "
        f"{first['statistics']} splits in {fmt_s(before)} before, {first['artifacts']} in {fmt_s(after)} now "
        "(a split without the user costs its read and one evaluation of the predicate, nothing written; each "
        "covered split is also one rewrite job, whose lease, task and publish these times leave out).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Row-level deletes: rewrite cost and query latency while pending, "
                                                 "and the splits a delete of one user's rows covers")
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--splits", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--coverage-splits", type=int, default=64)
    parser.add_argument("--coverage-rows", type=int, default=16_384, help="rows per split of the coverage data")
    parser.add_argument("--coverage-only", action="store_true", help="run only the coverage of one user's delete")
    parser.add_argument("--no-write", action="store_true", help="print the section, leave docs/benchmarks.md")
    args = parser.parse_args()
    from bench.report import invocation, update_sections

    sections = {}
    if not args.coverage_only:
        sections[SECTION] = section(run(args.rows, args.splits, args.runs), invocation())
    sections[COVERAGE_SECTION] = coverage_section(coverage(args.coverage_splits, args.coverage_rows), invocation())
    for text in sections.values():
        print(text)
    if not args.no_write:
        update_sections(sections)


if __name__ == "__main__":
    main()
