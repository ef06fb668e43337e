"""The artifact envelope: round trip, and every kind of damage named precisely."""

from __future__ import annotations

import json
import struct

import pytest

from strata_core.artifacts import (
    FORMAT_VERSIONS,
    ArtifactFormatError,
    ArtifactHeader,
    ArtifactType,
    decode_artifact,
    encode_artifact,
    read_header,
)
from strata_core.artifacts.envelope import MAGIC, content_hash

PAYLOAD = b"some payload " * 100


def _rewrite_header(data: bytes, **changes: object) -> bytes:
    (length,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    header = json.loads(data[start : start + length])
    header.update(changes)
    encoded = json.dumps(header).encode()
    return MAGIC + struct.pack("<I", len(encoded)) + encoded + data[start + length :]


def test_round_trip_keeps_header_and_payload() -> None:
    data = encode_artifact("split-1", ArtifactType.BLOOM, "host", PAYLOAD)
    header, payload = decode_artifact(data)
    assert payload == PAYLOAD
    assert header == ArtifactHeader(
        split_id="split-1",
        artifact_type=ArtifactType.BLOOM,
        column="host",
        format_version=FORMAT_VERSIONS[ArtifactType.BLOOM],
        content_hash=content_hash(data[data.index(b"}") + 1 :]),
        payload_size=len(PAYLOAD),
    )
    assert read_header(data) == header
    assert data.startswith(b"STRATA1\0")


def test_content_hash_is_of_the_compressed_payload() -> None:
    data = encode_artifact("s", ArtifactType.ZONE_MAP, "", PAYLOAD)
    header = read_header(data)
    compressed = data[data.index(b"}") + 1 :]
    assert header.content_hash == content_hash(compressed)
    assert header.content_hash.startswith("sha256:")


def test_empty_payload_round_trips() -> None:
    assert decode_artifact(encode_artifact("s", ArtifactType.FULL_TEXT, "", b""))[1] == b""


def test_column_rules_per_type() -> None:
    with pytest.raises(ValueError, match="covers one column"):
        encode_artifact("s", ArtifactType.BITMAP, "", PAYLOAD)
    with pytest.raises(ValueError, match="covers several columns"):
        encode_artifact("s", ArtifactType.ZONE_MAP, "host", PAYLOAD)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: b"NOTSTRAT" + d[8:], "bad magic"),
        (lambda d: b"", "bad magic"),
        (lambda d: d[:10], "truncated header"),
        (lambda d: d[:30], "truncated header"),
        (lambda d: _rewrite_header(d, artifact_type="x"), 'unknown artifact type "x"'),
        (lambda d: _rewrite_header(d, format_version=7), "unsupported format version 7 for type bloom"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "content hash mismatch"),
        (lambda d: d[:-5], "content hash mismatch"),
        (lambda d: _rewrite_header(d, payload_size=len(PAYLOAD) + 1), "payload size mismatch"),
        (lambda d: _rewrite_header(d, content_hash="md5:abc"), "content_hash"),
        (lambda d: _rewrite_header(d, format_version="1"), "'format_version' is missing or not a int"),
        (lambda d: MAGIC + struct.pack("<I", 3) + b"{{{" + d[8:], "not UTF-8 JSON"),
        (lambda d: MAGIC + struct.pack("<I", 1 << 30) + d[12:], "bad header length"),
    ],
)
def test_damage_is_named(damage, message: str) -> None:
    data = encode_artifact("split-1", ArtifactType.BLOOM, "host", PAYLOAD)
    with pytest.raises(ArtifactFormatError, match=message):
        decode_artifact(damage(data))


def test_read_header_does_not_check_the_payload() -> None:
    data = encode_artifact("split-1", ArtifactType.BITMAP, "service", PAYLOAD)
    damaged = data[:-1] + bytes([data[-1] ^ 1])
    assert read_header(damaged).column == "service"
    with pytest.raises(ArtifactFormatError, match="unsupported format version 2 for type bitmap"):
        read_header(_rewrite_header(data, format_version=2))


def test_a_valid_hash_over_a_wrong_frame_is_still_refused() -> None:
    data = encode_artifact("s", ArtifactType.ZONE_MAP, "", PAYLOAD)
    start = data.index(b"}") + 1
    garbage = b"not zstd at all"
    forged = _rewrite_header(data[:start] + garbage, content_hash=content_hash(garbage))
    with pytest.raises(ArtifactFormatError, match="not a zstd frame"):
        decode_artifact(forged)
