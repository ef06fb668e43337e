"""NDJSON and JSON-document results: the column-wise encoder (json_encoding) gives the same bytes, in the same
chunks, as the per-row encoder it replaced (kept below as the reference), for every type and value shape."""

from __future__ import annotations

import decimal
import json
import math
import string

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.per_row_json import reference_json, reference_ndjson
from strata_query.execution import formats
from strata_query.execution.formats import BATCH_ROWS, json_stream, ndjson_stream
from strata_query.execution.json_encoding import _plain, column_texts, encode_rows
from strata_query.execution.result_stream import ResultStream
from tests.helpers import examples


def _stream(schema: pa.Schema, batches: list[pa.RecordBatch], row_cap: int | None = None) -> ResultStream:
    return ResultStream(schema, iter(batches), lambda: None, row_cap)


def _outputs(schema, batches, row_cap=None):
    """(reference chunks, new chunks) for NDJSON and for the JSON document; an exception counts as an output."""
    summary = lambda: {"rows": 1, "truncated": False}  # noqa: E731

    def run(fn, *args):
        chunks = []
        try:
            for chunk in fn(_stream(schema, batches, row_cap), *args):
                chunks.append(chunk)
        except Exception as error:  # noqa: BLE001 - both encoders must fail alike
            chunks.append(type(error))
        return chunks

    return ((run(reference_ndjson), run(ndjson_stream)),
            (run(reference_json, "q1", summary), run(json_stream, "q1", summary)))


def assert_same(schema, batches, row_cap=None):
    (old_nd, new_nd), (old_doc, new_doc) = _outputs(schema, batches, row_cap)
    assert new_nd == old_nd
    assert new_doc == old_doc


# ---- values ----

_INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]
_TS_ZONES = [None, "UTC", "Etc/UTC", "+00:00", "Europe/Paris", "+05:30"]

_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-4, 1e-5, 1e-6, 1e-7, 9.99e-5, 1e10, 1e15, 9.999999e15, 1e16, 1e17,
                     1e22, 1e300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, math.nan, math.inf,
                     -math.inf, 0.1, 123456789012345.6, 1234567890.5, 58.123456789012344]),
    st.builds(lambda m, e: m * 10.0 ** e, st.floats(-10, 10, allow_nan=False), st.integers(-12, 18)),
)
_texts = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(list('ab"\\\n\r\t\b\f\x00\x01\x1f\x7f é€😀\U0010ffff/'))),
    st.text(alphabet=string.printable),
)


def _timestamp_values(unit: str):
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    if unit == "ns":
        low, high = -(2**63) + 1, 2**63 - 1
    else:
        low, high = -62135596800 * per_second, (253402300800 * per_second) - 1
    return st.one_of(st.integers(low, high), st.sampled_from([0, 1, -1, per_second, 1_500 * per_second // 1_000]),
                     st.integers(-10**6, 10**6).map(lambda n: n * per_second))


@st.composite
def _column(draw, length: int):
    kind = draw(st.sampled_from(["int", "float", "float32", "bool", "string", "large_string", "string_view",
                                 "timestamp", "date32", "date64", "decimal", "null", "dictionary", "list",
                                 "struct", "binary", "duration", "time"]))
    nulls = draw(st.sampled_from([0.0, 0.0, 0.3, 1.0]))

    def values(strategy):
        return [None if draw(st.floats(0, 1)) < nulls else draw(strategy) for _ in range(length)]

    if kind == "int":
        t = draw(st.sampled_from(_INT_TYPES))
        bits, signed = t.bit_width, pa.types.is_signed_integer(t)
        low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
        return pa.array(values(st.integers(low, high)), t)
    if kind in ("float", "float32"):
        array = pa.array(values(_floats), pa.float64())
        return array.cast(pa.float32()) if kind == "float32" else array
    if kind == "bool":
        return pa.array(values(st.booleans()), pa.bool_())
    if kind in ("string", "large_string", "string_view"):
        return pa.array(values(_texts), pa.string()).cast(getattr(pa, kind)())
    if kind == "timestamp":
        unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
        zone = draw(st.sampled_from(_TS_ZONES))
        return pa.array(values(_timestamp_values(unit)), pa.int64()).cast(pa.timestamp(unit, zone))
    if kind == "date32":
        return pa.array(values(st.integers(-719162, 2932896)), pa.int32()).cast(pa.date32())
    if kind == "date64":
        days = st.integers(-719162, 2932896).map(lambda d: d * 86_400_000)
        return pa.array(values(days), pa.int64()).cast(pa.date64())
    if kind == "decimal":
        precision = draw(st.integers(1, 38))
        scale = draw(st.integers(0, precision))
        t = pa.decimal128(precision, scale)
        digits = st.integers(-(10**precision - 1), 10**precision - 1)
        return pa.array(values(digits.map(lambda n: decimal.Decimal(n).scaleb(-scale, decimal.Context(prec=80)))), t)
    if kind == "null":
        return pa.nulls(length)
    if kind == "dictionary":
        return pa.array(values(st.sampled_from(["a", "b\"", "é", "x\ny"])), pa.string()).dictionary_encode()
    if kind == "list":
        return pa.array(values(st.lists(st.one_of(st.none(), _floats), max_size=3)), pa.list_(pa.float64()))
    if kind == "struct":
        return pa.array(values(st.fixed_dictionaries({"a": st.integers(0, 9), "b": _texts})),
                        pa.struct([("a", pa.int64()), ("b", pa.string())]))
    if kind == "binary":
        return pa.array(values(st.binary(max_size=4)), pa.binary())
    if kind == "duration":
        return pa.array(values(st.integers(-10**6, 10**6)), pa.duration("us"))
    return pa.array(values(st.integers(0, 86_399_999_999)), pa.time64("us"))


_names = st.one_of(st.sampled_from(["time", "hostname", "usage_user", "a", "a"]), st.text(max_size=5))


@st.composite
def _table(draw):
    length = draw(st.integers(0, 40))
    width = draw(st.integers(0, 5))
    names = [draw(_names) for _ in range(width)]  # repeated names too: a dict keeps the first place, last value
    columns = [draw(_column(length)) for _ in range(width)]
    if width == 0:
        table = pa.table({"x": pa.nulls(length)}).drop_columns(["x"])
    else:
        table = pa.Table.from_arrays(columns, names=names)
    # Sliced and chunked: the batches are slices of a table made of several chunks.
    cut = draw(st.integers(0, length))
    table = pa.concat_tables([table.slice(0, cut), table.slice(cut)]) if width else table
    start = draw(st.integers(0, length))
    table = table.slice(start, draw(st.integers(0, length - start)))
    return table


def _batches(table: pa.Table) -> list[pa.RecordBatch]:
    return [b for b in table.to_batches() if b.num_rows] or ([table.to_batches()[0]] if table.to_batches() else [])


@settings(max_examples=examples(400), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_table())
def test_the_column_wise_encoder_writes_the_bytes_of_the_per_row_one(table):
    assert_same(table.schema, _batches(table))


@settings(max_examples=examples(150), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_column(30))
def test_each_column_encodes_as_json_dumps_of_its_plain_values(column):
    assert_column(column)


def assert_column(column: pa.Array) -> None:
    try:
        expected = [json.dumps(_plain(v), separators=(",", ":")) for v in column.to_pylist()]
    except Exception as error:  # noqa: BLE001
        with pytest.raises(type(error)):
            column_texts(column)
        return
    assert column_texts(column).to_pylist() == expected, column.type


def test_floats_in_every_layout_match_python_repr():
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**64, size=200_000, dtype=np.uint64).view(np.float64)
    scaled = rng.standard_normal(200_000) * 10.0 ** rng.integers(-12, 20, size=200_000)
    for values in (bits, scaled, np.round(scaled), np.float32(scaled).astype(np.float64)):
        assert_column(pa.array(values))
    assert_column(pa.array(scaled).cast(pa.float32()))


def test_timestamps_of_every_unit_and_zone():
    seconds = [0, 1, -1, 1_700_000_000, -62135596800, 253402300799, 951782400]
    for unit, per_second in (("s", 1), ("ms", 1_000), ("us", 1_000_000), ("ns", 1_000_000_000)):
        for tz in _TS_ZONES:
            raw = [s * per_second + frac for s in seconds for frac in (0, 1, per_second // 2, per_second - 1)]
            if unit == "ns":
                raw = [v for v in raw if -(2**63) < v < 2**63]
            array = pa.array(raw, pa.int64()).cast(pa.timestamp(unit, tz))
            assert_column(array)
            assert_column(array.slice(0, 4 * 4))  # before the year 9999's last second (local time in Paris)


def test_a_timestamp_past_the_year_9999_fails_as_before():
    array = pa.array([253402300800_000000], pa.timestamp("us", "UTC"))
    assert_same(pa.schema([("t", array.type)]), [pa.record_batch([array], names=["t"])])
    assert _outputs(pa.schema([("t", array.type)]), [pa.record_batch([array], names=["t"])])[0][1][-1] is OverflowError


def test_chunks_split_where_they_did_on_a_large_result_and_the_cut_line_follows():
    rows = 3 * BATCH_ROWS + 17
    table = pa.table({
        "time": pa.array(np.arange(rows, dtype=np.int64) * 10_000_000, pa.timestamp("us", "UTC")),
        "hostname": pa.array([f"host_{i % 100}" for i in range(rows)]),
        "usage_user": pa.array(np.random.default_rng(1).random(rows) * 100),
    })
    # Batches of odd sizes: chunks of BATCH_ROWS lines and of CHUNK_BYTES bytes span batches.
    batches = [b for chunk in (table.slice(0, 5000), table.slice(5000, 12_000), table.slice(17_000))
               for b in chunk.to_batches()]
    assert_same(table.schema, batches)
    assert_same(table.schema, batches, row_cap=rows - 100)
    (old_nd, _), (old_doc, _) = _outputs(table.schema, batches, row_cap=rows - 100)
    assert len(old_nd) == 4 and len(old_doc) > 10  # 2 full chunks, 8,109 lines, the cut line


def test_duplicate_names_keep_the_first_place_and_the_last_value():
    batch = pa.record_batch([pa.array([1, 2]), pa.array(["x", "y"]), pa.array([3.5, None])], names=["a", "b", "a"])
    assert encode_rows(batch, suffix="\n").to_pylist() == ['{"a":3.5,"b":"x"}\n', '{"a":null,"b":"y"}\n']
    assert_same(batch.schema, [batch])


def test_empty_results_and_a_result_without_rows():
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    assert_same(schema, [])
    assert_same(schema, [pa.record_batch([pa.array([], pa.int64()), pa.array([], pa.string())], schema=schema)])


def test_the_serializer_still_offers_arrow_unchanged():
    batch = pa.record_batch([pa.array([1, 2])], names=["a"])
    body = b"".join(formats.serialize(_stream(batch.schema, [batch]), formats.ARROW, "q", dict))
    assert pa.ipc.open_stream(body).read_all().to_pylist() == [{"a": 1}, {"a": 2}]


def test_the_common_types_need_no_python(monkeypatch):
    """Only the values Arrow cannot write as Python does go through Python's json: none in ordinary columns."""
    from strata_query.execution import json_encoding

    picked = []
    monkeypatch.setattr(json_encoding, "_dumps", lambda v: picked.append(v) or json.dumps(_plain(v)))
    rng = np.random.default_rng(3)
    batch = pa.record_batch({
        "time": pa.array(rng.integers(0, 2**50, 500), pa.timestamp("us", "UTC")),
        "ms": pa.array(rng.integers(0, 2**40, 500), pa.timestamp("ms")),
        "day": pa.array(rng.integers(0, 30_000, 500).astype(np.int32), pa.int32()).cast(pa.date32()),
        "host": pa.array([None if i % 7 == 0 else f'host "{i}"\t\\' for i in range(500)]),
        "tag": pa.array([f"t{i % 3}" for i in range(500)]).dictionary_encode(),
        "value": pa.array(rng.standard_normal(500) * 1e6, mask=rng.random(500) < 0.1),
        "whole": pa.array(np.round(rng.standard_normal(500) * 1e3)).cast(pa.float32()),
        "n": pa.array(rng.integers(-(2**63), 2**63 - 1, 500)),
        "ok": pa.array(rng.random(500) < 0.5),
        "price": pa.array([decimal.Decimal(i).scaleb(-2) for i in range(500)], pa.decimal128(9, 2)),
        "none": pa.nulls(500),
    })
    assert_same(batch.schema, [batch])
    picked.clear()
    encode_rows(batch)
    assert picked == []
    encode_rows(pa.record_batch({"s": pa.array(["plain", "caf\u00e9", "a\x02"])}))
    assert picked == ["caf\u00e9", "a\x02"]


def test_non_ascii_text_keeps_python_escapes():
    batch = pa.record_batch([pa.array(["é", "😀", "a\x01b", 'q"\\', None])], names=["ü"])
    lines = b"".join(ndjson_stream(_stream(batch.schema, [batch]))).decode("ascii").splitlines()
    assert lines[0] == '{"\\u00fc":"\\u00e9"}' and lines[1] == '{"\\u00fc":"\\ud83d\\ude00"}'
    assert lines[2] == '{"\\u00fc":"a\\u0001b"}' and [json.loads(x)["ü"] for x in lines] == [
        "é", "😀", "a\x01b", 'q"\\', None]
