"""Deterministic object names of a split's artifacts, relative to the index's artifact prefix.

`{split_id}/{type}.{column}.v{version}.art` for per-column types (bloom, bitmap), `{split_id}/{type}.v{version}.art`
for the others, and `{split_id}/manifest.json` for the split's snapshot manifest. The janitor reconciles object
storage with the metastore from these names alone, so `parse_artifact_key` accepts exactly the names
`artifact_key` produces and nothing else (not manifests, not temporary upload names).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strata_core.artifacts.envelope import ArtifactType

_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(
    r"(?P<type>zone_map|bloom|bitmap|full_text)(?:\.(?P<column>[A-Za-z_][A-Za-z0-9_]*))?\.v(?P<version>[1-9][0-9]*)\.art"
)
_SUFFIX = ".art"
MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True)
class ArtifactKey:
    split_id: str
    artifact_type: ArtifactType
    column: str
    format_version: int


def _check_split_id(split_id: str) -> None:
    if not split_id or "/" in split_id or split_id in (".", ".."):
        raise ValueError(f"split id {split_id!r} cannot be one path segment of an object name")


def artifact_key(split_id: str, artifact_type: ArtifactType, column: str, format_version: int) -> str:
    artifact_type = ArtifactType(artifact_type)
    _check_split_id(split_id)
    if format_version < 1:
        raise ValueError(f"format version {format_version} is not a positive integer")
    if artifact_type.per_column:
        if not _COLUMN.fullmatch(column):
            raise ValueError(f"column {column!r} is not a field name ([A-Za-z_][A-Za-z0-9_]*)")
        return f"{split_id}/{artifact_type}.{column}.v{format_version}{_SUFFIX}"
    if column:
        raise ValueError(f"a {artifact_type} artifact has no column, got {column!r}")
    return f"{split_id}/{artifact_type}.v{format_version}{_SUFFIX}"


def manifest_key(split_id: str) -> str:
    _check_split_id(split_id)
    return f"{split_id}/{MANIFEST_NAME}"


def parse_artifact_key(key: str) -> ArtifactKey | None:
    split_id, slash, name = key.rpartition("/")
    if not slash or not split_id or "/" in split_id:
        return None
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    artifact_type = ArtifactType(match["type"])
    column = match["column"] or ""
    if artifact_type.per_column != bool(column):
        return None
    parsed = ArtifactKey(split_id, artifact_type, column, int(match["version"]))
    try:
        canonical = artifact_key(parsed.split_id, parsed.artifact_type, parsed.column, parsed.format_version)
    except ValueError:
        return None
    return parsed if canonical == key else None
