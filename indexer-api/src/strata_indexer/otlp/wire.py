"""OTLP/HTTP on the wire: the request body (protobuf or OTLP's JSON mapping, gzip or not) into an Export*Request
message, and the answers (an Export*Response on success, a google.rpc.Status on failure) in the request's encoding.

The JSON mapping differs from protobuf's canonical JSON in one way that matters: trace and span ids are hex, not
base64 (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding). They are rewritten before the generic
parser sees them; unknown fields are ignored, as the specification requires of receivers.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc.status_pb2 import Status

from strata_core.errors import BadRequest, PayloadTooLarge, UnsupportedMediaType

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"})
# Inflated in steps of this size, so a gzip bomb is stopped at the limit, never inflated whole first.
_INFLATE_STEP = 1 << 20

M = TypeVar("M", bound=Message)


def encoding_of(content_type: str | None) -> str:
    base = (content_type or "").split(";")[0].strip().lower()
    if base in (PROTOBUF, JSON):
        return base
    raise UnsupportedMediaType(f"content type {base or '(none)'!r} is not an OTLP encoding: send {PROTOBUF} or {JSON}")


def inflate(body: bytes | bytearray, content_encoding: str | None, max_bytes: int) -> bytes:
    """The body as sent, or gunzipped (every gzip member) up to `max_bytes` of output: past it, a 413."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return bytes(body)
    if encoding != "gzip":
        raise UnsupportedMediaType(f"content encoding {encoding!r} is not accepted: send gzip or none")
    out = bytearray()
    data = bytes(body)
    try:
        while data:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            pending = data
            while pending and not inflater.eof:
                out += inflater.decompress(pending, _INFLATE_STEP)
                if len(out) > max_bytes:
                    raise PayloadTooLarge(f"gzip body inflates past the limit of {max_bytes} bytes")
                pending = inflater.unconsumed_tail
            if not inflater.eof:
                raise BadRequest("malformed gzip body: it ends before its gzip stream does")
            data = inflater.unused_data
    except zlib.error as exc:
        raise BadRequest(f"malformed gzip body: {exc}") from exc
    return bytes(out)


def parse(message_type: type[M], raw_type: type[Message], data: bytes, encoding: str) -> Message:
    """The request as `raw_type` (raw.py's copy of `message_type`): protobuf parsed straight into it, JSON parsed
    into `message_type` and carried over in its binary form (the two are the same on the wire)."""
    if encoding == PROTOBUF:
        try:
            return raw_type.FromString(data)
        except DecodeError as exc:
            raise BadRequest(f"malformed OTLP protobuf ({message_type.__name__}): {exc}") from exc
    try:
        document = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"malformed OTLP JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise BadRequest(f"malformed OTLP JSON: expected an object, got {type(document).__name__}")
    try:
        message = json_format.ParseDict(_ids_to_base64(document, "$"), message_type(), ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise BadRequest(f"malformed OTLP JSON ({message_type.__name__}): {exc}") from exc
    return raw_type.FromString(message.SerializeToString())


def _ids_to_base64(node: object, where: str) -> object:
    if isinstance(node, dict):
        converted = {}
        for key, value in node.items():
            path = f"{where}.{key}"
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError as exc:
                    raise BadRequest(f"malformed OTLP JSON: {path} must be a hex id, got {value[:64]!r}") from exc
            else:
                value = _ids_to_base64(value, path)
            converted[key] = value
        return converted
    if isinstance(node, list):
        return [_ids_to_base64(item, f"{where}[{i}]") for i, item in enumerate(node)]
    return node


def encode(message: Message, encoding: str) -> bytes:
    if encoding == PROTOBUF:
        return message.SerializeToString()
    # The JSON mapping: lowerCamelCase names, int64 as strings, default values left out.
    return json_format.MessageToJson(message, indent=None).encode()


def status(code: int, detail: str, encoding: str) -> bytes:
    """The body of a failed export: a google.rpc.Status, `code` the gRPC code matching the HTTP status."""
    return encode(Status(code=code, message=detail), encoding)
