"""Runs of a merge's order: stretches of consecutive source rows (of the concatenated inputs), which output
columns may be cut from as zero-copy slices instead of gathered (strata_jobs.merge, RUNS_MIN_MEAN_LENGTH)."""

from __future__ import annotations

import numpy as np


def count_runs(order: np.ndarray, block: int = 1 << 20) -> int:
    """How many runs of consecutive source rows the order has (blockwise: no order-sized temporaries)."""
    if len(order) == 0:
        return 0
    breaks = 0
    for start in range(0, len(order) - 1, block):
        part = order[start:start + block + 1]
        breaks += int(np.count_nonzero(np.diff(part) != 1))
    return breaks + 1


def run_heads(order: np.ndarray) -> np.ndarray:
    """Positions in `order` where a run of consecutive source rows (of the concatenated inputs) starts."""
    if len(order) == 0:
        return np.zeros(0, dtype=np.int64)
    breaks = np.flatnonzero(np.diff(order) != 1) + 1
    return np.concatenate([[0], breaks]).astype(np.int64)
