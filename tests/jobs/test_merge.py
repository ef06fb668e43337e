"""The sorted merge kernel (strata_jobs.merge): MC-1 same multiset of rows, MC-2 rows unchanged, MC-3 sorted
by the sort schema (null greater than every value, per-column direction, stable), MC-4 column union with nulls
where missing and a type conflict that writes nothing; output sizing, metadata, and verification that really
catches a
corrupted output. Pure pyarrow: no Spark."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ulid import ULID

from strata_core.domain.column_stats import compute_column_stats
from strata_core.domain.index_config import ParquetConfig
from strata_core.domain.sort_schema import SortSchema
from strata_core.domain.split import SplitState, read_kv_metadata
from strata_core.splitfile.writer import encode_split as real_encode_split
from strata_jobs import merge, merge_output, merge_verify, row_checksum
from strata_jobs.merge import (
    MergeInput,
    MergeSpec,
    MergeTypeConflict,
    MergeVerificationError,
    result_from_json,
    result_to_json,
    run_merge,
    spec_from_json,
    spec_to_json,
)
from strata_jobs.row_checksum import table_checksum
from tests.helpers import examples

WINDOW = 1_767_225_600


# -- helpers -------------------------------------------------------------------------------------------------


def reference_key(schema: SortSchema, names: list[str]):
    """The comparator of strata_core.domain.sort_schema, in Python: null greater than every value."""
    columns = [(names.index(c.name), c.descending) for c in schema.columns if c.name in names]

    def compare(left, right):
        for position, descending in columns:
            a, b = left[position], right[position]
            if a == b:
                continue
            if a is None:
                result = 1
            elif b is None:
                result = -1
            else:
                result = -1 if a < b else 1
            return -result if descending else result
        return 0

    return functools.cmp_to_key(compare)


def write_split(directory: Path, split_id: str, table: pa.Table, **options) -> MergeInput:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{split_id}.parquet"
    pq.write_table(table, path, store_schema=options.pop("store_schema", False), **options)
    return MergeInput(split_id, f"file://{path}")


def sorted_table(rows: list[dict], schema: pa.Schema, sort_schema: SortSchema) -> pa.Table:
    names = schema.names
    tuples = sorted((tuple(r.get(n) for n in names) for r in rows), key=reference_key(sort_schema, names))
    return pa.Table.from_pylist([dict(zip(names, t, strict=True)) for t in tuples], schema=schema)


def make_spec(inputs: list[MergeInput], out: Path, sort_schema: str, **overrides) -> MergeSpec:
    values = dict(
        job_id="job-1", fencing_token=7, inputs=inputs, sort_schema=sort_schema, timestamp_field="ts",
        timestamp_is_seconds=True, output_uri_prefix=f"file://{out}", target_split_num_rows=1_000_000,
        target_split_size_bytes=1 << 40, parquet=ParquetConfig(row_group_size=1024, zstd_level=1),
        index_uid="metrics:01", source_id="src", partition_id="tenant-a", doc_mapping_uid="dm1",
        window_start=WINDOW, window_duration_secs=900, num_merge_ops=2, generation=3,
        root_split_ids=[i.split_id for i in inputs],
    )
    values.update(overrides)
    return MergeSpec(**values)


def local_path(uri: str) -> str:
    return uri.removeprefix("file://")


def output_tables(result) -> list[pa.Table]:
    return [pq.read_table(local_path(o.uri)) for o in result.outputs]


def files_under(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.is_file()) if directory.exists() else []


def rows_of(tables: list[pa.Table], names: list[str]) -> list[tuple]:
    out = []
    for table in tables:
        for row in table.to_pylist():
            out.append(tuple(row.get(n) for n in names))
    return out


def assert_sorted(rows: list[tuple], schema: SortSchema, names: list[str]) -> None:
    key = reference_key(schema, names)
    for i in range(1, len(rows)):
        assert not key(rows[i]) < key(rows[i - 1]), f"rows {i - 1}, {i} out of order: {rows[i - 1]} {rows[i]}"


METRICS = pa.schema([("metric", pa.string()), ("host", pa.string()), ("ts", pa.int64()),
                     ("value", pa.float64())])


def metrics_rows(rng: np.random.Generator, n: int, metrics: str = "abc") -> list[dict]:
    return [{"metric": str(rng.choice(list(metrics))), "host": f"h{int(rng.integers(0, 20)):02d}",
             "ts": WINDOW + int(rng.integers(0, 900)), "value": float(rng.normal())} for _ in range(n)]


# -- property test: MC-1, MC-2, MC-3, MC-4 on random inputs --------------------------------------------------

POOL: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "s1": (pa.string(), st.sampled_from(["a", "b", "c", "", "é", "zz"])),
    "s2": (pa.string(), st.sampled_from(["x", "yy", "zzz"])),
    "i": (pa.int64(), st.one_of(st.integers(-3, 3), st.integers(-(2**62), 2**62))),
    "u": (pa.uint64(), st.one_of(st.integers(0, 3), st.integers(0, 2**64 - 1))),
    "f": (pa.float64(), st.floats(allow_nan=False, width=64)),
    "b": (pa.bool_(), st.booleans()),
    "ts": (pa.int64(), st.integers(WINDOW, WINDOW + 899)),
    "bin": (pa.binary(), st.binary(max_size=3)),
    "tags": (pa.list_(pa.string()), st.lists(st.one_of(st.none(), st.sampled_from(["p", "q"])), max_size=3)),
}
SORTABLE = [name for name in POOL if name != "tags"]


@st.composite
def merge_case(draw):
    sort_names = draw(st.lists(st.sampled_from(SORTABLE), min_size=1, max_size=4, unique=True))
    directions = draw(st.lists(st.booleans(), min_size=len(sort_names), max_size=len(sort_names)))
    sort_text = ",".join(("-" if d else "") + n for n, d in zip(sort_names, directions, strict=True))
    inputs = []
    for _ in range(draw(st.integers(1, 4))):
        # Schema evolution: each input has its own subset of the columns, sort columns included.
        present = draw(st.lists(st.sampled_from(list(POOL)), min_size=1, max_size=len(POOL), unique=True))
        row_strategy = st.fixed_dictionaries({n: st.one_of(st.none(), POOL[n][1]) for n in present})
        rows = draw(st.lists(row_strategy, max_size=25))
        inputs.append((present, rows))
    target_rows = draw(st.sampled_from([3, 7, 1_000_000]))
    return sort_text, inputs, target_rows


def _hashable(row: tuple) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=merge_case())
def test_mc1_mc2_mc3_mc4_property_random_inputs(tmp_path_factory, case):
    check_merge_case(tmp_path_factory.mktemp("prop"), case)


def check_merge_case(base: Path, case) -> None:
    sort_text, inputs, target_rows = case
    schema = SortSchema.parse(sort_text)
    merge_inputs = []
    union: list[str] = []
    expected: Counter = Counter()
    for number, (present, rows) in enumerate(inputs):
        arrow_schema = pa.schema([(n, POOL[n][0]) for n in present])
        table = sorted_table(rows, arrow_schema, schema)
        merge_inputs.append(write_split(base / "in", f"s{number}", table))
        union += [n for n in present if n not in union]
        expected.update(_hashable(tuple(r.get(n) for n in sorted(POOL))) for r in rows)

    result = run_merge(make_spec(merge_inputs, base / "out", sort_text, target_split_num_rows=target_rows))
    tables = output_tables(result)
    total = sum(len(rows) for _, rows in inputs)
    assert result.input_rows == result.output_rows == total
    assert all(t.num_rows <= target_rows for t in tables)
    for table in tables:  # MC-4: exactly the union, in first-appearance order
        assert table.column_names == union
    got = rows_of(tables, sorted(POOL))
    assert Counter(_hashable(r) for r in got) == expected  # MC-1 and MC-2
    assert_sorted(got, schema, sorted(POOL))  # MC-3, across output boundaries too


# -- MC-4 ----------------------------------------------------------------------------------------------------


def test_mc4_union_of_columns_in_first_appearance_order_with_nulls(tmp_path):
    a = pa.table({"metric": ["a", "b"], "ts": [WINDOW, WINDOW + 1], "value": [1.0, 2.0]})
    b = pa.table({"extra": [5, 6], "metric": ["a", "c"], "ts": [WINDOW + 2, WINDOW + 3],
                  "host": ["h1", "h2"]})
    inputs = [write_split(tmp_path / "in", "A", a), write_split(tmp_path / "in", "B", b)]
    result = run_merge(make_spec(inputs, tmp_path / "out", "metric,ts"))
    table = pq.read_table(local_path(result.outputs[0].uri))
    assert table.column_names == ["metric", "ts", "value", "extra", "host"]
    assert table.to_pylist() == [
        {"metric": "a", "ts": WINDOW, "value": 1.0, "extra": None, "host": None},
        {"metric": "a", "ts": WINDOW + 2, "value": None, "extra": 5, "host": "h1"},
        {"metric": "b", "ts": WINDOW + 1, "value": 2.0, "extra": None, "host": None},
        {"metric": "c", "ts": WINDOW + 3, "value": None, "extra": 6, "host": "h2"},
    ]
    stats = result.outputs[0].column_stats
    assert stats["extra"].null_count == 2 and stats["value"].null_count == 2


@pytest.mark.parametrize("direction", ["", "-"])
def test_mc4_sort_column_missing_from_an_input_sorts_as_null(tmp_path, direction):
    a = pa.table({"metric": ["a", "a"], "host": ["h1", "h2"], "ts": [WINDOW, WINDOW]})
    b = pa.table({"metric": ["a"], "ts": [WINDOW + 5]})
    inputs = [write_split(tmp_path / "in", "A", a), write_split(tmp_path / "in", "B", b)]
    result = run_merge(make_spec(inputs, tmp_path / "out", f"metric,{direction}host"))
    hosts = pq.read_table(local_path(result.outputs[0].uri)).column("host").to_pylist()
    # A null is greater than every value: last when ascending, first when descending.
    assert hosts == (["h1", "h2", None] if direction == "" else [None, "h2", "h1"])


def test_mc4_type_conflict_names_the_column_and_writes_nothing(tmp_path):
    a = pa.table({"metric": ["a"], "ts": [WINDOW], "value": [1.0]})
    b = pa.table({"metric": ["b"], "ts": [WINDOW], "value": ["oops"]})
    inputs = [write_split(tmp_path / "in", "A", a), write_split(tmp_path / "in", "B", b)]
    with pytest.raises(MergeTypeConflict) as caught:
        run_merge(make_spec(inputs, tmp_path / "out", "metric,ts"))
    assert str(caught.value) == "column 'value' is f64 in split A and string in split B"
    assert caught.value.column == "value"
    assert files_under(tmp_path / "out") == []
    assert files_under(tmp_path / "in") == ["A.parquet", "B.parquet"]  # inputs untouched


def test_mc4_dictionary_string_and_integer_widths_are_not_conflicts(tmp_path):
    # A file that stored its Arrow schema reads back dictionary-typed; an int32 column is an i64 field too.
    a = pa.table({"metric": pa.array(["a", "b"]).dictionary_encode(),
                  "ts": pa.array([WINDOW, WINDOW], pa.int32())})
    b = pa.table({"metric": ["a", "c"], "ts": [WINDOW + 1, WINDOW + 2]})
    inputs = [write_split(tmp_path / "in", "A", a, store_schema=True),
              write_split(tmp_path / "in", "B", b)]
    assert pa.types.is_dictionary(pq.read_schema(local_path(inputs[0].uri)).field("metric").type)
    result = run_merge(make_spec(inputs, tmp_path / "out", "metric,ts"))
    table = pq.read_table(local_path(result.outputs[0].uri))
    assert table.schema.field("metric").type == pa.string()
    assert table.schema.field("ts").type == pa.int64()
    assert table.column("metric").to_pylist() == ["a", "a", "b", "c"]
    assert table.column("ts").to_pylist() == [WINDOW, WINDOW + 1, WINDOW, WINDOW + 2]


# -- outputs: sizes, metadata --------------------------------------------------------------------------------


def test_outputs_respect_target_rows_and_stay_sorted_across_boundaries(tmp_path):
    rng = np.random.default_rng(1)
    schema = SortSchema.parse("metric,-host,ts")
    inputs = [write_split(tmp_path / "in", f"s{i}", sorted_table(metrics_rows(rng, 1000), METRICS, schema))
              for i in range(3)]
    result = run_merge(make_spec(inputs, tmp_path / "out", str(schema), target_split_num_rows=700))
    assert [o.num_rows for o in result.outputs] == [600] * 5
    tables = output_tables(result)
    assert [t.num_rows for t in tables] == [600] * 5
    assert_sorted(rows_of(tables, METRICS.names), schema, METRICS.names)
    assert len({o.split_id for o in result.outputs}) == 5


def test_outputs_respect_target_size_estimated_from_input_files(tmp_path):
    rng = np.random.default_rng(2)
    schema = SortSchema.parse("metric,host,ts")
    inputs = [write_split(tmp_path / "in", f"s{i}", sorted_table(metrics_rows(rng, 2000), METRICS, schema))
              for i in range(2)]
    input_bytes = sum(Path(local_path(i.uri)).stat().st_size for i in inputs)
    spec = make_spec(inputs, tmp_path / "out", str(schema), target_split_size_bytes=input_bytes // 3)
    result = run_merge(spec)
    assert len(result.outputs) == 4  # 4000 rows at bytes/row of the inputs: at most 1333 rows per output
    assert all(o.num_rows <= 1333 for o in result.outputs)
    assert sum(o.num_rows for o in result.outputs) == 4000


def test_split_metadata_and_kv_metadata_are_complete(tmp_path):
    rng = np.random.default_rng(3)
    schema = SortSchema.parse("metric,host,ts")
    inputs = [write_split(tmp_path / "in", f"s{i}", sorted_table(metrics_rows(rng, 3000), METRICS, schema))
              for i in range(2)]
    spec = make_spec(inputs, tmp_path / "out", " metric , host,ts ", target_split_num_rows=4000,
                     root_split_ids=["r1", "r2", "r3"])
    result = run_merge(spec)
    assert len(result.outputs) == 2
    for meta in result.outputs:
        ULID.from_str(meta.split_id)
        assert meta.uri == f"file://{tmp_path / 'out'}/{meta.split_id}.parquet"
        assert meta.state is SplitState.STAGED
        assert (meta.index_uid, meta.source_id, meta.partition_id, meta.doc_mapping_uid) == \
            ("metrics:01", "src", "tenant-a", "dm1")
        assert meta.sort_schema == "metric,host,ts@v1"
        assert (meta.window_start, meta.window_duration_secs) == (WINDOW, 900)
        assert (meta.num_merge_ops, meta.generation, meta.root_split_ids) == (2, 3, ["r1", "r2", "r3"])
        path = local_path(meta.uri)
        table = pq.read_table(path)
        assert meta.num_rows == table.num_rows == 3000
        assert meta.size_bytes == Path(path).stat().st_size
        assert (meta.time_range_start, meta.time_range_end) == (min(table.column("ts").to_pylist()),
                                                                max(table.column("ts").to_pylist()))
        footer = pq.read_metadata(path)
        assert len(meta.row_groups) == footer.num_row_groups == 3
        assert [rg.num_rows for rg in meta.row_groups] == [1024, 1024, 952]
        assert [rg.row_offset for rg in meta.row_groups] == [0, 1024, 2048]
        assert meta.column_stats == compute_column_stats(table, frozenset(schema.column_names))
        assert meta.column_stats["metric"].regex is not None and meta.column_stats["value"].regex is None
        assert read_kv_metadata(footer.metadata) == {k.removeprefix("strata."): v
                                                     for k, v in meta.kv_metadata().items()}
        # String columns were written from dictionaries; with store_schema=False they read back as plain
        # strings.
        assert b"ARROW:schema" not in (footer.metadata or {})
        assert pq.read_schema(path).field("metric").type == pa.string()
    assert files_under(tmp_path / "out") == sorted(f"{o.split_id}.parquet" for o in result.outputs)


def test_microsecond_timestamps_give_second_time_ranges(tmp_path):
    ts_type = pa.timestamp("us", tz="UTC")
    micros = WINDOW * 10**6
    a = pa.table({"metric": ["a", "b"], "ts": pa.array([micros + 1_500_000, micros + 899_999_999], ts_type)})
    b = pa.table({"metric": ["a", "c"], "ts": pa.array([None, WINDOW * 10**6], ts_type)})
    inputs = [write_split(tmp_path / "in", "A", a), write_split(tmp_path / "in", "B", b)]
    result = run_merge(make_spec(inputs, tmp_path / "out", "metric,ts", timestamp_is_seconds=False))
    meta = result.outputs[0]
    assert (meta.time_range_start, meta.time_range_end) == (WINDOW, WINDOW + 899)
    table = pq.read_table(local_path(meta.uri))
    assert table.schema.field("ts").type == ts_type
    assert table.column("metric").to_pylist() == ["a", "a", "b", "c"]
    assert table.column("ts").to_pylist()[1] is None


def test_all_null_timestamps_and_empty_inputs(tmp_path):
    a = pa.table({"metric": pa.array([], pa.string()), "ts": pa.array([], pa.int64())})
    b = pa.table({"metric": ["a"], "ts": pa.array([None], pa.int64())})
    inputs = [write_split(tmp_path / "in", "A", a), write_split(tmp_path / "in", "B", b)]
    result = run_merge(make_spec(inputs, tmp_path / "out", "metric,ts"))
    assert [(o.num_rows, o.time_range_start, o.time_range_end) for o in result.outputs] == [(1, None, None)]
    empty = run_merge(make_spec(inputs[:1], tmp_path / "out2", "metric,ts"))
    assert (empty.outputs, empty.input_rows, empty.output_rows) == ([], 0, 0)


def test_mc3_multi_word_keys_and_unsorted_inputs_still_order_exactly(tmp_path):
    # Seven wide integer sort columns (dense ranks of ~11 bits each) need two key words; B is not presorted.
    rng = np.random.default_rng(4)
    names = [f"k{i}" for i in range(8)]
    schema = SortSchema.parse(",".join(("-" if i % 2 else "") + n for i, n in enumerate(names)))
    columns = {n: rng.integers(-(2**60), 2**60, 1500) for n in names}
    columns["k0"] = rng.integers(0, 3, 1500)
    table = pa.table({**columns, "ts": np.full(1500, WINDOW)})
    a_rows = sorted_table(table.slice(0, 1000).to_pylist(), table.schema, schema)
    inputs = [write_split(tmp_path / "in", "A", a_rows), write_split(tmp_path / "in", "B", table.slice(1000))]
    result = run_merge(make_spec(inputs, tmp_path / "out", str(schema)))
    assert result.stats["key_words"] == 2
    got = rows_of(output_tables(result), table.column_names)
    expected = sorted(rows_of([a_rows, table.slice(1000)], table.column_names),
                      key=reference_key(schema, table.column_names))
    assert got == expected  # exactly the stable order


def test_long_runs_are_cut_by_slices_and_high_cardinality_strings_are_decoded(tmp_path):
    # A holds metric "b", B metric "a": the order is two long runs (all of B, then all of A), so fixed-width
    # and list columns are sliced; 6000 distinct hosts exceed 4x the row group, so that column is written as
    # plain strings.
    n = 3000

    def table(metric: str, first: int) -> pa.Table:
        return pa.table({
            "metric": [metric] * n, "host": [f"host-{first + i:05d}" for i in range(n)],
            "ts": pa.array(range(WINDOW, WINDOW + n), pa.int64()), "value": np.arange(n, dtype=np.float64),
            "tags": [["x", str(i % 3)] for i in range(n)],
        })
    a, b = table("b", n), table("a", 0)
    inputs = [write_split(tmp_path / "in", "A", a), write_split(tmp_path / "in", "B", b)]
    result = run_merge(make_spec(inputs, tmp_path / "out", "metric,host,ts"))
    assert result.stats["build_method"] == {"dict": "take", "num": "runs", "arrow": "runs"}
    assert result.stats["num_runs"] == 2
    written = pq.read_table(local_path(result.outputs[0].uri))
    assert written.to_pylist() == pa.concat_tables([b, a]).to_pylist()
    assert result.outputs[0].column_stats["host"].min_value == "host-00000"
    assert result.outputs[0].column_stats["host"].max_value == f"host-{2 * n - 1:05d}"


# -- verification catches corruption -------------------------------------------------------------------------


@pytest.fixture
def three_inputs(tmp_path):
    rng = np.random.default_rng(5)
    schema = SortSchema.parse("metric,host,ts")
    return [write_split(tmp_path / "in", f"s{i}",
                        sorted_table(metrics_rows(rng, 400, "abcdef"), METRICS, schema)) for i in range(3)]


def _corrupting_encoder(corrupt):
    def encode(table, metadata, settings):
        return real_encode_split(corrupt(table), metadata, settings)

    return encode


def _swap_rows(table: pa.Table) -> pa.Table:
    index = np.arange(table.num_rows)
    index[[0, table.num_rows - 1]] = index[[table.num_rows - 1, 0]]
    return table.take(pa.array(index))


def _alter_value(table: pa.Table) -> pa.Table:
    values = table.column("value").to_pylist()
    values[10] = values[10] + 1.0
    return table.set_column(table.column_names.index("value"), "value", pa.array(values, pa.float64()))


@pytest.mark.parametrize("corrupt, readback, invariant", [
    (lambda t: t.slice(1), False, "MC-1"),  # a dropped row: the written footer has one row less
    (_alter_value, True, "MC-2"),  # a changed value: the checksum of what was written differs
    (_swap_rows, True, "MC-3"),  # two rows swapped: same checksum, but no longer sorted
])
def test_mc1_mc2_mc3_verification_detects_a_corrupting_writer(tmp_path, three_inputs, monkeypatch, corrupt,
                                                               readback, invariant):
    monkeypatch.setattr(merge_output, "encode_split", _corrupting_encoder(corrupt))
    spec = make_spec(three_inputs, tmp_path / "out", "metric,host,ts", verify_readback=readback,
                     target_split_num_rows=500)
    with pytest.raises(MergeVerificationError, match=invariant):
        run_merge(spec)
    assert files_under(tmp_path / "out") == []  # every uploaded output (and temporary) deleted


def test_mc2_verification_detects_a_duplicated_row_in_memory(tmp_path, three_inputs, monkeypatch):
    real = merge._output_table

    def duplicate_first_row(*args, **kwargs):
        table = real(*args, **kwargs)
        index = np.arange(table.num_rows)
        index[1] = 0  # row 0 twice, row 1 lost: same count, still sorted, different rows
        return table.take(pa.array(index))

    monkeypatch.setattr(merge, "_output_table", duplicate_first_row)
    with pytest.raises(MergeVerificationError, match="MC-2"):
        run_merge(make_spec(three_inputs, tmp_path / "out", "metric,host,ts"))
    assert files_under(tmp_path / "out") == []


def test_mc3_verification_detects_a_wrong_order_in_memory(tmp_path, three_inputs, monkeypatch):
    real = merge.stable_order

    def broken(*args, **kwargs):
        order = real(*args, **kwargs).copy()
        order[[0, -1]] = order[[-1, 0]]
        return order

    monkeypatch.setattr(merge, "stable_order", broken)
    with pytest.raises(MergeVerificationError, match="MC-3"):
        run_merge(make_spec(three_inputs, tmp_path / "out", "metric,host,ts", target_split_num_rows=600))
    assert files_under(tmp_path / "out") == []


def test_mc2_mc3_verification_in_small_blocks(tmp_path, three_inputs, monkeypatch):
    # Outputs are checked in blocks; with 64-row blocks a correct merge passes, and two adjacent rows swapped
    # across a block boundary (rows 63 and 64: each block alone is still sorted) are caught.
    monkeypatch.setattr(merge_verify, "VERIFY_BLOCK_ROWS", 64)
    monkeypatch.setattr(row_checksum, "BLOCK_ROWS", 64)
    result = run_merge(make_spec(three_inputs, tmp_path / "good", "metric,host,ts", verify_readback=True))
    assert result.output_rows == 1200

    def swap_across_boundary(table: pa.Table) -> pa.Table:
        index = np.arange(table.num_rows)
        index[[63, 64]] = index[[64, 63]]
        return table.take(pa.array(index))

    keys = output_tables(result)[0].select(["metric", "host", "ts"]).to_pylist()
    ordered = [tuple(r.values()) for r in keys]
    assert ordered[63] != ordered[64]
    monkeypatch.setattr(merge_output, "encode_split", _corrupting_encoder(swap_across_boundary))
    with pytest.raises(MergeVerificationError, match="MC-3"):
        run_merge(make_spec(three_inputs, tmp_path / "bad", "metric,host,ts", verify_readback=True))
    assert files_under(tmp_path / "bad") == []


def test_failed_upload_leaves_no_file(tmp_path, three_inputs, monkeypatch):
    class FailingMove:
        """The local filesystem, except that the final rename fails (after the temporary was written)."""

        def __init__(self, fs):
            self.fs = fs

        def __getattr__(self, name):
            return getattr(self.fs, name)

        def move(self, src, dest):
            raise OSError("storage went away")

    real = merge_output.filesystem_for
    monkeypatch.setattr(merge_output, "filesystem_for", lambda uri: (FailingMove(real(uri)[0]), real(uri)[1]))
    with pytest.raises(OSError, match="storage went away"):
        run_merge(make_spec(three_inputs, tmp_path / "out", "metric,host,ts"))
    assert files_under(tmp_path / "out") == []


# -- the row checksum ----------------------------------------------------------------------------------------


def test_mc2_checksum_is_order_independent_but_binds_each_row():
    table = pa.table({"s": ["a", "b", None], "x": [1, 2, 3], "f": [0.5, None, 2.0]})
    base = table_checksum(table)
    assert table_checksum(table.take([2, 0, 1])) == base  # row order is irrelevant
    assert table_checksum(table.select(["f", "s", "x"])) == base  # column order too
    assert table_checksum(pa.table({"s": table.column("s").dictionary_encode(), "x": table.column("x"),
                                    "f": table.column("f")})) == base  # a dictionary hashes like its values
    swapped = table.set_column(1, "x", pa.array([2, 1, 3]))  # same column multiset, rows changed
    assert table_checksum(swapped) != base
    assert table_checksum(table.rename_columns(["s", "f", "x"])) != base  # values moved to another column
    nulls = table.append_column("missing", pa.nulls(3, pa.int64()))
    names = ["s", "x", "f", "missing"]
    assert table_checksum(nulls, names) == table_checksum(table, names)
    assert table_checksum(table.slice(0, 2)) != base


def test_spec_and_result_json_round_trip(tmp_path, three_inputs):
    spec = make_spec(three_inputs, tmp_path / "out", "metric,host,ts")
    text = spec_to_json(spec)
    assert spec_from_json(text) == spec
    json.loads(text)
    result = run_merge(spec)
    again = result_from_json(result_to_json(result))
    assert again == result
    assert result.stats["key_words"] == 1 and result.checksum < 2**64
    stages = {"footers", "order", "build", "encode", "upload", "verify", "total"}
    assert set(result.stats["timings"]) >= stages
    with pytest.raises(ValueError):
        spec_from_json(json.dumps({**json.loads(text), "surprise": 1}))


def test_merge_never_imports_pandas(tmp_path, three_inputs):
    # pa.array()/pa.scalar() import pandas on first use: ~1 s in every fresh Spark worker. The kernel avoids
    # them.
    spec = make_spec(three_inputs, tmp_path / "out", "metric,host,ts")
    code = ("import sys; from strata_jobs.merge import run_merge, spec_from_json; "
            f"run_merge(spec_from_json({spec_to_json(spec)!r})); print('pandas' in sys.modules)")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "False"


@pytest.mark.parametrize("inline_max_rows", [0, 1_000_000])
def test_small_merges_on_the_calling_thread_and_large_ones_on_threads_agree(tmp_path, monkeypatch,
                                                                              inline_max_rows):
    """MC-1..MC-3 whichever way the steps run: a merge at or under INLINE_MAX_ROWS runs every step on its calling
    thread, a larger one pipelines them on threads; forcing each way on the same inputs gives the same rows in
    the same order."""
    monkeypatch.setattr(merge, "INLINE_MAX_ROWS", inline_max_rows)
    rng = np.random.default_rng(11)
    schema = SortSchema.parse("metric,-host,ts@v1")
    inputs = [write_split(tmp_path / "in", f"s{i}", sorted_table(metrics_rows(rng, 300), METRICS, schema))
              for i in range(5)]
    result = run_merge(make_spec(inputs, tmp_path / "out", "metric,-host,ts@v1"))
    names = METRICS.names
    got = rows_of(output_tables(result), names)
    expected = rows_of([pq.read_table(local_path(i.uri)) for i in inputs], names)
    assert Counter(got) == Counter(expected)
    assert_sorted(got, schema, names)
    assert result.input_rows == result.output_rows == 1500
