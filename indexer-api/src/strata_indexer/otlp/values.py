"""OTLP values as Strata stores them: an AnyValue as the plain JSON value it holds (string, int, double, bool,
list, object; bytes as base64 text), attribute lists as one JSON object, ids as lowercase hex.

Plain JSON rather than OTLP's typed JSON, so SQL reads an attribute as `json_extract_string(attributes,
'$."http.route"')`; the types survive the round trip (Python's json keeps 1 and 1.0 apart), except bytes, which
come back as their base64 text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from json.encoder import encode_basestring
from math import isfinite

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# The JSON string literal of a str, as json.dumps writes it with ensure_ascii=False (the C implementation).
_escape = encode_basestring
# What json.dumps writes for a finite float (it spells NaN and the infinities its own way).
float_repr = float.__repr__


def plain(value: AnyValue) -> object:
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
        return {kv.key: plain(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return None


def attributes_json(attributes: Iterable[KeyValue]) -> str | None:
    """The attributes as one JSON object in the order sent; None when there are none.

    Written piece by piece rather than through a dict and `json.dumps`: this runs for every record, and the
    scalar values (nearly all of them) need one C call to read and one to escape."""
    if not attributes:
        return None
    parts = []
    for kv in attributes:
        value = kv.value
        fields = value.ListFields()
        if not fields:
            parts.append(_escape(kv.key) + ":null")
            continue
        scalar = fields[0][1]
        kind = type(scalar)
        if kind is str:
            text = _escape(scalar)
        elif kind is bool:
            text = "true" if scalar else "false"
        elif kind is int:
            text = str(scalar)
        elif kind is float and isfinite(scalar):
            text = float_repr(scalar)
        else:
            text = _dumps(plain(value))
        parts.append(_escape(kv.key) + ":" + text)
    return "{" + ",".join(parts) + "}"


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

    def __init__(self, attributes: Iterable[KeyValue], promoted: dict[str, str]) -> None:
        self.columns: dict[str, str] = {}
        rest = {}
        for kv in attributes:
            column = promoted.get(kv.key)
            if column is not None and kv.value.WhichOneof("value") == "string_value" and column not in self.columns:
                self.columns[column] = kv.value.string_value
            else:
                rest[kv.key] = plain(kv.value)
        self.rest = _dumps(rest) if rest else None
