"""Checks of an artifact object against what a caller claims about it: it must be where the file's artifacts
live, be complete, carry a header naming this file, the claimed type, column and format version, and hash to the
claimed content hash. Whatever is wrong is named, per artifact, as a 422 field error."""

from __future__ import annotations

from collections.abc import Sequence

from strata_core.artifacts import FORMAT_VERSIONS, ArtifactFormatError, ArtifactType, decode_artifact
from strata_core.domain.artifact_refs import ArtifactRef
from strata_core.domain.index_uid import split_index_uid
from strata_core.storage import ObjectStore, PathOutsideRoot
from strata_core.storage_layout import artifacts_dir

KNOWN_TYPES = {t.value for t in ArtifactType}


def artifact_prefix(storage: ObjectStore, index_uid: str) -> str:
    """Where one index incarnation's artifacts live: `{prefix}/{split_id}/...` (see strata_core.artifacts)."""
    return storage.uri_for(artifacts_dir(*split_index_uid(index_uid)))


def check_artifacts(storage: ObjectStore, split_id: str, index_uid: str,
                    refs: Sequence[ArtifactRef]) -> tuple[list[ArtifactRef], list[tuple[str, str]]]:
    """(the refs with their canonical URIs, []) when every object is what its ref says and no identity (type,
    column, version) appears twice; (what passed, every problem, each naming its `artifacts[i]` field)
    otherwise."""
    checked, problems, seen = [], [], set()
    for i, ref in enumerate(refs):
        if ref.identity in seen:
            problems.append((f"artifacts[{i}]", "the same (type, column, version) appears twice"))
            continue
        seen.add(ref.identity)
        good, found = check_artifact(storage, split_id, index_uid, ref, f"artifacts[{i}]")
        problems.extend(found)
        if good is not None:
            checked.append(good)
    return checked, problems


def check_artifact(storage: ObjectStore, split_id: str, index_uid: str, ref: ArtifactRef,
                   field: str) -> tuple[ArtifactRef | None, list[tuple[str, str]]]:
    """(the ref with its canonical URI, []) when the object is what the ref says; (None, problems) otherwise."""
    if ref.artifact_type not in KNOWN_TYPES:
        return None, [(f"{field}.artifact_type",
                       f"unknown artifact type {ref.artifact_type!r}; known: {', '.join(sorted(KNOWN_TYPES))}")]
    supported = FORMAT_VERSIONS[ArtifactType(ref.artifact_type)]
    if ref.format_version != supported:
        return None, [(f"{field}.format_version",
                       f"{ref.artifact_type} format version {ref.format_version} is not supported (only {supported})")]
    try:
        uri = storage.canonical_uri(ref.uri)
    except PathOutsideRoot as exc:
        return None, [(f"{field}.uri", str(exc))]
    prefix = f"{artifact_prefix(storage, index_uid)}/{split_id}/"
    if not uri.startswith(prefix):
        return None, [(f"{field}.uri", f"artifacts of split {split_id} must be stored under {prefix}")]
    try:
        with storage.open_input(uri) as source:
            data = source.read()
    except (FileNotFoundError, OSError):
        return None, [(f"{field}.uri", f"no object at {uri}")]
    if len(data) != ref.size_bytes:
        return None, [(f"{field}.size_bytes", f"the object at {uri} holds {len(data)} bytes, not {ref.size_bytes}")]
    try:
        header, _ = decode_artifact(data)
    except ArtifactFormatError as exc:
        return None, [(f"{field}.uri", f"the object at {uri} is not a valid artifact: {exc}")]
    problems = []
    if header.split_id != split_id:
        problems.append((f"{field}.uri", f"the artifact's header names split {header.split_id}, not {split_id}"))
    if str(header.artifact_type) != ref.artifact_type:
        problems.append((f"{field}.artifact_type", f"the header says {header.artifact_type}"))
    if header.column != ref.column:
        problems.append((f"{field}.column", f"the header says column {header.column!r}"))
    if header.format_version != ref.format_version:
        problems.append((f"{field}.format_version", f"the header says version {header.format_version}"))
    if header.content_hash != ref.content_hash:
        problems.append((f"{field}.content_hash",
                         f"the object's content hash is {header.content_hash}, not {ref.content_hash}"))
    if problems:
        return None, problems
    return ArtifactRef(ref.artifact_type, ref.column, ref.format_version, uri, ref.size_bytes,
                       ref.content_hash), []
