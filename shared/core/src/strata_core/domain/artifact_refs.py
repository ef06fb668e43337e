"""What the metastore knows of one stored artifact object, and the manifest that lists a file's artifact set."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

MANIFEST_FORMAT = 1


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    artifact_type: str
    column: str
    format_version: int
    uri: str
    size_bytes: int
    content_hash: str

    @property
    def identity(self) -> tuple[str, str, int]:
        """Unique per file: (type, column, format version)."""
        return (self.artifact_type, self.column, self.format_version)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ArtifactRef:
        return cls(artifact_type=data["artifact_type"], column=data.get("column", ""),
                   format_version=int(data["format_version"]), uri=data["uri"], size_bytes=int(data["size_bytes"]),
                   content_hash=data["content_hash"])


def manifest_bytes(split_id: str, index_uid: str, refs: list[ArtifactRef], skipped: list[dict[str, Any]],
                   published_by: str) -> bytes:
    """The snapshot manifest: deterministic (sorted keys and artifacts), so rewriting it is idempotent."""
    body = {
        "format": MANIFEST_FORMAT,
        "split_id": split_id,
        "index_uid": index_uid,
        "published_by": published_by,
        "artifacts": [r.to_json() for r in sorted(refs, key=lambda r: r.identity)],
        "skipped": skipped,
    }
    return json.dumps(body, sort_keys=True, indent=1).encode()
