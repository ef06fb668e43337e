"""Framing of binary payloads (bloom, bitmap): a JSON description followed by raw byte sections.

Layout: u32 JSON length, the JSON (UTF-8), u32 section count, one u64 size per section, then the sections back to
back. Sizes are binary rather than in the JSON because a bitmap artifact may have thousands of sections, and a reader
that probes one value should not parse thousands of numbers first. Readers get zero-copy views of the sections.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from strata_core.artifacts.envelope import ArtifactFormatError

_U32 = struct.Struct("<I")


def pack_sections(description: dict[str, Any], sections: list[bytes | memoryview]) -> bytes:
    meta = json.dumps(description, separators=(",", ":")).encode()
    sizes = np.array([len(s) for s in sections], dtype="<u8")
    return b"".join((_U32.pack(len(meta)), meta, _U32.pack(len(sections)), sizes.tobytes(), *sections))


def unpack_sections(payload: bytes | memoryview, kind: str) -> tuple[dict[str, Any], list[memoryview]]:
    view = memoryview(payload)
    try:
        (meta_length,) = _U32.unpack_from(view, 0)
        position = _U32.size
        description = json.loads(bytes(view[position : position + meta_length]))
        position += meta_length
        (count,) = _U32.unpack_from(view, position)
        position += _U32.size
        sizes = np.frombuffer(view, dtype="<u8", count=count, offset=position)
        position += 8 * count
    except (struct.error, ValueError) as exc:
        raise ArtifactFormatError(f"bad {kind} payload: {exc}") from None
    if not isinstance(description, dict):
        raise ArtifactFormatError(f"bad {kind} payload: the description is not a JSON object")
    ends = position + np.cumsum(sizes, dtype=np.uint64) if count else np.zeros(0, dtype=np.uint64)
    if count and int(ends[-1]) != len(view) or not count and position != len(view):
        raise ArtifactFormatError(f"bad {kind} payload: section sizes do not add up to the payload size")
    sections = []
    for end, size in zip(ends.tolist(), sizes.tolist(), strict=True):
        sections.append(view[end - size : end])
    return description, sections
