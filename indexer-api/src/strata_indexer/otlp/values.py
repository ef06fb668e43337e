"""OTLP values as Strata stores them: an AnyValue as the plain JSON value it holds (string, int, double, bool,
list, object; bytes as base64 text), attribute lists as one JSON object in the order sent, ids as lowercase hex.

Plain JSON rather than OTLP's typed JSON, so any JSON reader (and a SQL LIKE) makes sense of it; the types survive
the round trip (1 and 1.0 stay apart), except bytes, which come back as their base64 text. Attributes arrive as
encoded bytes (raw.py): the usual ones are read straight from them, and the JSON of small ones seen before comes
from a bounded cache, since keys and many values (a method, a route, a status) repeat from record to record.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterable
from json.encoder import encode_basestring
from math import isfinite

from google.protobuf.message import DecodeError

from strata_core.errors import BadRequest
from strata_indexer.otlp.raw import AnyValue
from strata_indexer.otlp.raw import KeyValue as KeyValueMessage

_DOUBLE = struct.Struct("<d")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# The JSON string literal of a str, as json.dumps writes it with ensure_ascii=False (the C implementation).
_escape = encode_basestring
# What json.dumps writes for a finite float (it spells NaN and the infinities its own way).
float_repr = float.__repr__


_VARINT_CONTINUES = 0x80
# JSON text of small encoded values seen before (a method, a route, a status code repeat across records).
_VALUE_JSON: dict[bytes, str] = {}
_CACHED_VALUE_BYTES = 48
_CACHE_ENTRIES = 1 << 16
_KEY_PREFIX: dict[str, str] = {}
# `"key":value` of small encoded attributes seen before (whole ones repeat too: {"http.request.method": "GET"}).
_PAIR_JSON: dict[bytes, str] = {}
_CACHED_PAIR_BYTES = 96


def plain(value: AnyValue) -> object:
    """An AnyValue (a log body, an array's item) as a plain value; the values of a kvlist are encoded bytes."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return value.double_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "array_value":
        return [plain(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes_plain(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def plain_of(raw: bytes) -> object:
    """An encoded AnyValue (an attribute's value in raw.py's messages) as a plain value."""
    return plain(_any_value(raw))


def value_json(raw: bytes) -> str:
    """An encoded AnyValue as JSON text, the same text `json.dumps(plain_of(raw))` writes."""
    text = _VALUE_JSON.get(raw)
    if text is not None:
        return text
    size = len(raw)
    if size > 1 and raw[0] == 0x0A and raw[1] == size - 2 and raw[1] < _VARINT_CONTINUES:
        # A string under 128 bytes, most attribute values: its tag, its length in one byte, its UTF-8.
        text = _escape(_utf8(raw[2:]))
    elif size == 9 and raw[0] == 0x21:
        number = _DOUBLE.unpack_from(raw, 1)[0]
        text = float_repr(number) if isfinite(number) else _dumps(number)
    else:
        text = _scalar_json(raw)
        if text is None:
            text = _dumps(plain_of(raw))
    if size <= _CACHED_VALUE_BYTES:
        if len(_VALUE_JSON) >= _CACHE_ENTRIES:
            _VALUE_JSON.clear()
        _VALUE_JSON[raw] = text
    return text


def string_of(raw: bytes) -> str | None:
    """The string an encoded AnyValue holds, None when it holds anything else."""
    if raw[:1] != b"\x0a":
        return None
    length, start = _varint(raw, 1)
    if start + length != len(raw):
        value = _any_value(raw)
        return value.string_value if value.WhichOneof("value") == "string_value" else None
    return _utf8(raw[start:])


def attributes_json(attributes: Iterable[bytes]) -> str | None:
    """The attributes (encoded KeyValues) as one JSON object in the order sent; None when there are none."""
    if not attributes:
        return None
    get = _PAIR_JSON.get
    return "{" + ",".join([get(kv) or _pair_json(kv) for kv in attributes]) + "}"


def attributes_plain(attributes: Iterable[bytes]) -> dict[str, object]:
    return {key: plain_of(value) for key, value in map(pair, attributes)}


def pair(kv: bytes) -> tuple[str, bytes]:
    """An encoded KeyValue's key and encoded value: read straight from the bytes when the key and the value are
    each under 128 bytes and in order (as every encoder writes them), else by the protobuf runtime."""
    size = len(kv)
    if size > 1 and kv[0] == 0x0A and kv[1] < _VARINT_CONTINUES:
        key_end = 2 + kv[1]
        if key_end == size:
            return _utf8(kv[2:key_end]), b""
        if (size > key_end + 1 and kv[key_end] == 0x12 and kv[key_end + 1] < _VARINT_CONTINUES
                and key_end + 2 + kv[key_end + 1] == size):
            return _utf8(kv[2:key_end]), kv[key_end + 2:]
    try:
        message = KeyValueMessage.FromString(kv)
    except DecodeError as exc:
        raise BadRequest(f"malformed OTLP protobuf: an attribute does not decode ({exc})") from exc
    return message.key, message.value


def _pair_json(kv: bytes) -> str:
    key, value = pair(kv)
    text = _key_prefix(key) + value_json(value)
    if len(kv) <= _CACHED_PAIR_BYTES:
        if len(_PAIR_JSON) >= _CACHE_ENTRIES:
            _PAIR_JSON.clear()
        _PAIR_JSON[kv] = text
    return text


def _key_prefix(key: str) -> str:
    prefix = _KEY_PREFIX.get(key)
    if prefix is None:
        prefix = _escape(key) + ":"
        if len(_KEY_PREFIX) >= _CACHE_ENTRIES:
            _KEY_PREFIX.clear()
        _KEY_PREFIX[key] = prefix
    return prefix


def _scalar_json(raw: bytes) -> str | None:
    """JSON text of an encoded string, int, double or bool read straight from its bytes (a single field spanning
    them all, as every encoder writes it); None for anything else, which the protobuf runtime then reads."""
    if not raw:
        return "null"
    tag = raw[0]
    if tag == 0x0A:  # string_value, length-delimited
        length, start = _varint(raw, 1)
        return _escape(_utf8(raw[start:])) if start + length == len(raw) else None
    if tag == 0x21:  # double_value, fixed64
        if len(raw) != 9:
            return None
        number = _DOUBLE.unpack_from(raw, 1)[0]
        return float_repr(number) if isfinite(number) else _dumps(number)
    if tag in (0x18, 0x10):  # int_value (two's complement int64) or bool_value, varint
        number, end = _varint(raw, 1)
        if end != len(raw):
            return None
        if tag == 0x10:
            return "true" if number else "false"
        return str(number - (1 << 64) if number >= 1 << 63 else number)
    return None


def _varint(raw: bytes, position: int) -> tuple[int, int]:
    """The varint at `position` and the position after it (past the end when the bytes end inside it)."""
    result = shift = 0
    for position in range(position, min(len(raw), position + 10)):  # noqa: B020 - the loop's last index is wanted
        byte = raw[position]
        result |= (byte & 0x7F) << shift
        if not byte & _VARINT_CONTINUES:
            return result, position + 1
        shift += 7
    return result, len(raw) + 1


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"malformed OTLP protobuf: an attribute's string is not UTF-8 ({exc})") from exc


def _any_value(raw: bytes) -> AnyValue:
    try:
        return AnyValue.FromString(raw)
    except DecodeError as exc:
        raise BadRequest(f"malformed OTLP protobuf: an attribute's value does not decode ({exc})") from exc


def to_json(value: object) -> str:
    return _dumps(value)


def body_of(value: AnyValue) -> tuple[str | None, str | None]:
    """A log body as (text, type): a string body as itself (type None, what full text searches), any other as its
    JSON with its OTLP type named, so the two never read alike."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None, None
    if kind == "string_value":
        return value.string_value, None
    return _dumps(plain(value)), kind.removesuffix("_value")


class Resource:
    """A resource's or a scope's share of every row under it: the promoted attributes as columns (string values
    only, so a column always means the same type) and the rest as JSON."""

    __slots__ = ("columns", "rest")

    def __init__(self, attributes: Iterable[bytes], promoted: dict[str, str]) -> None:
        self.columns: dict[str, str] = {}
        rest = []
        for kv in attributes:
            key, value = pair(kv)
            column = promoted.get(key)
            if column is not None and column not in self.columns:
                text = string_of(value)
                if text is not None:
                    self.columns[column] = text
                    continue
            rest.append(_key_prefix(key) + value_json(value))
        self.rest = "{" + ",".join(rest) + "}" if rest else None
