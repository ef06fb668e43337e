"""Sample metrics-like data, defined once for everything that needs some: `strata up --quickstart`,
`strata demo` and the tests (the benchmarks can take it too).

The rows look like a fleet's metrics with log lines: every service runs on its own slice of hosts, so files sorted
by service and host keep a host's rows together as production data would; values are skewed (a gamma
distribution, a long tail for range queries); and, with messages, two services log rare errors (the 8th's disks
fill up, the 13th's connections reset), which gives full-text search something local to find.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

METRICS_SORT_SCHEMA = "metric_name,service,host,timestamp_secs@v1"


def names(prefix: str, count: int, width: int) -> list[str]:
    return [f"{prefix}{i:0{width}d}" for i in range(count)]


METRICS = names("metric_", 50, 3)
SERVICES = names("service_", 20, 2)
HOSTS = names("host-", 500, 4)
ROUTINE_MESSAGES = ["request ok", "request ok", "request ok", "cache hit", "cache miss", "slow request"]
# (position of the service in the services list, message, share of that service's rows)
ERRORS = [(7, "ERROR disk full on /var/lib/data", 0.05), (12, "WARN connection reset by peer, retrying", 0.02)]


def metrics_index_config(index_id: str, *, messages: bool = False, extra_fields: Sequence[str] = (),
                         **settings: Any) -> dict[str, Any]:
    """An index of such rows: metric_name, service, host, the string columns `extra_fields`, message (with
    `messages`), timestamp_secs (i64 epoch seconds) and value (f64); sorted by metric, service, host and time;
    15-minute windows, compacted from the start of time, an hour of late data accepted. `settings` replace or
    add any index setting."""
    strings = ["metric_name", "service", "host", *extra_fields, *(["message"] if messages else [])]
    config: dict[str, Any] = {
        "index_id": index_id,
        "fields": [*({"name": name, "type": "string"} for name in strings),
                   {"name": "timestamp_secs", "type": "i64"}, {"name": "value", "type": "f64"}],
        "timestamp_field": "timestamp_secs",
        "sort_schema": METRICS_SORT_SCHEMA,
        "window_duration_secs": 900,
        "compaction_start_time": 0,
        "late_data_acceptance_secs": 3600,
    }
    config.update(settings)
    return config


def metrics_rows(num_rows: int, *, start: int, span_secs: int, seed: int = 0,
                 metrics: Sequence[str] = METRICS, services: Sequence[str] = SERVICES,
                 hosts: Sequence[str] = HOSTS, extra: Mapping[str, Sequence[str]] | None = None,
                 messages: bool = False, null_value_every: int = 0) -> pa.Table:
    """`num_rows` rows in random order with timestamps in [start, start + span_secs), the same for the same
    arguments. The columns of `metrics_index_config`; `extra` adds a string column per name drawn from its
    values; every `null_value_every`-th row has a null value (0: none)."""
    rng = np.random.default_rng(seed)
    service = rng.integers(0, len(services), num_rows)
    # Each service runs on its own slice of the hosts.
    slice_size = max(1, len(hosts) // len(services))
    host = (service * slice_size + rng.integers(0, slice_size, num_rows)) % len(hosts)
    columns: dict[str, pa.Array] = {
        "metric_name": pa.array(np.asarray(metrics)[rng.integers(0, len(metrics), num_rows)], pa.string()),
        "service": pa.array(np.asarray(services)[service], pa.string()),
        "host": pa.array(np.asarray(hosts)[host], pa.string()),
    }
    for name, values in (extra or {}).items():
        columns[name] = pa.array(np.asarray(values)[rng.integers(0, len(values), num_rows)], pa.string())
    if messages:
        text = np.asarray(ROUTINE_MESSAGES, dtype=object)[rng.integers(0, len(ROUTINE_MESSAGES), num_rows)]
        for position, message, share in ERRORS:
            text[(service == position) & (rng.random(num_rows) < share)] = message
        columns["message"] = pa.array(text, pa.string())
    columns["timestamp_secs"] = pa.array(rng.integers(start, start + span_secs, num_rows, dtype=np.int64))
    value = rng.gamma(2.0, 20.0, num_rows)
    mask = None if not null_value_every else np.arange(num_rows) % null_value_every == 0
    columns["value"] = pa.array(value, pa.float64(), mask=mask)
    return pa.table(columns)
