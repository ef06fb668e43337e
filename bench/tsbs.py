"""TSBS devops cpu-only data and its 15 query types as TSBS's TimescaleDB generator writes them, for a denormalized
table (hostname and the other tags in the cpu rows, no tags join), over a Strata index.

The data follows TSBS (`pkg/data/usecases/devops`): hosts `host_N` with static tags drawn from TSBS's choices, one
row per host every 10 s, each field a random walk of normal(0, 1) steps clamped to [0, 100] from a uniform start,
written as TSBS writes them (truncated to an integer) but typed f64 as TimescaleDB stores them. It is placed at
recent times, ending at `end`, so Strata's ingest admits it (the index's late-data window covers it) and
everything reads it without a time range (the index's default lookback covers it). Deterministic from `seed`.

The queries keep TSBS's text: `time_bucket('60 seconds', time)`, `hostname IN (...)`, the timestamp literals of
its Go layout (`2006-01-02 15:04:05.999999 -0700`), the CTE of double-groupby, DISTINCT ON of lastpoint. Their
random windows (TSBS's `RandWindow`) and hosts (`GetRandomHosts`) come from a seeded generator; a window longer
than the data is the data's whole span, so every query reads rows however small the data set.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

INTERVAL_SECS = 10
FIELDS = ("usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq",
          "usage_steal", "usage_guest", "usage_guest_nice")
TAGS = ("hostname", "region", "datacenter", "rack", "os", "arch", "team", "service", "service_version",
        "service_environment")
REGIONS = {
    "us-east-1": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    "us-west-1": ["us-west-1a", "us-west-1b"],
    "us-west-2": ["us-west-2a", "us-west-2b", "us-west-2c"],
    "eu-west-1": ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
    "eu-central-1": ["eu-central-1a", "eu-central-1b"],
    "ap-southeast-1": ["ap-southeast-1a", "ap-southeast-1b"],
    "ap-southeast-2": ["ap-southeast-2a", "ap-southeast-2b"],
    "ap-northeast-1": ["ap-northeast-1a", "ap-northeast-1c"],
    "sa-east-1": ["sa-east-1a", "sa-east-1b", "sa-east-1c"],
}
TEAMS = ["SF", "NYC", "LON", "CHI"]
OSES = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]
ARCHES = ["x64", "x86"]
ENVIRONMENTS = ["production", "staging", "test"]

HOUR = 3600
# TSBS's durations (uses/devops/common.go).
DOUBLE_GROUPBY_SECS = 12 * HOUR
HIGH_CPU_SECS = 12 * HOUR
MAX_ALL_SECS = 8 * HOUR

QUERY_TYPES = ("single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1", "single-groupby-5-1-1",
               "single-groupby-5-1-12", "single-groupby-5-8-1", "cpu-max-all-1", "cpu-max-all-8",
               "double-groupby-1", "double-groupby-5", "double-groupby-all", "high-cpu-1", "high-cpu-all",
               "lastpoint", "groupby-orderby-limit")
# The types whose SQL orders every row (the others' row order is the engine's to choose).
UNORDERED = frozenset({"high-cpu-1", "high-cpu-all"})


@dataclass(frozen=True)
class CpuData:
    """`hosts` hosts reporting every 10 s over [end - span_secs, end); `end` a multiple of 10 s."""

    hosts: int
    end: int
    span_secs: int
    seed: int = 1

    @property
    def start(self) -> int:
        return self.end - self.span_secs

    @property
    def rows(self) -> int:
        return self.hosts * (self.span_secs // INTERVAL_SECS)


def recent(hosts: int, span_secs: int, now: int, seed: int = 1) -> CpuData:
    """Data ending at the last 10 s boundary before `now`."""
    return CpuData(hosts, now - now % INTERVAL_SECS, span_secs, seed)


def host_tags(hosts: int, seed: int) -> dict[str, list[str]]:
    """Each host's static tags, drawn from TSBS's choices (devops/host.go)."""
    rng = random.Random(f"tags-{seed}")
    columns: dict[str, list[str]] = {tag: [] for tag in TAGS}
    for host in range(hosts):
        region = rng.choice(list(REGIONS))
        values = {"hostname": f"host_{host}", "region": region, "datacenter": rng.choice(REGIONS[region]),
                  "rack": str(rng.randrange(100)), "os": rng.choice(OSES), "arch": rng.choice(ARCHES),
                  "team": rng.choice(TEAMS), "service": str(rng.randrange(20)),
                  "service_version": str(rng.randrange(2)), "service_environment": rng.choice(ENVIRONMENTS)}
        for tag in TAGS:
            columns[tag].append(values[tag])
    return columns


def _walks(data: CpuData, steps_per_chunk: int) -> Iterator[np.ndarray]:
    """(steps, hosts, fields) values, chunk by chunk: TSBS's ClampedRandomWalk per host and field, truncated as TSBS
    writes it. Chunked so ten times the hosts do not hold every step's noise in memory at once."""
    rng = np.random.default_rng(data.seed)
    steps = data.span_secs // INTERVAL_SECS
    state = rng.uniform(0.0, 100.0, (data.hosts, len(FIELDS)))
    for first in range(0, steps, steps_per_chunk):
        count = min(steps_per_chunk, steps - first)
        noise = rng.standard_normal((count, data.hosts, len(FIELDS)))
        out = np.empty_like(noise)
        for step in range(count):
            state = np.clip(state + noise[step], 0.0, 100.0)
            out[step] = state
        yield np.trunc(out)


def cpu_batches(data: CpuData, hours_per_batch: int = 1) -> Iterator[pa.Table]:
    """The rows as Arrow tables of `hours_per_batch` hours each (every host's rows in each), oldest first."""
    tags = host_tags(data.hosts, data.seed)
    dictionaries = {tag: pa.array(tags[tag], pa.string()) for tag in TAGS}
    steps_per_batch = hours_per_batch * HOUR // INTERVAL_SECS
    first = 0
    for chunk in _walks(data, steps_per_batch):
        steps = chunk.shape[0]
        times = (data.start + (first + np.arange(steps)) * INTERVAL_SECS) * 1_000_000
        host_of_row = pa.array(np.tile(np.arange(data.hosts), steps))
        columns: dict[str, pa.Array] = {
            "time": pa.array(np.repeat(times, data.hosts), pa.timestamp("us", tz="UTC"))}
        for tag in TAGS:
            columns[tag] = dictionaries[tag].take(host_of_row)
        flat = chunk.reshape(steps * data.hosts, len(FIELDS))
        for position, field in enumerate(FIELDS):
            columns[field] = pa.array(flat[:, position], pa.float64())
        first += steps
        yield pa.table(columns)


def cpu_table(data: CpuData) -> pa.Table:
    return pa.concat_tables(cpu_batches(data, hours_per_batch=max(1, data.span_secs // HOUR + 1)))


def index_config(index_id: str, data: CpuData, now: int) -> dict[str, Any]:
    """An index holding `data`: its late-data window admits the oldest row at `now` (with an hour to spare), its
    default lookback reads all of it (lastpoint and groupby-orderby-limit have no lower time bound), sorted by host
    then time as TSBS's TimescaleDB index (hostname, time DESC) orders it."""
    reach = now - data.start + 2 * HOUR
    return {
        "index_id": index_id,
        "description": "TSBS devops cpu-only",
        "fields": [{"name": "time", "type": "timestamp"},
                   *({"name": tag, "type": "string"} for tag in TAGS),
                   *({"name": field, "type": "f64"} for field in FIELDS)],
        "timestamp_field": "time",
        "sort_schema": "hostname,time@v1",
        "window_duration_secs": HOUR,
        "compaction_start_time": data.start - data.start % HOUR,
        "late_data_acceptance_secs": reach,
        "query": {"default_lookback_secs": reach},
        "parquet": {"row_group_size": 16_384},
    }


# ------------------------------------------------------------------------------------------------------------
# The queries, as cmd/tsbs_generate_queries/databases/timescaledb/devops.go writes them (UseTags and UseJSON off,
# UseTimeBucket on).


def tsbs_time(micros: int) -> str:
    """Go's `2006-01-02 15:04:05.999999 -0700`: trailing zeros of the fraction dropped, the dot too when none is
    left."""
    moment = datetime.fromtimestamp(micros // 1_000_000, UTC)
    fraction = f"{micros % 1_000_000:06d}".rstrip("0")
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (f".{fraction}" if fraction else "") + " +0000"


class QueryMaker:
    """TSBS's query generator over `data`, its random choices seeded."""

    def __init__(self, data: CpuData, table: str = "cpu", seed: int = 7) -> None:
        self.data = data
        self.table = table
        self.rng = random.Random(seed)

    def _window(self, secs: int) -> tuple[str, str]:
        """TSBS's RandWindow: a window of `secs` starting at a random instant (microseconds) within the data;
        the whole span when the data is shorter."""
        start_us, end_us = self.data.start * 1_000_000, self.data.end * 1_000_000
        length = min(secs, self.data.span_secs) * 1_000_000
        begin = start_us + self.rng.randrange(end_us - start_us - length + 1)
        return tsbs_time(begin), tsbs_time(begin + length)

    def _hosts(self, n: int) -> str:
        chosen = self.rng.sample(range(self.data.hosts), min(n, self.data.hosts))
        return "hostname IN (" + ",".join(f"'host_{h}'" for h in chosen) + ")"

    @staticmethod
    def _bucket(seconds: int) -> str:
        return f"time_bucket('{seconds} seconds', time)"

    @staticmethod
    def _aggs(agg: str, metrics: tuple[str, ...]) -> str:
        return ", ".join(f"{agg}({m}) as {agg}_{m}" for m in metrics)

    def single_groupby(self, metrics: int, hosts: int, hours: int) -> str:
        start, end = self._window(hours * HOUR)
        return f"""SELECT {self._bucket(60)} AS minute,
        {self._aggs("max", FIELDS[:metrics])}
        FROM {self.table}
        WHERE {self._hosts(hosts)} AND time >= '{start}' AND time < '{end}'
        GROUP BY minute ORDER BY minute ASC"""

    def max_all(self, hosts: int) -> str:
        start, end = self._window(MAX_ALL_SECS)
        return f"""SELECT {self._bucket(HOUR)} AS hour,
        {self._aggs("max", FIELDS)}
        FROM {self.table}
        WHERE {self._hosts(hosts)} AND time >= '{start}' AND time < '{end}'
        GROUP BY hour ORDER BY hour"""

    def double_groupby(self, metrics: int) -> str:
        start, end = self._window(DOUBLE_GROUPBY_SECS)
        selects = ", ".join(f"avg({m}) as mean_{m}" for m in FIELDS[:metrics])
        means = ", ".join(f"mean_{m}" for m in FIELDS[:metrics])
        return f"""
        WITH cpu_avg AS (
          SELECT {self._bucket(HOUR)} as hour, hostname,
          {selects}
          FROM {self.table}
          WHERE time >= '{start}' AND time < '{end}'
          GROUP BY 1, 2
        )
        SELECT hour, hostname, {means}
        FROM cpu_avg
        {""}
        ORDER BY hour, hostname"""

    def high_cpu(self, hosts: int) -> str:
        where = f"AND {self._hosts(hosts)}" if hosts else ""
        start, end = self._window(HIGH_CPU_SECS)
        return f"SELECT * FROM {self.table} WHERE usage_user > 90.0 and time >= '{start}' AND time < '{end}' {where}"

    def lastpoint(self) -> str:
        return f"SELECT DISTINCT ON (hostname) * FROM {self.table} ORDER BY hostname, time DESC"

    def groupby_orderby_limit(self) -> str:
        _, end = self._window(HOUR)
        return f"""SELECT {self._bucket(60)} AS minute, max(usage_user)
        FROM {self.table}
        WHERE time < '{end}'
        GROUP BY minute
        ORDER BY minute DESC
        LIMIT 5"""

    def make(self, kind: str) -> str:
        if kind.startswith("single-groupby-"):
            metrics, hosts, hours = (int(p) for p in kind.removeprefix("single-groupby-").split("-"))
            return self.single_groupby(metrics, hosts, hours)
        if kind.startswith("cpu-max-all-"):
            return self.max_all(int(kind.removeprefix("cpu-max-all-")))
        if kind.startswith("double-groupby-"):
            which = kind.removeprefix("double-groupby-")
            return self.double_groupby(len(FIELDS) if which == "all" else int(which))
        if kind.startswith("high-cpu-"):
            which = kind.removeprefix("high-cpu-")
            return self.high_cpu(0 if which == "all" else int(which))
        if kind == "lastpoint":
            return self.lastpoint()
        if kind == "groupby-orderby-limit":
            return self.groupby_orderby_limit()
        raise ValueError(f"unknown TSBS query type {kind!r}")


def queries(data: CpuData, table: str = "cpu", seed: int = 7) -> dict[str, str]:
    """One query of each of the 15 types, in TSBS's order."""
    maker = QueryMaker(data, table, seed)
    return {kind: maker.make(kind) for kind in QUERY_TYPES}


_SPACED_OFFSET = re.compile(r"(\d) ([+-]\d{4})'")


def duckdb_text(sql: str) -> str:
    """The query as DuckDB reads it: DuckDB takes the space-separated offset of TSBS's literals (`... +0000`) for
    a time zone name and fails ("Unknown TimeZone '+0000'"); written against the time it means the same."""
    return _SPACED_OFFSET.sub(r"\1\2'", sql)


def quoted(index_id: str) -> str:
    """The index as a table name: quoted unless it is a plain identifier."""
    return index_id if index_id.isidentifier() and index_id.islower() else f'"{index_id}"'


def answer(table: pa.Table, ordered: bool) -> tuple[list[str], list[tuple]]:
    """An answer in the form two engines' answers compare equal in: column names and rows, floats rounded (engines
    sum in different orders), timestamps as epoch seconds, rows sorted unless the query orders them all. Strata's
    `partition_id` is left out: a virtual column `*` reads from the metastore, not in the files DuckDB reads."""
    if "partition_id" in table.column_names:
        table = table.drop_columns(["partition_id"])

    def cell(value: Any) -> Any:
        if isinstance(value, float):
            return "NaN" if value != value else round(value, 9)
        if isinstance(value, datetime):
            return value.timestamp()
        return value

    rows = [tuple(cell(v) for v in row.values()) for row in table.to_pylist()]
    return table.column_names, rows if ordered else sorted(rows, key=repr)
