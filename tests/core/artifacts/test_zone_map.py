"""Zone maps equal min/max/null count recomputed with pyarrow.compute, whether or not the file has statistics."""

from __future__ import annotations

import io
import math

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata_core.artifacts import ArtifactType, ColumnZone, ZoneMap, decode_artifact, encode_artifact
from strata_core.artifacts.zone_map import ZoneMapBuilder, zone_from_statistics
from strata_core.domain.fields import FieldType
from tests.helpers import examples

TYPES = {
    "s": FieldType.STRING,
    "i": FieldType.I64,
    "u": FieldType.U64,
    "f": FieldType.F64,
    "b": FieldType.BOOL,
    "t": FieldType.TIMESTAMP,
}


def expected_zone(column: pa.ChunkedArray, field_type: FieldType) -> ColumnZone:
    """The zone recomputed from scratch: pyarrow.compute over the row group's values."""
    nulls = column.null_count
    nans = 0
    if field_type is FieldType.F64:
        nans = int(pc.sum(pc.is_nan(column)).as_py() or 0)
        column = column.filter(pc.invert(pc.is_nan(column)))
    if pa.types.is_timestamp(column.type):
        scale = {"s": 1_000_000, "ms": 1_000, "us": 1}[column.type.unit]
        column = pc.multiply(column.cast(pa.int64()), scale)
    result = pc.min_max(column)
    return ColumnZone(result["min"].as_py(), result["max"].as_py(), nulls, nans)


def write(table: pa.Table, *, statistics: bool = True, row_group_size: int = 4, **options) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=row_group_size, write_statistics=statistics, **options)
    return sink.getvalue()


def zone_map_of(data: bytes, types: dict[str, FieldType], **read_options) -> ZoneMap:
    parquet = pq.ParquetFile(io.BytesIO(data), **read_options)
    builder = ZoneMapBuilder(parquet.metadata, types)
    for group in range(parquet.num_row_groups):
        needed = builder.columns_to_read(group)
        table = parquet.read_row_group(group, columns=needed) if needed else pa.table({})
        builder.add_row_group(group, {name: table.column(name) for name in table.column_names})
    return builder.finish()


def assert_matches(data: bytes, table: pa.Table, types: dict[str, FieldType], row_group_size: int, **read) -> None:
    zone_map = zone_map_of(data, types, **read)
    groups = math.ceil(table.num_rows / row_group_size)
    assert len(zone_map.row_groups) == groups
    for index, group in enumerate(zone_map.row_groups):
        part = table.slice(index * row_group_size, row_group_size)
        assert group.num_rows == part.num_rows
        for name, field_type in types.items():
            assert group.columns[name] == expected_zone(part.column(name), field_type), (index, name)
            zone = group.columns[name]
            if zone.min is not None:
                assert type(zone.min) is type(zone.max) is {FieldType.STRING: str, FieldType.F64: float,
                                                             FieldType.BOOL: bool}.get(field_type, int)
    assert ZoneMap.from_payload(zone_map.to_payload()) == zone_map


TABLE = pa.table(
    {
        "s": ["b", "a", None, "zz", None, None, None, None, "x" * 5000, "é", "ä", "z"],
        "i": [5, -(1 << 63), None, 7, None, None, None, None, 0, 1, 2, 3],
        "u": pa.array([1, (1 << 64) - 1, None, 3, None, None, None, None, 0, 0, 1, 2], pa.uint64()),
        "f": [1.5, math.nan, None, -0.0, None, None, None, None, math.nan, math.nan, math.inf, -math.inf],
        "b": [True, False, None, True, None, None, None, None, False, False, None, False],
        "t": pa.array([10, -5, None, 1_700_000_000_000_000, None, None, None, None, 0, 1, 2, 3], pa.int64()).cast(
            pa.timestamp("us", tz="UTC")
        ),
    }
)


@pytest.mark.parametrize("statistics", [True, False])
@pytest.mark.parametrize("dictionary", [False, True])
def test_row_groups_with_values_all_nulls_nans_and_long_strings(statistics: bool, dictionary: bool) -> None:
    data = write(TABLE, statistics=statistics)
    read = {"read_dictionary": ["s"]} if dictionary else {}
    assert_matches(data, TABLE, TYPES, 4, **read)
    group = zone_map_of(data, TYPES).row_groups[1]
    assert group.columns["s"] == ColumnZone(None, None, 4, 0)  # all null
    assert zone_map_of(data, TYPES).row_groups[2].columns["f"] == ColumnZone(-math.inf, math.inf, 0, 2)


def test_other_timestamp_units_round_outwards_to_microseconds() -> None:
    nanos = pa.array([1_500, 2_500, -1_500, None], pa.timestamp("ns", tz="UTC"))
    for statistics in (True, False):
        data = write(pa.table({"t": nanos}), statistics=statistics, row_group_size=10)
        zone = zone_map_of(data, {"t": FieldType.TIMESTAMP}).row_groups[0].columns["t"]
        assert zone == ColumnZone(-2, 3, 1, 0)
    millis = pa.table({"t": pa.array([7, None, -3], pa.timestamp("ms", tz="UTC"))})
    for statistics in (True, False):
        zone = zone_map_of(write(millis, statistics=statistics, row_group_size=10), {"t": FieldType.TIMESTAMP})
        assert zone.row_groups[0].columns["t"] == ColumnZone(-3_000, 7_000, 1, 0)


def test_string_statistics_of_other_writers_are_not_trusted() -> None:
    """Writers other than Arrow C++ may truncate string min/max; those columns are read."""
    data = write(pa.table({"s": ["b", "a"], "i": [1, 2]}), row_group_size=10)
    footer = pq.ParquetFile(io.BytesIO(data)).metadata
    assert footer.created_by.startswith("parquet-cpp")
    assert ZoneMapBuilder(footer, {"s": FieldType.STRING, "i": FieldType.I64}).columns_to_read(0) == []
    strings, numbers = (footer.row_group(0).column(i).statistics for i in range(2))
    trusted = zone_from_statistics(strings, 2, FieldType.STRING, writer_drops_long_statistics=True)
    assert trusted == ColumnZone("a", "b", 0)
    assert zone_from_statistics(strings, 2, FieldType.STRING, writer_drops_long_statistics=False) is None
    numbers_zone = zone_from_statistics(numbers, 2, FieldType.I64, writer_drops_long_statistics=False)
    assert numbers_zone == ColumnZone(1, 2, 0)


def test_floats_are_always_read_for_their_nan_count() -> None:
    data = write(pa.table({"f": [1.0, 2.0]}), row_group_size=10)
    builder = ZoneMapBuilder(pq.ParquetFile(io.BytesIO(data)).metadata, {"f": FieldType.F64})
    assert builder.columns_to_read(0) == ["f"]


def test_lists_have_no_zone_map() -> None:
    data = write(pa.table({"l": [["a"]]}), row_group_size=10)
    with pytest.raises(ValueError, match="min/max of a list"):
        ZoneMapBuilder(pq.ParquetFile(io.BytesIO(data)).metadata, {"l": FieldType.STRING_LIST})


COLUMN_VALUES = {
    FieldType.STRING: st.text(max_size=8),
    FieldType.I64: st.integers(-(1 << 63), (1 << 63) - 1),
    FieldType.U64: st.integers(0, (1 << 64) - 1),
    FieldType.F64: st.floats(allow_nan=True),
    FieldType.BOOL: st.booleans(),
    FieldType.TIMESTAMP: st.integers(-(10**15), 10**15),
}


@settings(max_examples=examples(60), deadline=None)
@given(
    st.sampled_from(list(COLUMN_VALUES)).flatmap(
        lambda t: st.tuples(st.just(t), st.lists(COLUMN_VALUES[t] | st.none(), min_size=1, max_size=30))
    ),
    st.integers(1, 8),
    st.booleans(),
)
def test_property_any_column(case, row_group_size: int, statistics: bool) -> None:
    field_type, values = case
    if field_type is FieldType.TIMESTAMP:
        column = pa.array(values, pa.int64()).cast(field_type.arrow_type)
    else:
        column = pa.array(values, field_type.arrow_type)
    table = pa.table({"c": column})
    data = write(table, statistics=statistics, row_group_size=row_group_size)
    assert_matches(data, table, {"c": field_type}, row_group_size)


def test_envelope_round_trip() -> None:
    zone_map = zone_map_of(write(TABLE), TYPES)
    _, payload = decode_artifact(encode_artifact("s", ArtifactType.ZONE_MAP, "", zone_map.to_payload()))
    loaded = ZoneMap.from_payload(payload)
    assert loaded == zone_map
    assert loaded.column_types == TYPES
