"""Deterministic artifact names: what artifact_key writes, parse_artifact_key reads back, and nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata_core.artifacts import ArtifactKey, ArtifactType, artifact_key, manifest_key, parse_artifact_key

SPLIT = "01JABCDEFGHJKMNPQRSTVWXYZ0"
columns = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
split_ids = st.from_regex(r"[0-9A-Za-z][0-9A-Za-z_.-]{0,30}", fullmatch=True)


def test_examples() -> None:
    assert artifact_key(SPLIT, ArtifactType.BLOOM, "host", 1) == f"{SPLIT}/bloom.host.v1.art"
    assert artifact_key(SPLIT, ArtifactType.BITMAP, "service", 3) == f"{SPLIT}/bitmap.service.v3.art"
    assert artifact_key(SPLIT, ArtifactType.ZONE_MAP, "", 1) == f"{SPLIT}/zone_map.v1.art"
    assert artifact_key(SPLIT, ArtifactType.FULL_TEXT, "", 2) == f"{SPLIT}/full_text.v2.art"
    assert manifest_key(SPLIT) == f"{SPLIT}/manifest.json"


@given(split_ids, st.sampled_from(list(ArtifactType)), columns, st.integers(1, 10_000))
def test_round_trip(split_id: str, artifact_type: ArtifactType, column: str, version: int) -> None:
    column = column if artifact_type.per_column else ""
    key = artifact_key(split_id, artifact_type, column, version)
    assert parse_artifact_key(key) == ArtifactKey(split_id, artifact_type, column, version)


@pytest.mark.parametrize(
    "key",
    [
        f"{SPLIT}/manifest.json",
        f"{SPLIT}/bloom.host.v1.art.tmp-1234",
        f"{SPLIT}/.bloom.host.v1.art.partial",
        f"{SPLIT}/bloom.host.v1.art/",
        f"{SPLIT}/bloom.v1.art",  # a bloom names its column
        f"{SPLIT}/zone_map.host.v1.art",  # a zone map does not
        f"{SPLIT}/bloom.host.v0.art",
        f"{SPLIT}/bloom.host.v01.art",
        f"{SPLIT}/bloom.1host.v1.art",
        f"{SPLIT}/ngram.host.v1.art",
        "bloom.host.v1.art",
        "/bloom.host.v1.art",
        f"prefix/{SPLIT}/bloom.host.v1.art",
        "",
    ],
)
def test_anything_else_is_not_an_artifact_key(key: str) -> None:
    assert parse_artifact_key(key) is None


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="field name"):
        artifact_key(SPLIT, ArtifactType.BLOOM, "bad-name", 1)
    with pytest.raises(ValueError, match="field name"):
        artifact_key(SPLIT, ArtifactType.BLOOM, "", 1)
    with pytest.raises(ValueError, match="has no column"):
        artifact_key(SPLIT, ArtifactType.ZONE_MAP, "host", 1)
    with pytest.raises(ValueError, match="path segment"):
        artifact_key("a/b", ArtifactType.ZONE_MAP, "", 1)
    with pytest.raises(ValueError, match="positive"):
        artifact_key(SPLIT, ArtifactType.ZONE_MAP, "", 0)
