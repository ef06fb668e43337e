"""The envelope every index artifact object is stored in.

Layout: the magic `STRATA1\\0` (8 bytes), the header length (4 bytes, little-endian), the header as UTF-8 JSON, then
the zstd-compressed payload. The header names the split, the artifact type and its format version, the column, the
uncompressed payload size and the SHA-256 of the compressed payload bytes, so a reader can check an object it got
from anywhere (indexer-api validates artifacts built elsewhere) before it trusts a single byte of the payload.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import zstandard

MAGIC = b"STRATA1\0"
_LENGTH = struct.Struct("<I")
_PREFIX_SIZE = len(MAGIC) + _LENGTH.size
# A header is a few hundred bytes; anything far larger is a corrupt length, not a header.
MAX_HEADER_SIZE = 64 * 1024
HASH_PREFIX = "sha256:"


class ArtifactType(StrEnum):
    ZONE_MAP = "zone_map"
    BLOOM = "bloom"
    BITMAP = "bitmap"
    FULL_TEXT = "full_text"

    @property
    def per_column(self) -> bool:
        """Bloom and bitmap artifacts cover one column; zone maps and full-text cover many, with column ""."""
        return self in (ArtifactType.BLOOM, ArtifactType.BITMAP)


# The payload format each type is written in; readers refuse any other version.
FORMAT_VERSIONS: dict[ArtifactType, int] = {
    ArtifactType.ZONE_MAP: 1,
    ArtifactType.BLOOM: 1,
    ArtifactType.BITMAP: 1,
    ArtifactType.FULL_TEXT: 1,
}


class ArtifactFormatError(ValueError):
    """An artifact object that is not a valid artifact of a supported format; the message says what is wrong."""


@dataclass(frozen=True)
class ArtifactHeader:
    split_id: str
    artifact_type: ArtifactType
    column: str
    format_version: int
    content_hash: str
    payload_size: int

    def to_json(self) -> dict[str, Any]:
        return {
            "split_id": self.split_id,
            "artifact_type": str(self.artifact_type),
            "column": self.column,
            "format_version": self.format_version,
            "content_hash": self.content_hash,
            "payload_size": self.payload_size,
        }


def content_hash(data: bytes | memoryview) -> str:
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def encode_artifact(
    split_id: str, artifact_type: ArtifactType, column: str, payload: bytes, *, zstd_level: int = 3
) -> bytes:
    """The stored object for `payload`, written in the current format version of its type."""
    artifact_type = ArtifactType(artifact_type)
    if not split_id:
        raise ValueError("split_id must not be empty")
    if artifact_type.per_column and not column:
        raise ValueError(f"a {artifact_type} artifact covers one column: column must not be empty")
    if not artifact_type.per_column and column:
        raise ValueError(f"a {artifact_type} artifact covers several columns: column must be empty")
    compressed = zstandard.ZstdCompressor(level=zstd_level).compress(payload)
    header = ArtifactHeader(
        split_id=split_id,
        artifact_type=artifact_type,
        column=column,
        format_version=FORMAT_VERSIONS[artifact_type],
        content_hash=content_hash(compressed),
        payload_size=len(payload),
    )
    header_bytes = json.dumps(header.to_json(), separators=(",", ":")).encode()
    return b"".join((MAGIC, _LENGTH.pack(len(header_bytes)), header_bytes, compressed))


def _parse_header(data: bytes | memoryview) -> tuple[ArtifactHeader, int]:
    """The header and the offset the compressed payload starts at."""
    view = memoryview(data)
    if len(view) < len(MAGIC) or bytes(view[: len(MAGIC)]) != MAGIC:
        raise ArtifactFormatError("bad magic: not a Strata artifact (expected the bytes STRATA1\\0 first)")
    if len(view) < _PREFIX_SIZE:
        raise ArtifactFormatError("truncated header: the object ends inside the header length")
    (length,) = _LENGTH.unpack_from(view, len(MAGIC))
    if length > MAX_HEADER_SIZE:
        raise ArtifactFormatError(f"bad header length {length}: larger than {MAX_HEADER_SIZE} bytes")
    end = _PREFIX_SIZE + length
    if len(view) < end:
        raise ArtifactFormatError(
            f"truncated header: the header needs {length} bytes, the object has {len(view) - _PREFIX_SIZE} left"
        )
    try:
        raw = json.loads(bytes(view[_PREFIX_SIZE:end]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactFormatError(f"bad header: not UTF-8 JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ArtifactFormatError("bad header: not a JSON object")
    return _header_from_json(raw), end


def _field(raw: dict[str, Any], name: str, kind: type) -> Any:
    value = raw.get(name)
    # bool is an int in Python; a header never means true/false by a number or the reverse.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ArtifactFormatError(f"bad header: field {name!r} is missing or not a {kind.__name__}")
    return value


def _header_from_json(raw: dict[str, Any]) -> ArtifactHeader:
    type_name = _field(raw, "artifact_type", str)
    try:
        artifact_type = ArtifactType(type_name)
    except ValueError:
        raise ArtifactFormatError(f'unknown artifact type "{type_name}"') from None
    version = _field(raw, "format_version", int)
    if version != FORMAT_VERSIONS[artifact_type]:
        raise ArtifactFormatError(f"unsupported format version {version} for type {artifact_type}")
    split_id = _field(raw, "split_id", str)
    if not split_id:
        raise ArtifactFormatError("bad header: field 'split_id' is empty")
    column = _field(raw, "column", str)
    if artifact_type.per_column and not column:
        raise ArtifactFormatError(f"bad header: a {artifact_type} artifact must name its column")
    digest = _field(raw, "content_hash", str)
    if not digest.startswith(HASH_PREFIX) or len(digest) != len(HASH_PREFIX) + 64:
        raise ArtifactFormatError(f"bad header: content_hash {digest!r} is not sha256:<64 hex digits>")
    size = _field(raw, "payload_size", int)
    if size < 0:
        raise ArtifactFormatError(f"bad header: negative payload_size {size}")
    return ArtifactHeader(split_id, artifact_type, column, version, digest, size)


def read_header(data: bytes | memoryview) -> ArtifactHeader:
    """The header alone: checks the magic, the artifact type and its format version, not the payload."""
    return _parse_header(data)[0]


def decode_artifact(data: bytes | memoryview) -> tuple[ArtifactHeader, bytes]:
    """The header and the uncompressed payload, after checking the payload against the header's hash and size."""
    header, start = _parse_header(data)
    compressed = memoryview(data)[start:]
    actual = content_hash(compressed)
    if actual != header.content_hash:
        raise ArtifactFormatError(f"content hash mismatch: header says {header.content_hash}, payload is {actual}")
    try:
        # The bound keeps a corrupt frame from inflating past what the header promised.
        payload = zstandard.ZstdDecompressor().decompress(compressed, max_output_size=header.payload_size)
    except zstandard.ZstdError as exc:
        raise ArtifactFormatError(
            f"bad payload: not a zstd frame of at most {header.payload_size} bytes ({exc})"
        ) from None
    if len(payload) != header.payload_size:
        raise ArtifactFormatError(
            f"payload size mismatch: header says {header.payload_size} bytes, payload has {len(payload)}"
        )
    return header, payload
