"""Small helpers shared by the benchmarks: timing statistics, formatting, machine facts, the metrics-index
config."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
from datetime import UTC, datetime
from typing import Any


def median(values: list[float]) -> float:
    return statistics.median(values)


def fmt_s(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def metrics_index_config(index_id: str, **overrides: Any) -> dict[str, Any]:
    """The metrics-like index of the benchmarks (same shape as tests/helpers.py `metrics_index`)."""
    config: dict[str, Any] = {
        "index_id": index_id,
        "fields": [
            {"name": "metric_name", "type": "string"},
            {"name": "service", "type": "string"},
            {"name": "host", "type": "string"},
            {"name": "timestamp_secs", "type": "i64"},
            {"name": "value", "type": "f64"},
        ],
        "timestamp_field": "timestamp_secs",
        "sort_schema": "metric_name,service,host,timestamp_secs@v1",
        "window_duration_secs": 900,
        "compaction_start_time": 0,
        "late_data_acceptance_secs": 3600,
    }
    config.update(overrides)
    return config


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total() -> str:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return fmt_bytes(int(line.split()[1]) * 1024)
    except OSError:
        pass
    return "unknown"


def _nproc() -> str:
    try:
        return subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return str(os.cpu_count())


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def machine_facts() -> dict[str, str]:
    import fastapi
    import numpy
    import pyarrow
    import sqlalchemy
    import uvicorn

    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": _nproc(),
        "memory": _mem_total(),
        "cpu": _cpu_model(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "pyarrow": pyarrow.__version__,
        "numpy": numpy.__version__,
        "fastapi": fastapi.__version__,
        "uvicorn": uvicorn.__version__,
        "sqlalchemy": sqlalchemy.__version__,
        "load_average_at_start": _load(),
    }
