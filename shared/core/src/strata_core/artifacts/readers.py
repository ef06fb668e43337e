"""Loading any artifact object: the envelope is checked (magic, type, version, hash, size), then the payload is
parsed by its type's reader."""

from __future__ import annotations

from strata_core.artifacts.bitmap import BitmapArtifact
from strata_core.artifacts.bloom import BloomArtifact
from strata_core.artifacts.envelope import ArtifactFormatError, ArtifactHeader, ArtifactType, decode_artifact
from strata_core.artifacts.full_text import FullTextArtifact
from strata_core.artifacts.zone_map import ZoneMap

Artifact = ZoneMap | BloomArtifact | BitmapArtifact | FullTextArtifact

_READERS = {
    ArtifactType.ZONE_MAP: ZoneMap.from_payload,
    ArtifactType.BLOOM: BloomArtifact.from_payload,
    ArtifactType.BITMAP: BitmapArtifact.from_payload,
    ArtifactType.FULL_TEXT: FullTextArtifact.from_payload,
}


def load_artifact(data: bytes | memoryview) -> tuple[ArtifactHeader, Artifact]:
    """The header and the parsed artifact; ArtifactFormatError when any check fails."""
    header, payload = decode_artifact(data)
    artifact = _READERS[header.artifact_type](payload)
    column = getattr(artifact, "column", "")
    if column != header.column:
        raise ArtifactFormatError(f"column mismatch: header says {header.column!r}, payload is for {column!r}")
    return header, artifact
