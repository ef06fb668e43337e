"""Cutting a batch: every row lands exactly once in the window of its timestamp (TW-1), late rows are dropped and
counted, null timestamps go to window 0, and every part is sorted (MC-3); several batches cut together (group
commit) give one part per window holding exactly their rows, each batch keeping its own counts."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.domain.ingest_batch import admit_rows, cut_admitted, cut_batch, timestamp_seconds
from strata_core.domain.sort_key import is_sorted
from strata_core.domain.sort_schema import SortSchema
from tests.helpers import examples

SCHEMA = pa.schema([("metric", pa.string()), ("ts", pa.int64()), ("v", pa.float64())])
SORT = SortSchema.parse("metric,-ts")
NOW = 1_000_000


@settings(max_examples=examples(150), deadline=None)
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


_ROW = st.tuples(st.one_of(st.none(), st.sampled_from("abc")), st.one_of(st.none(), st.integers(NOW - 5000, NOW + 100)),
                 st.floats(allow_nan=False, width=32))


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.lists(_ROW, max_size=30), min_size=1, max_size=5), st.sampled_from([60, 900]))
def test_batches_cut_together_are_one_sorted_part_per_window_and_keep_their_own_counts(batches, duration):
    tables = [pa.Table.from_pylist([{"metric": m, "ts": t, "v": v} for m, t, v in rows], schema=SCHEMA)
              for rows in batches]
    admitted = [admit_rows(table, "ts", duration, 600, NOW) for table in tables]
    parts = cut_admitted(admitted, SORT)

    for rows, batch in zip(batches, admitted, strict=True):
        kept = [t for _, t, _ in rows if t is None or t >= NOW - 600]
        assert (batch.rows_received, batch.rows_dropped_late, batch.rows_null_timestamp) == (
            len(rows), len(rows) - len(kept), sum(1 for t in kept if t is None))
        assert batch.rows_by_window() == dict(Counter(0 if t is None else t - t % duration for t in kept))
    starts = [p.window_start for p in parts]
    assert starts == sorted(set(starts)), "one part per window (TW-1)"
    written: Counter = Counter()
    for part in parts:
        assert is_sorted(part.table, SORT), "MC-3"
        written.update((r["metric"], r["ts"], r["v"]) for r in part.table.to_pylist())
    assert written == Counter(row for rows in batches for row in rows if row[1] is None or row[1] >= NOW - 600)
    assert {p.window_start: p.table.num_rows for p in parts} == dict(
        sum((Counter(b.rows_by_window()) for b in admitted), Counter()))


def test_microsecond_timestamps_floor_to_seconds():
    column = pa.array([-1, 0, 999_999, 1_000_000, None], pa.timestamp("us", tz="UTC"))
    assert timestamp_seconds(column).to_pylist() == [-1, 0, 0, 1, None]
