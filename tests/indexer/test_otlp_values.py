"""The OTLP decoder reads attributes from their encoded bytes (raw.py, values.py) rather than through the protobuf
runtime: for any attributes, its JSON must be exactly what the runtime's own reading gives, serialized by
json.dumps; and attribute bytes that do not decode are a 400, never a wrong value."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from strata_core.errors import BadRequest
from strata_indexer.otlp import raw, values
from tests.helpers import examples

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_RAW_LOG_RECORD = type(raw.LogsRequest().resource_logs.add().scope_logs.add().log_records.add())


def _plain(value: AnyValue) -> object:
    """The reading the decoder must match, through the runtime's own message classes."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_plain(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _plain(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind) if kind else None


_scalars = st.one_of(
    st.builds(lambda s: AnyValue(string_value=s), st.text(max_size=300)),
    st.builds(lambda i: AnyValue(int_value=i), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda d: AnyValue(double_value=d), st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(lambda b: AnyValue(bool_value=b), st.booleans()),
    st.builds(lambda b: AnyValue(bytes_value=b), st.binary(max_size=40)),
    st.just(AnyValue()),
)
_any_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.builds(lambda vs: AnyValue(array_value=ArrayValue(values=vs)), st.lists(inner, max_size=3)),
    st.builds(lambda kvs: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs])),
              st.dictionaries(st.text(max_size=8), inner, max_size=3).map(lambda d: list(d.items()))),
), max_leaves=6)
_attributes = st.dictionaries(st.text(max_size=200), _any_values, max_size=8)


@settings(max_examples=examples(300), deadline=None)
@given(_attributes)
def test_attribute_json_from_bytes_equals_the_runtimes_reading(attributes):
    record = LogRecord(attributes=[KeyValue(key=k, value=v) for k, v in attributes.items()])
    expected = _dumps({k: _plain(v) for k, v in attributes.items()}) if attributes else None
    decoded = _RAW_LOG_RECORD.FromString(record.SerializeToString())
    # Twice: the second reading comes from the cache of small attributes.
    assert values.attributes_json(decoded.attributes) == expected
    assert values.attributes_json(decoded.attributes) == expected


@pytest.mark.parametrize("encoded", [
    b"\x0a\x02k",                    # a key cut short
    b"\x0a\x01k\x12\x03\x0a\x01",    # a value cut short
    b"\x0a\x01k\x12\x02\x0a\x01",    # a string value cut short inside the value
    b"\x0a\x01k\x12\x03\x0a\x01\xff",  # a string value that is not UTF-8
    b"\x0a\x01\xff\x12\x00",         # a key that is not UTF-8
])
def test_attribute_bytes_that_do_not_decode_are_a_bad_request(encoded):
    with pytest.raises(BadRequest):
        values.attributes_json([encoded])
