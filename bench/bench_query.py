"""Benchmark 7: query planning and execution (how a query is planned: docs/architecture.md).

(1) EXPLAIN over 1,000,000 published splits. One index, metadata loaded with COPY (the secondary indexes of
    `splits` and the constraints of `split_column_stats` dropped for the load and recreated from their own
    definitions, then VACUUM ANALYZE): 30 days of 900 s windows, ~350 splits per window, 8 tenants; every split
    holds a random block of 20-200 hosts (so split min/max differ) and has the column statistics ingestion writes
    (metric_name, service, host, timestamp_secs, value). The two windows a 15-minute range crosses are real: their
    splits are small sorted Parquet files (2k-6k rows, 1,024-row row groups, a quarter of their host block each)
    whose metastore rows carry the files' real sizes, row groups and statistics, with real artifacts (zone map,
    bloom on host, bitmap on service) registered and published in snapshots, so the cascade reads and probes them.
    Timed: `build_plan` in this process with warm caches and with fresh (cold) caches on every run, and
    `POST /v1/query/explain` against query-api under uvicorn in a child process. Goal: p50 <= 20 ms, p99 <= 100 ms.
    Where the time goes: each step of `build_plan` timed on its own, the SQL it sends (raw asyncpg and EXPLAIN
    ANALYZE) and a cProfile.
(2) Bytes read after pruning vs DuckDB. Metrics-like rows with a log message, ingested through indexer-api as Arrow
    IPC (one request per collector and batch: a collector serves every sixth host, so its files hold a sixth of the
    hosts and five of the 30 services), sorted splits with several row groups; artifacts built with
    `build_artifacts` and registered through `POST /v1/splits/{id}/artifacts` (published). Ten queries run through
    query-api on a local Spark Connect server and, over the same files, through DuckDB, whose own I/O counter
    (`io.total_bytes_read` of its JSON profile, Parquet metadata cache on, second run) gives its bytes. Results
    must be equal. Goal: Strata reads fewer bytes on every equality or IN query and no more on any other.
(3) End-to-end latency of three of those queries through the query proxy and straight to query-api.

Every process started here (PostgreSQL and indexer-api through the harness, query-api and the proxy as
`strata serve` children, the Spark Connect JVM) is stopped in a `finally`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import math
import os
import posixpath
import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from bench.common import fmt_bytes, fmt_int, fmt_s
from bench.harness import BULK_LOAD, DATA_DIR, Keys, Stack, asyncpg_dsn

SECTION = "query"
WINDOW = 900
HOSTS = 2000
SERVICES = 30
METRICS = 200
TENANTS = 8
SORT_COLUMNS = ("metric_name", "service", "host", "timestamp_secs")
P50_GOAL = 0.020
P99_GOAL = 0.100
ARROW_STREAM = "application/vnd.apache.arrow.stream"

# ------------------------------------------------------------------------------------------------------------
# Shared pieces


def host_name(i: int) -> str:
    return f"host-{i:04d}"


def service_of(host: int) -> str:
    return f"service-{host % SERVICES:02d}"


def metric_name(i: int) -> str:
    return f"app.metric_{i:03d}"


def _fields(with_message: bool) -> list[dict[str, str]]:
    fields = [{"name": "metric_name", "type": "string"}, {"name": "service", "type": "string"},
              {"name": "host", "type": "string"}]
    if with_message:
        fields.append({"name": "message", "type": "string"})
    return fields + [{"name": "timestamp_secs", "type": "i64"}, {"name": "value", "type": "f64"}]


def index_config(*, with_message: bool, row_group_size: int, lookback: int, late: int) -> dict[str, Any]:
    artifacts: dict[str, Any] = {
        "bloom_columns": [{"column": "host", "false_positive_rate": 0.01}],
        "bitmap_columns": ["service"],
    }
    if with_message:
        artifacts["full_text_columns"] = ["message"]
    return {
        "fields": _fields(with_message),
        "timestamp_field": "timestamp_secs",
        "sort_schema": ",".join(SORT_COLUMNS) + "@v1",
        "window_duration_secs": WINDOW,
        "compaction_start_time": 0,
        "late_data_acceptance_secs": late,
        "artifacts": artifacts,
        "query": {"default_lookback_secs": lookback},
        "parquet": {"row_group_size": row_group_size},
    }


def api_keys() -> Keys:
    return Keys()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def latency_summary(values: list[float]) -> dict[str, Any]:
    return {"runs": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95),
            "p99": percentile(values, 99), "min": min(values), "max": max(values),
            "mean": statistics.fmean(values)}


@contextmanager
def api_child(name: str, env: dict[str, str], log_dir: Path, python: str | None = None) -> Iterator[Any]:
    """`strata serve NAME` on a free port of 127.0.0.1, bound to this process (PR_SET_PDEATHSIG) and stopped
    (its whole process group) on the way out, whatever happens. `python`: another checkout's interpreter to serve
    it from (its own code), to time a change against a baseline in one run."""
    from strata_services.local.api_process import ApiProcess
    from strata_services.local.processes import free_port

    process = ApiProcess(name, "127.0.0.1", free_port(), env, log_dir, python=python)
    # Only `env` configures the child: ApiProcess passes this process's environment on, so STRATA_* of the
    # calling shell are held back while it starts (the spawn is synchronous).
    held = {k: os.environ.pop(k) for k in [k for k in os.environ if k.startswith("STRATA_")]}
    try:
        try:
            process.start()
        finally:
            os.environ.update(held)
        process.wait_healthy(timeout=120)
        yield process
    finally:
        process.stop()


def child_env(database_url: str, storage_root: Path, home: Path, spark_remote: str = "",
              **extra: str) -> dict[str, str]:
    keys = api_keys()
    return {
        "STRATA_DATABASE_URL": database_url,
        "STRATA_STORAGE_URI": storage_root.resolve().as_uri(),
        "STRATA_API_KEYS": keys.as_json(),
        "STRATA_HOME": str(home),
        "STRATA_SPARK_REMOTE": spark_remote,
        # A query-api child serves Flight SQL on a free port unless told one (never on 8004, a stack's).
        "STRATA_FLIGHT_PORT": "0",
        **extra,
    }


# ------------------------------------------------------------------------------------------------------------
# Part 1: the index of 1,000,000 splits

SPLIT_COLUMNS = (
    "split_id", "index_uid", "source_id", "partition_id", "doc_mapping_uid", "sort_schema", "window_start",
    "window_duration_secs", "time_range_start", "time_range_end", "num_rows", "size_bytes", "uri", "row_groups",
    "num_merge_ops", "generation", "root_split_ids", "state", "created_at", "updated_at", "published_at",
)
STATS_COLUMNS = ("split_id", "column_name", "value_type", "min_string", "max_string", "min_i64", "max_i64",
                 "min_u64", "max_u64", "min_f64", "max_f64", "null_count", "regex")
EXPLAIN_INDEX = "bench-query"
EXPLAIN_HOST = 1042
REAL_ROW_GROUP = 1024


@dataclass
class ExplainIndex:
    index_uid: str
    incarnation: str
    doc_mapping_uid: str
    sort_schema: str
    config: dict[str, Any]
    first_window: int
    windows: int
    query_windows: tuple[int, int]
    query_start: int


def _prefix_regex(low: str, high: str) -> str:
    import re

    return "^" + re.escape(posixpath.commonprefix([low, high])) + ".*$"


def _stats_row(split_id: str, name: str, kind: str, low: Any, high: Any, nulls: int, regex: str | None) -> tuple:
    typed = {"string": (3, 4), "i64": (5, 6), "f64": (9, 10)}
    row: list[Any] = [split_id, name, kind, None, None, None, None, None, None, None, None, nulls, regex]
    lo_at, hi_at = typed[kind]
    row[lo_at], row[hi_at] = low, high
    return tuple(row)


def _row_groups_json(num_rows: int, size_bytes: int, group_rows: int = 131_072) -> str:
    groups = []
    offset, byte_offset = 0, 4
    per_row = size_bytes / max(num_rows, 1)
    while offset < num_rows:
        rows = min(group_rows, num_rows - offset)
        length = int(rows * per_row)
        groups.append({"row_offset": offset, "num_rows": rows, "byte_offset": byte_offset, "byte_length": length})
        offset += rows
        byte_offset += length
    return json.dumps(groups)


class ExplainLoader:
    """Builds the split rows (and, for the queried windows, the real files and artifacts) window by window."""

    def __init__(self, info: ExplainIndex, storage, field_types, artifact_config, now: int, seed: int) -> None:
        self.info = info
        self.storage = storage
        self.field_types = field_types
        self.artifact_config = artifact_config
        self.now = now
        self.rng = random.Random(seed)
        self.real: list[tuple[str, list]] = []  # (split_id, built artifacts) to register after the load
        self.real_bytes = 0

    def uri(self, split_id: str) -> str:
        return self.storage.uri_for(f"indexes/{EXPLAIN_INDEX}/{self.info.incarnation}/splits/{split_id}.parquet")

    def _common(self, split_id: str, tenant: str, window_start: int, start: int, end: int, num_rows: int,
                size_bytes: int, row_groups: str, created: int) -> tuple:
        stamp = datetime.fromtimestamp(created, UTC)
        return (split_id, self.info.index_uid, "ingest-api", tenant, self.info.doc_mapping_uid,
                self.info.sort_schema, window_start, WINDOW, start, end, num_rows, size_bytes,
                self.uri(split_id), row_groups, 0, 0, [split_id], "published", stamp, stamp, stamp)

    def synthetic(self, window_start: int) -> tuple[tuple, list[tuple]]:
        from ulid import ULID

        rng = self.rng
        created = min(self.now - 1, window_start + WINDOW + rng.randint(0, 600))
        split_id = str(ULID.from_timestamp(created + rng.random()))
        width = rng.randint(20, 200)
        low = rng.randrange(0, HOSTS - width + 1)
        # A block of SERVICES hosts or more holds every service; only narrower ones need looking at.
        services = ([service_of(0), service_of(SERVICES - 1)] if width >= SERVICES
                    else sorted({service_of(h) for h in range(low, low + width)}))
        metrics = (metric_name(rng.randrange(0, 20)), metric_name(rng.randrange(180, METRICS)))
        start, end = window_start + rng.randint(0, 300), window_start + rng.randint(600, WINDOW - 1)
        num_rows = rng.randint(10_000, 200_000)
        size_bytes = num_rows * 12
        hosts = (host_name(low), host_name(low + width - 1))
        stats = [
            _stats_row(split_id, "metric_name", "string", *metrics, 0, _prefix_regex(*metrics)),
            _stats_row(split_id, "service", "string", services[0], services[-1], 0,
                       _prefix_regex(services[0], services[-1])),
            _stats_row(split_id, "host", "string", *hosts, 0, _prefix_regex(*hosts)),
            _stats_row(split_id, "timestamp_secs", "i64", start, end, 0, None),
            _stats_row(split_id, "value", "f64", rng.uniform(0, 50), rng.uniform(1950, 2000), 0, None),
        ]
        row = self._common(split_id, f"tenant-{rng.randrange(TENANTS)}", window_start, start, end, num_rows,
                           size_bytes, _row_groups_json(num_rows, size_bytes), created)
        return row, stats

    def real_file(self, window_start: int) -> tuple[tuple, list[tuple]]:
        """A real small split: written, with its artifacts built (registered later, once the rows exist)."""
        from ulid import ULID

        from strata_core.artifacts import build_artifacts
        from strata_core.domain.column_stats import compute_column_stats
        from strata_core.domain.index_config import ParquetConfig
        from strata_core.domain.split import SplitMetadata
        from strata_core.splitfile.writer import encode_split, row_group_spans

        rng = self.rng
        created = min(self.now - 1, window_start + WINDOW + rng.randint(0, 600))
        split_id = str(ULID.from_timestamp(created + rng.random()))
        nprng = np.random.default_rng(rng.randrange(1 << 32))
        width = rng.randint(20, 200)
        low = rng.randrange(0, HOSTS - width + 1)
        hosts = nprng.choice(np.arange(low, low + width), size=max(2, width // 4), replace=False)
        metrics = nprng.choice(METRICS, size=20, replace=False)
        start, end = window_start + rng.randint(0, 300), window_start + rng.randint(600, WINDOW - 1)
        rows = rng.randint(2_000, 6_000)
        host_ids = nprng.choice(hosts, size=rows)
        metric_ids = nprng.choice(metrics, size=rows)
        table = pa.table({
            "metric_name": pa.array([metric_name(i) for i in range(METRICS)]).take(pa.array(metric_ids)),
            "service": pa.array([service_of(h) for h in range(HOSTS)]).take(pa.array(host_ids)),
            "host": pa.array([host_name(h) for h in range(HOSTS)]).take(pa.array(host_ids)),
            "timestamp_secs": pa.array(nprng.integers(start, end + 1, rows), type=pa.int64()),
            "value": pa.array(metric_ids * 10 + nprng.random(rows) * 10, type=pa.float64()),
        }).sort_by([(c, "ascending") for c in SORT_COLUMNS])
        # The file's own bounds, which the metastore row must agree with.
        ts = table.column("timestamp_secs")
        start, end = int(ts.to_numpy().min()), int(ts.to_numpy().max())
        tenant = f"tenant-{rng.randrange(TENANTS)}"
        metadata = SplitMetadata(
            split_id=split_id, index_uid=self.info.index_uid, source_id="ingest-api", partition_id=tenant,
            doc_mapping_uid=self.info.doc_mapping_uid, sort_schema=self.info.sort_schema,
            window_start=window_start, window_duration_secs=WINDOW, time_range_start=start, time_range_end=end,
            num_rows=rows, uri=self.uri(split_id), root_split_ids=[split_id],
            column_stats=compute_column_stats(table, frozenset(SORT_COLUMNS)))
        data, footer = encode_split(table, metadata, ParquetConfig(row_group_size=REAL_ROW_GROUP))
        self.storage.write_bytes(metadata.uri, data)
        self.real_bytes += len(data)
        built = build_artifacts(pq.ParquetFile(pa.BufferReader(data)), split_id, self.artifact_config,
                                self.field_types)
        self.real.append((split_id, built.artifacts))
        stats = [_stats_row(split_id, s.name, s.value_type, s.min_value, s.max_value, s.null_count, s.regex)
                 for s in metadata.column_stats.values()]
        spans = json.dumps([g.to_json() for g in row_group_spans(footer)])
        return self._common(split_id, tenant, window_start, start, end, rows, len(data), spans, created), stats


async def _drop_for_load(conn) -> list[str]:
    """Secondary indexes of `splits` and every constraint of `split_column_stats` go for the load; their own
    definitions come back afterwards (the same DDL the migrations ran)."""
    restore: list[str] = []
    indexes = await conn.fetch(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'splits' AND indexname NOT IN "
        "(SELECT conname FROM pg_constraint WHERE conrelid = 'splits'::regclass)")
    for row in indexes:
        await conn.execute(f'DROP INDEX "{row["indexname"]}"')
        restore.append(row["indexdef"])
    constraints = await conn.fetch(
        "SELECT conname, pg_get_constraintdef(oid) AS def, contype FROM pg_constraint "
        "WHERE conrelid = 'split_column_stats'::regclass ORDER BY contype DESC")  # p before f on the way back
    for row in constraints:
        await conn.execute(f'ALTER TABLE split_column_stats DROP CONSTRAINT "{row["conname"]}"')
    for row in sorted(constraints, key=lambda r: r["contype"] != "p"):
        restore.append(f'ALTER TABLE split_column_stats ADD CONSTRAINT "{row["conname"]}" {row["def"]}')
    return restore


async def load_explain_index(url: str, storage_uri: str, splits: int, days: int, seed: int = 17
                             ) -> dict[str, Any]:
    import asyncpg
    from ulid import ULID

    from strata_core.domain.index_config import IndexSettings
    from strata_core.storage import ObjectStore

    settings = IndexSettings.model_validate(index_config(with_message=False, row_group_size=REAL_ROW_GROUP,
                                                         lookback=3600, late=3600))
    config = settings.model_dump(mode="json")
    incarnation = str(ULID())
    now = int(time.time())
    windows = days * 86_400 // WINDOW
    current = now - now % WINDOW
    first_window = current - windows * WINDOW  # the last loaded window is the one before the open one
    # "The last 15 minutes" as of a moment half-way through a window, an hour ago: it crosses two windows.
    query_windows = (current - 4 * WINDOW, current - 3 * WINDOW)
    info = ExplainIndex(f"{EXPLAIN_INDEX}:{incarnation}", incarnation, settings.doc_mapping_uid,
                        settings.sort_schema, config, first_window, windows, query_windows,
                        query_windows[0] + WINDOW // 2)
    storage = ObjectStore(storage_uri)
    loader = ExplainLoader(info, storage, settings.field_types(), settings.artifacts, now, seed)
    conn = await asyncpg.connect(asyncpg_dsn(url), server_settings=BULK_LOAD)
    timings: dict[str, float] = {}
    try:
        await conn.execute(
            "INSERT INTO indexes (index_uid, index_id, incarnation, config, doc_mapping_uid, version) "
            "VALUES ($1, $2, $3, $4::jsonb, $5, 1)", info.index_uid, EXPLAIN_INDEX, incarnation, json.dumps(config),
            info.doc_mapping_uid)
        restore = await _drop_for_load(conn)
        started = time.perf_counter()
        copy_secs = real_secs = 0.0
        chunk = 50_000
        for begin in range(0, splits, chunk):
            rows, stats = [], []
            for i in range(begin, min(splits, begin + chunk)):
                window_start = first_window + (i * windows // splits) * WINDOW
                if window_start in query_windows:
                    real_started = time.perf_counter()
                    row, split_stats = loader.real_file(window_start)
                    real_secs += time.perf_counter() - real_started
                else:
                    row, split_stats = loader.synthetic(window_start)
                rows.append(row)
                stats.extend(split_stats)
            copy_started = time.perf_counter()
            await conn.copy_records_to_table("splits", records=rows, columns=SPLIT_COLUMNS)
            await conn.copy_records_to_table("split_column_stats", records=stats, columns=STATS_COLUMNS)
            copy_secs += time.perf_counter() - copy_started
        restore_started = time.perf_counter()
        for statement in restore:
            await conn.execute(statement)
        timings["restore_secs"] = time.perf_counter() - restore_started
        timings["load_secs"] = time.perf_counter() - started
        timings["copy_secs"] = copy_secs
        timings["real_files_secs"] = real_secs
        started = time.perf_counter()
        await conn.execute("VACUUM (ANALYZE) splits")
        await conn.execute("VACUUM (ANALYZE) split_column_stats")
        # Row-level counters (before migration 0008) updated their few rows once per split loaded: without this
        # the planner's totals read thousands of dead versions, which a running system's autovacuum would have
        # cleaned. Statement-level ones leave one per COPY chunk; kept so loads at either revision compare.
        await conn.execute("VACUUM (ANALYZE) published_totals")
        timings["vacuum_secs"] = time.perf_counter() - started
        counts = dict(await conn.fetchrow(
            "SELECT count(*) AS splits, count(DISTINCT window_start) AS windows, "
            "(SELECT count(*) FROM split_column_stats) AS stats_rows FROM splits"))
    finally:
        await conn.close()

    started = time.perf_counter()
    registered = await _register_artifacts(url, storage, info, loader.real, now)
    timings["register_secs"] = time.perf_counter() - started
    return {"index": info.__dict__, "counts": counts, "timings": timings, "real_files": len(loader.real),
            "real_bytes": loader.real_bytes, "artifacts": registered, "restored": restore,
            "storage_uri": storage.root_uri}


async def _register_artifacts(url: str, storage, info: ExplainIndex, real: list[tuple[str, list]],
                              now: int) -> dict[str, int]:
    """Through the repository the indexer uses: register each file's artifacts, write its manifest, publish its
    snapshot (the same rows `POST /v1/splits/{id}/artifacts` writes)."""
    from strata_core.artifacts import manifest_key
    from strata_core.domain.artifact_refs import ArtifactRef, manifest_bytes
    from strata_metastore.engine import create_engine, session_factory
    from strata_metastore.indexing_repository import IndexingRepository
    from strata_metastore.models import SplitRow

    prefix = f"indexes/{EXPLAIN_INDEX}/{info.incarnation}/artifacts"
    engine = create_engine(url)
    sessions = session_factory(engine)
    when = datetime.fromtimestamp(now, UTC)
    counts: dict[str, int] = {}
    try:
        for begin in range(0, len(real), 100):
            async with sessions() as session:
                repo = IndexingRepository(session)
                for split_id, artifacts in real[begin:begin + 100]:
                    refs = []
                    for artifact in artifacts:
                        uri = storage.uri_for(f"{prefix}/{artifact.key(split_id)}")
                        storage.write_bytes(uri, artifact.data)
                        refs.append(ArtifactRef(str(artifact.artifact_type), artifact.column,
                                                artifact.format_version, uri, artifact.size_bytes,
                                                artifact.content_hash))
                        name = f"{artifact.artifact_type}" + (f" {artifact.column}" if artifact.column else "")
                        counts[name] = counts.get(name, 0) + 1
                    split = await session.get(SplitRow, split_id)
                    rows = [row for row, _ in await repo.register(split, refs, "bench", replace=False)]
                    manifest = storage.uri_for(f"{prefix}/{manifest_key(split_id)}")
                    storage.write_bytes(manifest, manifest_bytes(split_id, info.index_uid, refs, [], "bench"))
                    await repo.publish_snapshot(split, rows, manifest, "bench", when)
                await session.commit()
    finally:
        await engine.dispose()
    return counts


def unkept_sql(sql: str, n: int) -> str:
    """The EXPLAIN query as a SQL text query-api has not seen (it keeps plans by text): the same query, led by a
    comment."""
    return f"/* new plan {n} */ {sql}"


def explain_sql(info: ExplainIndex) -> str:
    start = info.query_start
    return (f'SELECT timestamp_secs, host, service, value FROM "{EXPLAIN_INDEX}" '
            f"WHERE host = '{host_name(EXPLAIN_HOST)}' AND timestamp_secs >= {start} "
            f"AND timestamp_secs < {start + WINDOW}")


@dataclass
class PlanCaches:
    """What query-api's runtime keeps between plans (`QueryRuntime`): passed to build_plan as the query service
    does."""

    artifacts: Any
    footers: Any

    @classmethod
    def fresh(cls, storage) -> PlanCaches:
        from strata_query.planning.caches import ArtifactCache, FooterCache

        return cls(ArtifactCache(storage), FooterCache(storage))


async def _timed_plans(sessions, sql: str, runs: int, caches: Callable[[], PlanCaches]
                       ) -> tuple[list[float], Any]:
    """`runs` plans, each in its own session as query-api does; `caches()` gives the caches of each run."""
    from strata_query.planning.planner import build_plan

    seconds, plan = [], None
    for _ in range(runs):
        held = caches()
        started = time.perf_counter()
        async with sessions() as session:
            plan = await build_plan(session, sql, tenant=None, now=time.time(), max_files=10_000,
                                    artifacts=held.artifacts, footers=held.footers)
        seconds.append(time.perf_counter() - started)
    return seconds, plan


async def _capture_sql(engine, sessions, sql: str, caches) -> list[tuple[str, tuple]]:
    from sqlalchemy import event

    captured: list[tuple[str, tuple]] = []

    def capture(_conn, _cursor, statement, parameters, _context, _many):  # noqa: ANN001
        captured.append((statement, tuple(parameters)))

    # The plan's reads are plain asyncpg statements on the session's connection (`session_driver`), which
    # SQLAlchemy's event does not see: those are captured from asyncpg's own calls.
    from asyncpg.connection import Connection

    originals = {name: getattr(Connection, name) for name in ("fetch", "fetchrow", "fetchval")}

    def capturing(original):  # noqa: ANN001, ANN202
        async def call(self, query, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            if query.strip() != ";":  # the pool's ping of a checkout (`engine._ping_in_one_round_trip`)
                captured.append((query, tuple(args)))
            return await original(self, query, *args, **kwargs)
        return call

    event.listen(engine.sync_engine, "before_cursor_execute", capture)
    for name, original in originals.items():
        setattr(Connection, name, capturing(original))
    try:
        await _timed_plans(sessions, sql, 1, caches)
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", capture)
        for name, original in originals.items():
            setattr(Connection, name, original)
    return captured


STEP_LOOKUP = "index lookup (live_config)"
STEP_PARSE = "parse_query (SQL to predicate)"
STEP_TOTALS = "published_totals (files and bytes of the whole index)"
STEP_CANDIDATES = ("published_candidates (one statement: time range and split min/max in PostgreSQL, the counts of "
                   "every candidate, full rows of the survivors with their statistics)")
STEP_ARTIFACTS = "published_artifacts (snapshots and artifact rows of the survivors)"
STEP_DELETES = "in_force (deletes in force on the survivors)"
STEP_CASCADE = "run_cascade (every stage over the candidates read, in a worker thread)"
STEP_SPLIT_STAGE = "... split_may_match (the Python reference, re-run on the survivors, within the step above)"
STEP_ORDER = (STEP_LOOKUP, STEP_PARSE, STEP_TOTALS, STEP_CANDIDATES, STEP_ARTIFACTS, STEP_DELETES, STEP_CASCADE,
              STEP_SPLIT_STAGE)


def _stage_timer():
    """Each step of build_plan timed on its own (wrapped in this process only)."""
    from bench.bench_planner import StageTimer
    from strata_metastore.delete_repository import DeleteRepository
    from strata_metastore.indexing_repository import IndexingRepository
    from strata_metastore.repositories import IndexRepository, SplitRepository
    from strata_query.planning import planner, stages

    timer = StageTimer()
    timer.wrap_async(IndexRepository, "live_config", STEP_LOOKUP)
    timer.wrap_async(SplitRepository, "published_totals", STEP_TOTALS)
    timer.wrap_async(SplitRepository, "published_candidates", STEP_CANDIDATES)
    timer.wrap_async(IndexingRepository, "published_artifacts", STEP_ARTIFACTS)
    timer.wrap_async(DeleteRepository, "in_force", STEP_DELETES)
    timer.wrap_sync(planner, "parse_query", STEP_PARSE)
    timer.wrap_sync(stages, "split_may_match", STEP_SPLIT_STAGE)
    timer.wrap_sync(planner, "run_cascade", STEP_CASCADE)
    return timer


def _profile_text(profile: cProfile.Profile, sort: str, limit: int) -> str:
    import pstats

    stream = io.StringIO()
    pstats.Stats(profile, stream=stream).strip_dirs().sort_stats(sort).print_stats(limit)
    lines = stream.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(lines[start:start + limit + 1])


@contextmanager
def _inline_threads() -> Iterator[None]:
    """asyncio.to_thread run inline, so a cProfile of the event loop's thread also sees the cascade."""
    original = asyncio.to_thread

    async def inline(func, /, *args, **kwargs):
        return func(*args, **kwargs)

    asyncio.to_thread = inline
    try:
        yield
    finally:
        asyncio.to_thread = original


class ExplainClient:
    """`POST /v1/query/explain` to the query-api child, timed from the client (keep-alive connection)."""

    def __init__(self, base_url: str, sql: str) -> None:
        keys = api_keys()
        self.client = httpx.AsyncClient(base_url=base_url, headers=keys.header(keys.admin), timeout=60)
        self.sql = sql
        self.body: dict[str, Any] = {}

    async def once(self, sql: str | None = None) -> float:
        started = time.perf_counter()
        response = await self.client.post("/v1/query/explain", json={"sql": sql or self.sql})
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"explain answered {response.status_code}: {response.text[:500]}")
        self.body = response.json()
        return elapsed

    async def close(self) -> None:
        await self.client.aclose()


async def measure_explain(url: str, storage_uri: str, info: ExplainIndex, sql: str, runs: int, cold_runs: int,
                          server_url: str) -> dict[str, Any]:
    from bench.bench_planner import raw_fetch
    from strata_core.storage import ObjectStore
    from strata_metastore.engine import create_engine, session_factory
    from strata_query.schemas import plan_out

    storage = ObjectStore(storage_uri)
    engine = create_engine(url)
    sessions = session_factory(engine)
    shared = PlanCaches.fresh(storage)
    http = ExplainClient(server_url, sql)
    out: dict[str, Any] = {}
    try:
        def fresh() -> PlanCaches:
            return PlanCaches.fresh(storage)

        # The first plan of a fresh process: nothing cached, connections not yet open.
        out["first"], plan = await _timed_plans(sessions, sql, 1, lambda: shared)
        out["http_first"] = await http.once()
        for _ in range(5):
            await _timed_plans(sessions, sql, 1, lambda: shared)
            await http.once()
        print("[query] warm plans, in process and over HTTP (kept plan, new plan) in turn ...", flush=True)
        # In turn, so all see the same machine: other work runs on it and comes and goes.
        warm, over_http, server, unkept, unkept_server = [], [], [], [], []
        for i in range(runs):
            seconds, plan = await _timed_plans(sessions, sql, 1, lambda: shared)
            warm.append(seconds[0])
            over_http.append(await http.once())
            server.append(http.body["planning_ms"] / 1000)
            body = http.body
            unkept.append(await http.once(unkept_sql(sql, i)))
            unkept_server.append(http.body["planning_ms"] / 1000)
            if http.body["stages"] != body["stages"]:
                raise RuntimeError("the new plan of the same query pruned differently from the kept one")
            http.body = body
        out["warm"] = latency_summary(warm)
        out["http"] = {"latency": latency_summary(over_http), "server_planning": latency_summary(server),
                       "unkept": latency_summary(unkept), "unkept_server_planning": latency_summary(unkept_server),
                       "response_bytes": len(json.dumps(http.body)), "total_files": http.body["total_files"]}
        print("[query] in-process build_plan, cold caches ...", flush=True)
        cold, _ = await _timed_plans(sessions, sql, cold_runs, fresh)
        out["cold"] = latency_summary(cold)
        out["plan"] = plan_out(plan, None).model_dump(mode="json")
        out["cache_bytes"] = {"artifacts": shared.artifacts.lru._bytes, "footers": shared.footers.lru._bytes}

        timer = _stage_timer()
        steps = max(20, runs // 5)
        try:
            await _timed_plans(sessions, sql, steps, lambda: shared)
        finally:
            timer.restore()
        out["steps"] = {name: timer.totals.get(name, 0.0) / steps for name in STEP_ORDER}
        out["steps_runs"] = steps

        statements = await _capture_sql(engine, sessions, sql, lambda: shared)
        dsn = asyncpg_dsn(url)
        out["sql"] = []
        for statement, params in statements:
            raw = await raw_fetch(dsn, statement, params, 20)
            out["sql"].append({"text": statement, "median": raw["median"], "rows": raw["rows"],
                               "explain": raw["explain"]})

        profile = cProfile.Profile()
        with _inline_threads():
            profile.enable()
            await _timed_plans(sessions, sql, steps, lambda: shared)
            profile.disable()
        out["profile_tottime"] = _profile_text(profile, "tottime", 22)
        out["profile_cumulative"] = _profile_text(profile, "cumulative", 30)

    finally:
        await http.close()
        await engine.dispose()
    return out


def run_explain(stack: Stack, *, splits: int, days: int, runs: int, cold_runs: int) -> dict[str, Any]:
    url = stack.create_database("strata_bench_query")
    storage_root = stack.path("query-storage")
    print(f"[query] loading {splits:,} splits over {days} days ...", flush=True)
    loaded = asyncio.run(load_explain_index(url, storage_root.resolve().as_uri(), splits, days))
    t = loaded["timings"]
    print(f"[query] loaded in {t['load_secs']:.1f} s (COPY {t['copy_secs']:.1f} s, real files "
          f"{t['real_files_secs']:.1f} s, constraints/indexes {t['restore_secs']:.1f} s), registered "
          f"{loaded['real_files']} files' artifacts in {t['register_secs']:.1f} s", flush=True)
    info = ExplainIndex(**loaded["index"])
    sql = explain_sql(info)
    result: dict[str, Any] = {"splits": splits, "days": days, "sql": sql, "load": loaded}
    env = child_env(url, storage_root, stack.path("home-explain"))
    with api_child("query-api", env, stack.path("logs-explain")) as server:
        result["in_process"] = asyncio.run(measure_explain(url, loaded["storage_uri"], info, sql, runs, cold_runs,
                                                           server.url))
    result["http"] = result["in_process"].pop("http")
    result["http"]["first"] = result["in_process"].pop("http_first")
    return result


# ------------------------------------------------------------------------------------------------------------
# Part 2: bytes read after pruning, Strata vs DuckDB, on real ingested files

EXEC_INDEX = "bench-exec"
COLLECTORS = 6
EXEC_WINDOWS = 4
DISK_FULL_METRICS = range(120, 125)
VERBS = ["GET", "POST", "PUT", "DELETE"]
ENDPOINTS = ["users", "orders", "items", "search", "login", "cart", "payments", "status"]
OUTCOMES = ["ok", "ok", "ok", "ok", "slow", "retry", "timeout", "connection reset"]


def exec_queries(table: str, first_window: int) -> list[dict[str, str]]:
    w1 = first_window + WINDOW
    return [
        {"name": "Q1", "kind": "= host",
         "sql": f"SELECT count(*) AS n, avg(value) AS avg_value FROM {table} WHERE host = 'host-1042'"},
        {"name": "Q2", "kind": "= host, one window",
         "sql": f"SELECT metric_name, max(value) AS max_value FROM {table} WHERE host = 'host-0333' "
                f"AND timestamp_secs >= {w1} AND timestamp_secs < {w1 + WINDOW} GROUP BY metric_name"},
        {"name": "Q3", "kind": "IN host",
         "sql": f"SELECT host, count(*) AS n FROM {table} "
                "WHERE host IN ('host-0007', 'host-0500', 'host-1999') GROUP BY host"},
        {"name": "Q4", "kind": "= service",
         "sql": f"SELECT count(*) AS n, sum(value) AS total FROM {table} WHERE service = 'service-07'"},
        {"name": "Q5", "kind": "IN service",
         "sql": f"SELECT service, count(*) AS n FROM {table} "
                "WHERE service IN ('service-03', 'service-10') GROUP BY service"},
        {"name": "Q6", "kind": "= metric_name AND = host",
         "sql": f"SELECT count(*) AS n, avg(value) AS avg_value FROM {table} "
                "WHERE metric_name = 'app.metric_017' AND host = 'host-0100'"},
        {"name": "Q7", "kind": "range on value",
         "sql": f"SELECT metric_name, count(*) AS n, max(value) AS max_value FROM {table} "
                f"WHERE value > {RANGE_THRESHOLD:g} GROUP BY metric_name"},
        {"name": "Q8", "kind": "time range (one window)",
         "sql": f"SELECT count(*) AS n, avg(value) AS avg_value FROM {table} "
                f"WHERE timestamp_secs >= {w1} AND timestamp_secs < {w1 + WINDOW}"},
        {"name": "Q9", "kind": "full text",
         "sql": f"SELECT host, count(*) AS n FROM {table} WHERE text_match(message, 'disk full') GROUP BY host"},
        {"name": "Q10", "kind": "GROUP BY, no predicate",
         "sql": f"SELECT service, count(*) AS n, avg(value) AS avg_value FROM {table} GROUP BY service"},
    ]


EQUALITY_KINDS = ("= host", "= host, one window", "IN host", "= service", "IN service", "= metric_name AND = host")
LATENCY_QUERIES = ("Q1", "Q6", "Q8")
RANGE_QUERY = "Q7"
RANGE_THRESHOLD = 1950.0


def exec_table(rows: int, collector: int, first_window: int, seed: int) -> pa.Table:
    """One ingest request of one collector: its hosts (every sixth), all metrics, four windows, messages."""
    rng = np.random.default_rng(seed)
    hosts = np.arange(collector, HOSTS, COLLECTORS)
    host_ids = rng.choice(hosts, size=rows)
    metric_ids = rng.integers(0, METRICS, rows)
    messages = [f"{v} /api/{e} {o} in {ms} ms" for v in VERBS for e in ENDPOINTS for o in OUTCOMES
                for ms in (3, 7, 12, 25, 40, 80, 150, 300, 700, 1500)]
    message_ids = rng.integers(0, len(messages), rows)
    # "disk full" only where disks fill: the disk metrics of a few hosts.
    disk_full = np.isin(metric_ids, list(DISK_FULL_METRICS)) & (host_ids % 97 == 0)
    message = pa.array(messages).take(pa.array(message_ids))
    if disk_full.any():
        full = pa.array([f"write failed: disk full on /var/lib/data ({i % 7} retries)" for i in range(rows)])
        message = pa.array(np.where(disk_full, full.to_numpy(zero_copy_only=False),
                                    message.to_numpy(zero_copy_only=False)))
    return pa.table({
        "metric_name": pa.array([metric_name(i) for i in range(METRICS)]).take(pa.array(metric_ids)),
        "service": pa.array([service_of(h) for h in range(HOSTS)]).take(pa.array(host_ids)),
        "host": pa.array([host_name(h) for h in range(HOSTS)]).take(pa.array(host_ids)),
        "message": message,
        "timestamp_secs": pa.array(first_window + rng.integers(0, EXEC_WINDOWS * WINDOW, rows), type=pa.int64()),
        "value": pa.array(metric_ids * 10 + rng.random(rows) * 10, type=pa.float64()),
    })


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def publish_artifacts(client: httpx.Client, storage: Any, index_id: str, incarnation: str, settings: Any,
                      splits: list[dict[str, Any]], timings: dict[str, float]) -> int:
    """Build each split's artifacts here (as the indexing worker would), register them through indexer-api,
    published; the artifacts' bytes."""
    from strata_core.artifacts import build_artifacts

    keys = api_keys()
    artifact_bytes = 0
    prefix = f"indexes/{index_id}/{incarnation}/artifacts"
    for split in splits:
        started = time.perf_counter()
        with storage.open_input(split["uri"]) as source:
            data = source.read()
        built = build_artifacts(data, split["split_id"], settings.artifacts, settings.field_types())
        timings["artifacts_build"] += time.perf_counter() - started
        started = time.perf_counter()
        refs = []
        for artifact in built.artifacts:
            uri = storage.uri_for(f"{prefix}/{artifact.key(split['split_id'])}")
            storage.write_bytes(uri, artifact.data)
            artifact_bytes += artifact.size_bytes
            refs.append({"artifact_type": str(artifact.artifact_type), "column": artifact.column,
                         "format_version": artifact.format_version, "uri": uri,
                         "size_bytes": artifact.size_bytes, "content_hash": artifact.content_hash})
        response = client.post(f"/v1/splits/{split['split_id']}/artifacts",
                               json={"artifacts": refs, "publish": True}, headers=keys.header(keys.writer))
        timings["artifacts_register"] += time.perf_counter() - started
        if response.status_code != 200 or not response.json()["snapshot"]["published"]:
            raise RuntimeError(f"artifact registration answered {response.status_code}: {response.text[:500]}")
        split["artifacts"] = len(refs)
        split["skipped"] = built.skipped
    return artifact_bytes


def ingest_and_index(indexer_url: str, storage_root: Path, rows: int, batches: int, row_group_size: int
                     ) -> dict[str, Any]:
    """Create the index, ingest every (collector, batch), build each split's artifacts here and register them
    through indexer-api (published)."""
    from strata_core.domain.index_config import IndexSettings
    from strata_core.storage import ObjectStore

    keys = api_keys()
    now = int(time.time())
    current = now - now % WINDOW
    first_window = current - EXEC_WINDOWS * WINDOW
    config = index_config(with_message=True, row_group_size=row_group_size, lookback=86_400, late=86_400)
    settings = IndexSettings.model_validate(config)
    storage = ObjectStore(storage_root.resolve().as_uri())
    splits: list[dict[str, Any]] = []
    timings = {"ingest": 0.0, "artifacts_build": 0.0, "artifacts_register": 0.0}
    with httpx.Client(base_url=indexer_url, timeout=600) as client:
        created = client.post("/v1/indexes", json={"index_id": EXEC_INDEX, **config},
                              headers=keys.header(keys.admin))
        if created.status_code != 201:
            raise RuntimeError(f"index creation answered {created.status_code}: {created.text[:500]}")
        incarnation = created.json()["incarnation"]
        per_request = rows // (COLLECTORS * batches)
        for batch in range(batches):
            for collector in range(COLLECTORS):
                body = _ipc_bytes(exec_table(per_request, collector, first_window, seed=batch * 100 + collector))
                started = time.perf_counter()
                response = client.post(f"/v1/indexes/{EXEC_INDEX}/ingest", content=body,
                                       headers={**keys.header(keys.writer), "Content-Type": ARROW_STREAM})
                timings["ingest"] += time.perf_counter() - started
                if response.status_code != 200:
                    raise RuntimeError(f"ingest answered {response.status_code}: {response.text[:500]}")
                outcome = response.json()
                if outcome["rows_dropped_late"]:
                    raise RuntimeError(f"{outcome['rows_dropped_late']} rows were dropped as late")
                splits.extend(outcome["splits"])
        artifact_bytes = publish_artifacts(client, storage, EXEC_INDEX, incarnation, settings, splits, timings)
    paths = [storage.resolve(s["uri"]) for s in splits]
    footers = [pq.read_metadata(p) for p in paths]
    return {"first_window": first_window, "splits": splits, "paths": paths, "timings": timings,
            "artifact_bytes": artifact_bytes, "data_bytes": sum(os.path.getsize(p) for p in paths),
            "row_groups": sum(f.num_row_groups for f in footers), "rows": sum(f.num_rows for f in footers),
            "row_group_size": row_group_size}


def chunk_bytes(path: str, row_groups: list[int] | None, columns: set[str]) -> int:
    """Compressed bytes of these columns in these row groups (all row groups when None)."""
    metadata = pq.read_metadata(path)
    positions = [i for i in range(metadata.num_columns) if metadata.schema.column(i).path in columns]
    groups = range(metadata.num_row_groups) if row_groups is None else row_groups
    return sum(metadata.row_group(g).column(i).total_compressed_size for g in groups for i in positions)


def timestamp_floor(path: str, column: str = "timestamp_secs") -> int | None:
    """The file's smallest timestamp, from its footer statistics (None when any row group lacks them)."""
    metadata = pq.read_metadata(path)
    position = next(i for i in range(metadata.num_columns) if metadata.schema.column(i).path == column)
    lows = []
    for g in range(metadata.num_row_groups):
        stats = metadata.row_group(g).column(position).statistics
        if stats is None or not stats.has_min_max:
            return None
        lows.append(stats.min)
    return min(lows) if lows else None


def bytes_without_lookback(plan: dict[str, Any], sql: str, uri_to_path: dict[str, str], ts: str = "timestamp_secs"
                           ) -> int:
    """The plan's bytes if the default-lookback filter were skipped on files whose every timestamp is inside the
    lookback (it holds for each of their rows), and with it the timestamp column, when the SQL does not name it."""
    columns = set(plan["columns"])
    if plan["time_range"]["source"] != "default_lookback" or ts in sql:
        return sum(chunk_bytes(uri_to_path[f["uri"]], f["row_groups"], columns) for f in plan["files"])
    bound = plan["time_range"]["intervals"][0][0]
    total = 0
    for f in plan["files"]:
        path = uri_to_path[f["uri"]]
        floor = timestamp_floor(path, ts)
        inside = floor is not None and bound is not None and floor >= bound
        total += chunk_bytes(path, f["row_groups"], columns - {ts} if inside else columns)
    return total


def duckdb_sql(sql: str, paths: list[str], table: str = f'"{EXEC_INDEX}"') -> str:
    from strata_core.artifacts import tokenize
    from strata_core.sql.text_match import term_regex

    files = "read_parquet([" + ", ".join(f"'{p}'" for p in paths) + "])"
    out = sql.replace(table, files)
    marker = "text_match(message, 'disk full')"
    if marker in out:
        # The same token contract as text_match's Spark form (strata_core.sql.text_match).
        terms = tokenize("disk full")
        out = out.replace(marker, "(" + " AND ".join(f"regexp_matches(message, '{term_regex(t)}')"
                                                     for t in terms) + ")")
    return out


class DuckRunner:
    """DuckDB over the same files; its bytes are its own I/O counter from the JSON profile of a second run (the
    first one fills its Parquet metadata cache, so footers are not counted: Strata's bytes are column chunks
    only too)."""

    def __init__(self, workdir: Path) -> None:
        import duckdb

        self.connection = duckdb.connect()
        self.connection.execute("SET parquet_metadata_cache = true")
        self.profile_path = workdir / "duckdb-profile.json"
        self.connection.execute("PRAGMA enable_profiling = 'json'")
        self.connection.execute(f"PRAGMA profiling_output = '{self.profile_path}'")
        self.version = duckdb.__version__
        self.threads = self.connection.execute("SELECT current_setting('threads')").fetchone()[0]

    def run(self, sql: str) -> dict[str, Any]:
        self.connection.execute(sql).fetchall()
        self.profile_path.unlink(missing_ok=True)
        started = time.perf_counter()
        rows = self.connection.execute(sql).fetchall()
        seconds = time.perf_counter() - started
        if not self.profile_path.exists():
            # DuckDB answered from metadata alone and wrote no profile.
            return {"rows": rows, "seconds": seconds, "bytes": 0, "row_groups_scanned": 0, "row_groups_total": 0}
        profile = json.loads(self.profile_path.read_text())
        query = profile.get("query", {})
        return {"rows": rows, "seconds": seconds, "bytes": int(profile["io"]["total_bytes_read"]),
                "row_groups_scanned": query.get("total_row_groups_scanned"),
                "row_groups_total": query.get("total_row_groups_to_scan")}

    def close(self) -> None:
        self.connection.close()


def normalized(rows: list[tuple]) -> list[tuple]:
    def cell(value):
        if isinstance(value, float) and math.isnan(value):
            return None
        return value
    return sorted((tuple(cell(v) for v in row) for row in rows),
                  key=lambda r: tuple((0, v) if isinstance(v, str) else (1, "") for v in r) + (repr(r),))


def same_rows(left: list[tuple], right: list[tuple]) -> bool:
    """Equal as multisets of rows, floats to 1e-9 relative (sums of doubles depend on their order)."""
    a, b = normalized(left), normalized(right)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y, strict=True):
            if isinstance(u, float) or isinstance(v, float):
                if u is None or v is None or not math.isclose(float(u), float(v), rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif u != v:
                return False
    return True


def _strata_query(client: httpx.Client, sql: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = client.post("/v1/query", json={"sql": sql}, headers={"Accept": "application/json"})
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"query answered {response.status_code}: {response.text[:800]}")
    return elapsed, response.json()


def compare_queries(query_url: str, dataset: dict[str, Any], workdir: Path) -> dict[str, Any]:
    keys = api_keys()
    paths = dataset["paths"]
    uri_to_path = {s["uri"]: p for s, p in zip(dataset["splits"], paths, strict=True)}
    duck = DuckRunner(workdir)
    out: list[dict[str, Any]] = []
    try:
        with httpx.Client(base_url=query_url, headers=keys.header(keys.admin), timeout=600) as client:
            warm_sql = f'SELECT count(*) AS n FROM "{EXEC_INDEX}"'
            cold, _ = _strata_query(client, warm_sql)
            for query in exec_queries(f'"{EXEC_INDEX}"', dataset["first_window"]):
                explained = client.post("/v1/query/explain", json={"sql": query["sql"]})
                if explained.status_code != 200:
                    raise RuntimeError(f"explain of {query['name']} answered {explained.status_code}: "
                                       f"{explained.text[:500]}")
                plan = explained.json()
                # What the Spark scan reads: the plan's scan columns (the timestamp included) of the kept groups.
                scan_bytes = sum(chunk_bytes(uri_to_path[f["uri"]], f["row_groups"], set(plan["columns"]))
                                 for f in plan["files"])
                seconds, body = _strata_query(client, query["sql"])
                strata_rows = [tuple(row.values()) for row in body["rows"]]
                reference = duck.run(duckdb_sql(query["sql"], paths))
                columns = set(plan["columns"]) if plan["files"] else set()
                entry = {
                    **query,
                    "strata_bytes": plan["total_bytes"], "strata_scan_bytes": scan_bytes,
                    "strata_bytes_no_lookback": bytes_without_lookback(plan, query["sql"], uri_to_path),
                    "strata_files": plan["total_files"], "strata_row_groups": plan["total_row_groups"],
                    "stages": plan["stages"], "plan_columns": plan["columns"],
                    "file_columns": plan["files"][0]["columns"] if plan["files"] else [],
                    "time_source": plan["time_range"]["source"], "strata_seconds": seconds,
                    "strata_result_rows": len(strata_rows),
                    "duck_bytes": reference["bytes"], "duck_row_groups": reference["row_groups_scanned"],
                    "duck_row_groups_total": reference["row_groups_total"], "duck_seconds": reference["seconds"],
                    "unpruned_bytes": sum(chunk_bytes(p, None, columns - {"partition_id"}) for p in paths),
                    "equal": same_rows(strata_rows, reference["rows"]),
                }
                if query["name"] == RANGE_QUERY:
                    entry["kept"] = [{"uri": f["uri"], "row_groups": f["row_groups"]} for f in plan["files"]]
                if not entry["equal"]:
                    entry["strata_sample"] = normalized(strata_rows)[:5]
                    entry["duck_sample"] = normalized(reference["rows"])[:5]
                out.append(entry)
                print(f"[query] {query['name']}: strata {fmt_bytes(entry['strata_bytes'])} (scan "
                      f"{fmt_bytes(scan_bytes)}), duckdb {fmt_bytes(entry['duck_bytes'])}, equal {entry['equal']}, "
                      f"{seconds:.2f} s", flush=True)
    finally:
        duck.close()
    return {"queries": out, "cold_first_query": cold, "duckdb": {"version": duck.version, "threads": duck.threads}}


def value_range_check(dataset: dict[str, Any], files: list[dict[str, Any]], threshold: float) -> dict[str, int]:
    """Pruning must never drop a matching row: every row group holding a `value > threshold` row is kept."""
    uri_to_path = {s["uri"]: p for s, p in zip(dataset["splits"], dataset["paths"], strict=True)}
    kept = {(f["uri"], g) for f in files for g in f["row_groups"]}
    matching = missed = 0
    for uri, path in uri_to_path.items():
        parquet = pq.ParquetFile(path)
        for group in range(parquet.num_row_groups):
            values = parquet.read_row_group(group, columns=["value"]).column("value").to_numpy()
            if (values > threshold).any():
                matching += 1
                missed += (uri, group) not in kept
    return {"row_groups_with_matches": matching, "dropped": missed}


def measure_latency(query_url: str, proxy_url: str, dataset: dict[str, Any], runs: int) -> dict[str, Any]:
    keys = api_keys()
    queries = {q["name"]: q for q in exec_queries(f'"{EXEC_INDEX}"', dataset["first_window"])}
    out = {}
    with httpx.Client(headers=keys.header(keys.admin), timeout=600) as client:
        for name in LATENCY_QUERIES:
            sql = queries[name]["sql"]
            samples: dict[str, list[float]] = {"direct": [], "proxy": []}
            bases = {"direct": query_url, "proxy": proxy_url}

            def once(path: str, sql: str = sql, bases: dict[str, str] = bases) -> float:
                started = time.perf_counter()
                response = client.post(bases[path] + "/v1/query", json={"sql": sql},
                                       headers={"Accept": "application/json"})
                response.read()
                elapsed = time.perf_counter() - started
                if response.status_code != 200:
                    raise RuntimeError(f"{path} answered {response.status_code}: {response.text[:500]}")
                return elapsed

            for path in ("direct", "proxy"):
                once(path)
            # Alternating, so both paths see the same machine (other work runs on it).
            for _ in range(runs):
                for path in ("direct", "proxy"):
                    samples[path].append(once(path))
            out[name] = {path: latency_summary(values) for path, values in samples.items()}
            out[name]["kind"] = queries[name]["kind"]
            print(f"[query] latency {name}: direct p50 {out[name]['direct']['p50']:.3f} s, proxy p50 "
                  f"{out[name]['proxy']['p50']:.3f} s", flush=True)
    return out


def run_execution(stack: Stack, *, rows: int, batches: int, row_group_size: int, latency_runs: int
                  ) -> dict[str, Any]:
    from strata_core.config import Settings
    from strata_services.local.processes import free_port
    from strata_services.local.spark_server import LocalSparkConnectServer

    url = stack.create_database("strata_bench_query_exec")
    storage_root = stack.path("exec-storage")
    indexer = stack.start_indexer(url, storage_root)
    print(f"[query] ingesting {rows:,} rows through indexer-api ...", flush=True)
    dataset = ingest_and_index(indexer.base_url, storage_root, rows, batches, row_group_size)
    indexer.stop()
    print(f"[query] {len(dataset['splits'])} splits, {dataset['row_groups']} row groups, "
          f"{fmt_bytes(dataset['data_bytes'])}; ingest {dataset['timings']['ingest']:.1f} s, artifacts "
          f"{dataset['timings']['artifacts_build']:.1f} s", flush=True)
    settings = Settings()
    server = LocalSparkConnectServer(free_port(), master=settings.spark_master,
                                     driver_memory=settings.spark_driver_memory,
                                     work_dir=stack.path("spark-connect"))
    result: dict[str, Any] = {"dataset": {k: v for k, v in dataset.items() if k not in ("splits", "paths")}}
    result["dataset"]["files"] = len(dataset["splits"])
    try:
        server.start()
        started = time.perf_counter()
        version = server.wait_ready(timeout=240)
        result["spark"] = {"version": version, "master": settings.spark_master,
                           "ready_secs": time.perf_counter() - started}
        env = child_env(url, storage_root, stack.path("home-exec"), server.remote)
        with api_child("query-api", env, stack.path("logs-exec")) as query_api:
            proxy_env = child_env(url, storage_root, stack.path("home-proxy"),
                                  STRATA_QUERY_UPSTREAMS=query_api.url,
                                  STRATA_PROXY_RATE_PER_SEC="1000", STRATA_PROXY_BURST="1000")
            with api_child("proxy", proxy_env, stack.path("logs-proxy")) as proxy:
                print("[query] ten queries: Strata through query-api on Spark, DuckDB over the same files ...",
                      flush=True)
                result["compare"] = compare_queries(query_api.url, dataset, stack.path("duckdb"))
                check = next(q for q in result["compare"]["queries"] if q["name"] == RANGE_QUERY)
                result["range_check"] = value_range_check(dataset, check.pop("kept"), RANGE_THRESHOLD)
                print("[query] latency through the proxy and direct ...", flush=True)
                result["latency"] = measure_latency(query_api.url, proxy.url, dataset, latency_runs)
                result["latency_runs"] = latency_runs
    finally:
        server.stop()
    return result


# ------------------------------------------------------------------------------------------------------------


CODE_PATHS = ("query-api", "shared", "spark-jobs", "services")


def code_version() -> dict[str, str]:
    """The commit and any uncommitted change to the code measured: others may commit while a run goes on."""
    import subprocess

    from bench.harness import REPO_ROOT

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": git("rev-parse", "--short", "HEAD"),
            "dirty": git("status", "--short", "--", *CODE_PATHS).replace("\n", "; ")}


def code_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Files of the measured code that differ between the start and the end of a run (commits to bench/ or docs/
    during a run do not count)."""
    import subprocess

    from bench.harness import REPO_ROOT

    changed = set()
    if before["commit"] != after["commit"]:
        diff = subprocess.run(["git", "diff", "--name-only", f"{before['commit']}..{after['commit']}", "--",
                               *CODE_PATHS], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30).stdout
        changed.update(line for line in diff.splitlines() if line)
    if before["dirty"] != after["dirty"]:
        changed.add(f"uncommitted: {after['dirty'] or '(none)'}")
    return sorted(changed)


def run(stack: Stack, *, quick: bool = False, parts: tuple[str, ...] = ("explain", "execution")) -> dict[str, Any]:
    result: dict[str, Any] = {"quick": quick, "code_before": code_version()}
    if "explain" in parts:
        result["explain"] = run_explain(
            stack, splits=20_000 if quick else 1_000_000, days=2 if quick else 30, runs=20 if quick else 300,
            cold_runs=10 if quick else 200)
    if "execution" in parts:
        result["execution"] = run_execution(
            stack, rows=240_000 if quick else 3_000_000, batches=1 if quick else 2,
            row_group_size=4096 if quick else 16_384, latency_runs=2 if quick else 20)
    result["code_after"] = code_version()
    result["code_changed"] = code_changes(result["code_before"], result["code_after"])
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    (DATA_DIR / f"last-{SECTION}{'-quick' if quick else ''}.json").write_text(json.dumps(result, default=str))
    return result


# ------------------------------------------------------------------------------------------------------------
# Rendering


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _clip(text: str, limit: int) -> str:
    """Statements with hundreds of bound ids are unreadable in full: their head says what they are."""
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text) - limit:,} more characters)"


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _stage_table(stages: list[dict[str, Any]]) -> list[str]:
    lines = ["| stage | files | row groups | bytes |", "|---|---|---|---|"]
    for s in stages:
        lines.append(f"| {s['stage']} | {fmt_int(s['files_before'])} -> {fmt_int(s['files_after'])} | "
                     f"{fmt_int(s['row_groups_before'])} -> {fmt_int(s['row_groups_after'])} | "
                     f"{fmt_bytes(s['bytes_before'])} -> {fmt_bytes(s['bytes_after'])} |")
    return lines


def render_explain(r: dict[str, Any]) -> list[str]:
    load = r["load"]
    t = load["timings"]
    counts = load["counts"]
    inp = r["in_process"]
    http = r["http"]
    warm, cold, lat = inp["warm"], inp["cold"], http["latency"]

    def row(label: str, s: dict[str, Any]) -> str:
        return (f"| {label} | {s['runs']} | **{_ms(s['p50'])}** | **{_ms(s['p99'])}** | {_ms(s['min'])} | "
                f"{_ms(s['max'])} | {_verdict(s['p50'] <= P50_GOAL and s['p99'] <= P99_GOAL)} |")

    lines = [
        f"### (1) EXPLAIN over {fmt_int(counts['splits'])} published splits",
        "",
        f"One index, {fmt_int(counts['splits'])} published splits in {fmt_int(counts['windows'])} windows of "
        f"{WINDOW} s over {r['days']} days (~{counts['splits'] // max(counts['windows'], 1)} per window), "
        f"{TENANTS} tenants, {fmt_int(counts['stats_rows'])} `split_column_stats` rows (metric_name, service, "
        "host, timestamp_secs, value per split). Each split holds a random block of 20-200 of 2,000 hosts, so "
        f"split min/max on host differ. The {load['real_files']} splits of the two windows the queried range "
        f"crosses are real files ({fmt_bytes(load['real_bytes'])}: 2k-6k sorted rows, row groups of "
        f"{REAL_ROW_GROUP}, a quarter of their host block) whose rows carry the files' real sizes, row groups and "
        "statistics, with real artifacts registered through `IndexingRepository.register` and published "
        f"snapshots ({', '.join(f'{n} {k}' for k, n in load['artifacts'].items())}). Loaded with asyncpg COPY in "
        f"{fmt_s(t['load_secs'])} (COPY {fmt_s(t['copy_secs'])}, writing the real files and building their "
        f"artifacts {fmt_s(t['real_files_secs'])}, indexes and constraints {fmt_s(t['restore_secs'])}), "
        f"VACUUM ANALYZE {fmt_s(t['vacuum_secs'])}, artifacts registered in {fmt_s(t['register_secs'])}.",
        "",
        f"Query (admin key, no tenant): `{r['sql']}` (15 minutes, half-way through one window to half-way "
        "through the next).",
        "",
        "| measured | runs | p50 | p99 | min | max | goal p50 <= 20 ms, p99 <= 100 ms |",
        "|---|---|---|---|---|---|---|",
        row("`build_plan` in process, warm caches", warm),
        row("`POST /v1/query/explain`, HTTP to query-api (`strata serve query-api` child, keep-alive client), "
            "warm", lat),
        *([row("`POST /v1/query/explain` over HTTP as above, each request a new SQL text (the same query led by "
               "a numbered comment), so never a kept plan: planned in full, warm caches",
               http["unkept"])] if "unkept" in http else []),
        row("`build_plan` in process, cold caches (new `ArtifactCache` and `FooterCache` each run, so each plan "
            "reads its footers and artifacts again; OS page cache and PostgreSQL buffers warm)", cold),
        "",
        "The three warm rows were measured in turn (one plan in process, one request over HTTP that reuses the "
        "kept plan, one over HTTP with a new SQL text, and again), so all saw the same load from the rest of the "
        "machine." + (f" query-api's own `planning_ms` of the new plans: p50 "
                      f"{_ms(http['unkept_server_planning']['p50'])}, p99 {_ms(http['unkept_server_planning']['p99'])}."
                      if "unkept" in http else ""),
        "",
        f"First plan of the process (connections opening, caches empty): {_ms(inp['first'][0])} in process, "
        f"{_ms(http['first'])} over HTTP. Over HTTP the server's own `planning_ms` has p50 "
        f"{_ms(http['server_planning']['p50'])}, p99 {_ms(http['server_planning']['p99'])}; the response is "
        f"{fmt_bytes(http['response_bytes'])}. Warm caches hold {fmt_bytes(inp['cache_bytes']['artifacts'])} of "
        f"artifacts (as accounted by the cache) and {fmt_bytes(inp['cache_bytes']['footers'])} of footers.",
        "",
        "Stages of the plan:",
        "",
        *_stage_table(inp["plan"]["stages"]),
        "",
        f"Where one warm `build_plan` spends its time (mean of {inp['steps_runs']} plans, each step timed on its "
        "own; the rest is session/connection handling, candidate filtering and building the output):",
        "",
        "| step | mean per plan |",
        "|---|---|",
        *(f"| {name} | {_ms(secs)} |" for name, secs in inp["steps"].items()),
        "",
        "The SQL of one plan, each statement alone through raw asyncpg (median of 20, rows fetched):",
        "",
        "| statement | median | rows |",
        "|---|---|---|",
        *(f"| `{' '.join(s['text'].split())[:150]}...` | {_ms(s['median'])} | {fmt_int(s['rows'])} |"
          for s in inp["sql"]),
        "",
        "",
        "<details><summary>EXPLAIN (ANALYZE, BUFFERS) of each statement, and a cProfile of warm plans (the cascade "
        "run inline so it is seen)</summary>",
        "",
    ]
    for statement in inp["sql"]:
        lines += ["```sql", _clip(statement["text"], 600), "```", "", "```",
                  "\n".join(_clip(line, 240) for line in statement["explain"].splitlines()), "```", ""]
    lines += ["By own time:", "", "```", inp["profile_tottime"], "```", "", "By cumulative time:", "", "```",
              inp["profile_cumulative"], "```", "", "</details>"]
    return lines


def render_execution(r: dict[str, Any]) -> list[str]:
    d = r["dataset"]
    c = r["compare"]
    rows_table = [
        "| query | kind | Strata bytes (`plan.total_bytes`) | Strata scan bytes (Spark reads) | Strata files / "
        "row groups | DuckDB bytes (`io.total_bytes_read`) | DuckDB row groups | no pruning | Strata / DuckDB | "
        "goal | results equal | prototype: lookback filter skipped on files inside it |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    all_equal = True
    goals_met = fixed_met = True

    def meets(strata: int, duck: int, equality: bool) -> bool:
        return strata < duck if equality else strata <= duck

    for q in c["queries"]:
        equality = q["kind"] in EQUALITY_KINDS
        ok = meets(q["strata_bytes"], q["duck_bytes"], equality)
        fixed = q.get("strata_bytes_no_lookback", q["strata_bytes"])
        fixed_ok = meets(fixed, q["duck_bytes"], equality)
        goals_met &= ok
        fixed_met &= fixed_ok
        all_equal &= q["equal"]
        ratio = q["strata_bytes"] / q["duck_bytes"] if q["duck_bytes"] else float("inf")
        rows_table.append(
            f"| {q['name']} | {q['kind']} | {fmt_bytes(q['strata_bytes'])} | {fmt_bytes(q['strata_scan_bytes'])} | "
            f"{q['strata_files']} / {q['strata_row_groups']} | {fmt_bytes(q['duck_bytes'])} | "
            f"{q['duck_row_groups']} of {q['duck_row_groups_total']} | {fmt_bytes(q['unpruned_bytes'])} | "
            f"{ratio:.2f} | {'fewer' if equality else 'no more'}: {_verdict(ok)} | "
            f"{'yes' if q['equal'] else '**NO**'} | "
            f"{fmt_bytes(fixed) + (': ' + _verdict(fixed_ok) if fixed != q['strata_bytes'] else ' (same)')} |")
    lines = [
        "### (2) Bytes read after pruning: Strata vs DuckDB",
        "",
        f"{fmt_int(d['rows'])} metrics-like rows (metric_name 200 values, host 2,000, service 30 derived from the "
        "host, a log message, timestamp_secs over 4 windows, value growing with the metric) ingested through "
        f"indexer-api as Arrow IPC in {COLLECTORS} collectors x batches: a collector serves every sixth host, so "
        "its files hold a sixth of the hosts and 5 of the 30 services (as hosts are spread over collectors in "
        f"practice); `disk full` messages only on the disk metrics of every 97th host. {d['files']} sorted splits "
        f"({fmt_bytes(d['data_bytes'])}, {d['row_groups']} row groups of up to {fmt_int(d['row_group_size'])} rows), "
        f"each with a zone map, a bloom on host, a bitmap on service and a full-text index of message "
        f"({fmt_bytes(d['artifact_bytes'])} of artifacts, built with `build_artifacts` in "
        f"{fmt_s(d['timings']['artifacts_build'])} and registered through `POST /v1/splits/{{id}}/artifacts` in "
        f"{fmt_s(d['timings']['artifacts_register'])}; ingestion took {fmt_s(d['timings']['ingest'])}).",
        "",
        f"Strata: `POST /v1/query/explain` for the plan and `POST /v1/query` for the result, on a local Spark "
        f"Connect server (Spark {r['spark']['version']}, {r['spark']['master']}). DuckDB {c['duckdb']['version']} "
        f"({c['duckdb']['threads']} threads): the same SQL over `read_parquet([...])` of the same {d['files']} "
        "files (`text_match` replaced by the same token regexes Spark runs), bytes from its own counter "
        "`io.total_bytes_read` of the JSON profile, on a second run with `parquet_metadata_cache` on (footers "
        "are not counted, as Strata's bytes are column chunks only); its row groups are "
        "`total_row_groups_scanned` of `total_row_groups_to_scan`. \"no pruning\": the plan's columns over every "
        "row group. \"Strata scan bytes\": the column chunks the Spark scan reads (the plan's `columns` over the "
        "kept row groups, recomputed here from the footers).",
        "",
        *rows_table,
        "",
        f"Goal (fewer bytes on every equality/IN query, no more on any other, by `plan.total_bytes`): "
        f"{_verdict(goals_met)}; with the lookback prototype: {_verdict(fixed_met)}; results equal on every "
        f"query: {_verdict(all_equal)}. The first query of the fresh query-api on Spark took "
        f"{fmt_s(c['cold_first_query'])}.",
    ]
    for q in c["queries"]:
        if not q["equal"]:
            lines += ["", f"{q['name']} differs: Strata {q.get('strata_sample')} vs DuckDB {q.get('duck_sample')}"]
    lookback = [q for q in c["queries"] if q["time_source"] == "default_lookback"
                and q.get("strata_bytes_no_lookback", q["strata_bytes"]) < q["strata_bytes"]]
    if lookback:
        lines += [
            "",
            f"Queries without a time bound ({', '.join(q['name'] for q in lookback)}) get the default lookback as an "
            "extra filter on the timestamp column, so the scan reads that column although the SQL does not name "
            "it: " + ", ".join(f"{q['name']} +{fmt_bytes(q['strata_bytes'] - q['strata_bytes_no_lookback'])}"
                               for q in lookback)
            + ". DuckDB runs the SQL as written. The last column is a prototype computed from the plans and the "
            "files' footers: on a file whose smallest timestamp is inside the lookback the filter holds for every "
            "row, so it (and the column) can be left out for that file; the results would not change.",
        ]
    uncounted = [q["name"] for q in c["queries"] if q["strata_scan_bytes"] != q["strata_bytes"]]
    if uncounted:
        lines += ["", f"On {', '.join(uncounted)} `plan.total_bytes` differs from the bytes of the plan's `columns` "
                      "over its row groups: the plan does not count exactly what the scan reads."]
    check = r.get("range_check")
    if check:
        lines += ["", f"Pruning never dropped a matching row on {RANGE_QUERY} (checked against the data): "
                      f"{check['row_groups_with_matches']} row groups hold a row with value > {RANGE_THRESHOLD:g}, "
                      f"{check['dropped']} of them left out of the plan (the zone maps' NaN counts let Strata prune "
                      "float ranges from above)."]
    lines += ["", "<details><summary>The ten queries and each plan's stages</summary>", ""]
    for q in c["queries"]:
        lines += [f"{q['name']} ({q['kind']}; time range from {q['time_source']}; Strata {fmt_s(q['strata_seconds'])},"
                  f" DuckDB {fmt_s(q['duck_seconds'])}): `{q['sql']}`", "", *_stage_table(q["stages"]), ""]
    lines += ["</details>"]
    lat = r["latency"]
    lines += [
        "",
        "### (3) End-to-end latency: proxy -> query-api -> Spark vs query-api directly",
        "",
        f"{r['latency_runs']} runs per path after one warm-up each, the two paths alternating; client time to the "
        "whole JSON body (keep-alive httpx client, admin key).",
        "",
        "| query | kind | direct p50 | direct p95 | proxy p50 | proxy p95 | proxy - direct (p50) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, entry in lat.items():
        direct, proxy = entry["direct"], entry["proxy"]
        lines.append(f"| {name} | {entry['kind']} | {_ms(direct['p50'])} | {_ms(direct['p95'])} | "
                     f"{_ms(proxy['p50'])} | {_ms(proxy['p95'])} | {_ms(proxy['p50'] - direct['p50'])} |")
    return lines


def render(result: dict[str, Any]) -> str:
    lines = ["## Query: planning, pruning vs DuckDB, latency through the proxy", ""]
    before, after = result.get("code_before"), result.get("code_after")
    if before:
        code = f"Code measured: commit {before['commit']}" + (
            f", uncommitted changes in {', '.join(CODE_PATHS)}: {before['dirty']}" if before["dirty"] else
            f" ({', '.join(CODE_PATHS)} clean)")
        changed = result.get("code_changed", [])
        if changed:
            code += (f". **The measured code changed during the run** (at the end: commit {after['commit']}; "
                     f"{', '.join(changed)})")
        elif after and after["commit"] != before["commit"]:
            code += f"; commits during the run (to {after['commit']}) left the measured code unchanged"
        lines += [code + ".", ""]
    if "explain" in result:
        lines += render_explain(result["explain"]) + [""]
    if "execution" in result:
        lines += render_execution(result["execution"])
    return "\n".join(lines)


def main() -> None:
    from bench.report import run_and_write

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--part", choices=["explain", "execution"], action="append",
                        help="only this part (repeatable); the doc is then left untouched")
    parser.add_argument("--no-write", action="store_true", help="print the section instead of updating the docs")
    parser.add_argument("--render-from", type=Path, default=None,
                        help="print the section from a saved bench/.data/last-query.json, run nothing")
    args = parser.parse_args()
    if args.render_from:
        print(render(json.loads(args.render_from.read_text())))
        return
    parts = tuple(args.part or ("explain", "execution"))
    run_and_write({SECTION: lambda stack: render(run(stack, quick=args.quick, parts=parts))},
                  write=not (args.no_write or args.quick or args.part))


if __name__ == "__main__":
    main()
