"""Statistics and row-group spans read from a Parquet footer (registration's check of files written elsewhere, and
every split Strata writes) against what the data says: min/max/null counts equal to `compute_column_stats` of the
same table, never narrower (a narrower range would let a query prune rows that exist), and spans that tile the
rows and lie inside the file."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.domain.column_stats import compute_column_stats
from strata_core.splitfile.footer import footer_stats_and_spans, read_footer, stats_columns
from strata_core.splitfile.writer import row_group_spans

EPOCH_2020 = 1_577_836_800_000_000


def _nullable(values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), values)


@st.composite
def tables(draw: st.DrawFn) -> tuple[pa.Table, int]:
    rows = draw(st.integers(1, 60))

    def column(values: st.SearchStrategy) -> list:
        return draw(st.lists(_nullable(values), min_size=rows, max_size=rows))

    table = pa.table({
        "count": pa.array(column(st.integers(-2**62, 2**62)), pa.int64()),
        "value": pa.array(column(st.floats(allow_nan=False, allow_infinity=False, width=64)), pa.float64()),
        "host": pa.array(column(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)),
                         pa.string()),
        "seen_at": pa.array(column(st.integers(EPOCH_2020, EPOCH_2020 + 10**14)), pa.timestamp("us", tz="UTC")),
        "seen_ms": pa.array(column(st.integers(1_500_000_000_000, 1_800_000_000_000)), pa.timestamp("ms")),
        "small": pa.array(column(st.integers(0, 2**31)), pa.uint32()),
        "flag": pa.array(column(st.booleans()), pa.bool_()),
        "payload": pa.array(column(st.binary(max_size=4)), pa.binary()),  # no ordered type: never in the stats
    })
    return table, draw(st.integers(1, rows))


def _footer(table: pa.Table, row_group_size: int, *, dictionary: bool) -> tuple[pq.FileMetaData, int]:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=row_group_size, use_dictionary=dictionary)
    data = sink.getvalue()
    return read_footer(pa.py_buffer(data)), len(data)


@settings(max_examples=80, deadline=None)
@given(tables(), st.booleans())
def test_footer_statistics_equal_the_datas(drawn: tuple[pa.Table, int], dictionary: bool) -> None:
    table, row_group_size = drawn
    footer, _ = _footer(table, row_group_size, dictionary=dictionary)
    stats, _ = footer_stats_and_spans(footer, stats_columns(footer, footer.schema.to_arrow_schema()))
    expected = compute_column_stats(table)
    assert set(stats) == set(expected) == {"count", "value", "host", "seen_at", "seen_ms", "small", "flag"}
    for name, got in stats.items():
        want = expected[name]
        assert (got.value_type, got.null_count) == (want.value_type, want.null_count), name
        assert (got.min_value, got.max_value) == (want.min_value, want.max_value), name


@settings(max_examples=50, deadline=None)
@given(tables(), st.booleans())
def test_row_group_spans_tile_the_rows_inside_the_file(drawn: tuple[pa.Table, int], dictionary: bool) -> None:
    table, row_group_size = drawn
    footer, size = _footer(table, row_group_size, dictionary=dictionary)
    spans = row_group_spans(footer)
    assert spans == footer_stats_and_spans(footer, ())[1]
    assert [s.num_rows for s in spans] == [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]
    assert [s.row_offset for s in spans] == [sum(s.num_rows for s in spans[:i]) for i in range(len(spans))]
    assert sum(s.num_rows for s in spans) == table.num_rows
    ends = [s.byte_offset + s.byte_length for s in spans]
    assert all(4 <= s.byte_offset < end <= size for s, end in zip(spans, ends, strict=True))
    assert all(end <= following.byte_offset for end, following in zip(ends, spans[1:], strict=False))
    # Each span holds its row group: reading only those bytes (and the footer) gives its rows back.
    data = io.BytesIO()
    pq.write_table(table, data, row_group_size=row_group_size, use_dictionary=dictionary)
    assert pq.ParquetFile(io.BytesIO(data.getvalue())).read_row_group(len(spans) - 1).num_rows == spans[-1].num_rows


def test_a_row_group_without_statistics_leaves_its_column_out() -> None:
    table = pa.table({"count": pa.array([3, 1, 2], pa.int64()), "host": ["b", "a", "c"]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=2, write_statistics=["host"])
    footer = read_footer(pa.py_buffer(sink.getvalue()))
    stats, spans = footer_stats_and_spans(footer, stats_columns(footer, footer.schema.to_arrow_schema()))
    assert set(stats) == {"host"}
    assert (stats["host"].min_value, stats["host"].max_value) == ("a", "c")
    assert [s.num_rows for s in spans] == [2, 1]


def test_an_all_null_row_group_says_nothing_about_min_and_max() -> None:
    stamps = [None, None, datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC)]
    table = pa.table({"seen_at": pa.array(stamps, pa.timestamp("us", tz="UTC"))})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=2)
    footer = read_footer(pa.py_buffer(sink.getvalue()))
    stats, _ = footer_stats_and_spans(footer, stats_columns(footer, footer.schema.to_arrow_schema()))
    assert stats["seen_at"].null_count == 2
    assert stats["seen_at"].min_value == int(stamps[2].timestamp()) * 10**6
    assert stats["seen_at"].max_value == int(stamps[3].timestamp()) * 10**6
