"""Cutting a batch: every row lands exactly once in the window of its timestamp (TW-1), late rows are dropped and
counted, null timestamps go to window 0, and every part is sorted (MC-3)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_shared.domain.ingest_batch import cut_batch, timestamp_seconds
from strata_shared.domain.sort_schema import SortSchema, is_sorted

SCHEMA = pa.schema([("metric", pa.string()), ("ts", pa.int64()), ("v", pa.float64())])
SORT = SortSchema.parse("metric,-ts")
NOW = 1_000_000


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.sampled_from("abc")),
                          st.one_of(st.none(), st.integers(NOW - 5000, NOW + 100)),
                          st.floats(allow_nan=False, width=32)), max_size=80),
       st.sampled_from([60, 300, 900]), st.sampled_from([0, 600, 3600]))
def test_cut_preserves_rows_and_windows(rows, duration, late):
    table = pa.Table.from_pylist([{"metric": m, "ts": t, "v": v} for m, t, v in rows], schema=SCHEMA)
    batch = cut_batch(table, "ts", SORT, duration, late, NOW)

    cutoff = NOW - late
    expected_late = sum(1 for _, t, _ in rows if t is not None and t < cutoff)
    assert batch.rows_dropped_late == expected_late
    assert batch.rows_null_timestamp == sum(1 for _, t, _ in rows if t is None)

    kept = Counter((m, t, v) for m, t, v in rows if t is None or t >= cutoff)
    written: Counter = Counter()
    starts = [p.window_start for p in batch.parts]
    assert starts == sorted(set(starts)), "one part per window"
    for part in batch.parts:
        assert is_sorted(part.table, SORT)
        for row in part.table.to_pylist():
            written[(row["metric"], row["ts"], row["v"])] += 1
            expected_start = 0 if row["ts"] is None else row["ts"] - row["ts"] % duration
            assert expected_start == part.window_start
    assert written == kept


def test_microsecond_timestamps_floor_to_seconds():
    column = pa.array([-1, 0, 999_999, 1_000_000, None], pa.timestamp("us", tz="UTC"))
    assert timestamp_seconds(column).to_pylist() == [-1, 0, 0, 1, None]
