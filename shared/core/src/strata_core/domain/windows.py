"""Time windows (docs/architecture.md, "Time windows"): fixed, epoch-aligned, non-overlapping intervals.

TW-1 (one window per split) is established by `window_starts`, which the ingestion path uses to cut batches;
TW-2 (the duration divides one hour) by `validate_window_duration`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

VALID_WINDOW_DURATIONS_SECS: tuple[int, ...] = (60, 120, 180, 240, 300, 360, 600, 720, 900, 1200, 1800, 3600)
DEFAULT_WINDOW_DURATION_SECS = 900
# Rows whose timestamp is null go to this overflow window, compacted apart from every real window.
NULL_TIMESTAMP_WINDOW_START = 0


def validate_window_duration(duration_secs: int) -> None:
    """TW-2: raise ValueError unless the duration divides one hour (and is a whole number of minutes)."""
    if duration_secs not in VALID_WINDOW_DURATIONS_SECS:
        valid = ", ".join(str(d) for d in VALID_WINDOW_DURATIONS_SECS)
        raise ValueError(f"window duration {duration_secs}s does not divide one hour; valid values: {valid}")


def window_start(timestamp_secs: int, duration_secs: int) -> int:
    """The start of the window holding `timestamp_secs` (floor, so negative times work too)."""
    return timestamp_secs - (timestamp_secs % duration_secs)


def window_end(start_secs: int, duration_secs: int) -> int:
    return start_secs + duration_secs


def window_starts(timestamp_secs: pa.Array | pa.ChunkedArray, duration_secs: int) -> np.ndarray:
    """Window start for every row as int64; null timestamps map to the overflow window 0."""
    filled = pc.fill_null(timestamp_secs, 0)
    values = np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)
    starts = values - np.mod(values, duration_secs)
    if timestamp_secs.null_count:
        is_null = np.asarray(pc.is_null(timestamp_secs).to_numpy(zero_copy_only=False), dtype=bool)
        starts[is_null] = NULL_TIMESTAMP_WINDOW_START
    return starts


def is_window_closed(start_secs: int, duration_secs: int, late_data_acceptance_secs: int, now_secs: int) -> bool:
    """A window is closed once its end plus the late-data window has passed: no row can land in it any more.

    Arithmetic and one comparison only: given SQL column expressions for the start and the duration, the same
    function builds the condition the planner's repository selects newly closed windows with."""
    return window_end(start_secs, duration_secs) + late_data_acceptance_secs <= now_secs


def retention_cutoff(now_secs: int, period_secs: int) -> int:
    """Windows ending at or before this are expired."""
    return now_secs - period_secs


def window_expired(start_secs: int, duration_secs: int, cutoff: int) -> bool:
    """The one retention rule: a window goes when its end is at or before the cutoff (every row of it is older,
    TW-1); a window straddling the cutoff stays. Like `is_window_closed`, it also builds the SQL condition."""
    return window_end(start_secs, duration_secs) <= cutoff
