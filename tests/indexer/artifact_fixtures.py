"""Artifacts built outside Strata for the registration and janitor tests: the same builder, run locally on the
ingested file, the objects written under the file's artifact prefix."""

from __future__ import annotations

import pyarrow.parquet as pq

from strata_core.artifacts import artifact_key, build_artifacts
from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import ArtifactConfig
from strata_core.domain.index_uid import split_index_uid
from strata_core.storage_layout import artifacts_dir
from tests.indexer.indexing_helpers import ARTIFACTS, FIELDS


async def split_row(indexer, keys, index_id: str, split_id: str) -> dict:
    listing = (await indexer.get(f"/v1/indexes/{index_id}/splits", headers=keys.header(keys.writer))).json()
    return next(s for s in listing["splits"] if s["split_id"] == split_id)


def prefix_of(storage, index_uid: str, split_id: str) -> str:
    return storage.uri_for(f"{artifacts_dir(*split_index_uid(index_uid))}/{split_id}")


def build_and_store(storage, split: dict, *, zstd_level: int = 3, write: bool = True) -> list[dict]:
    """Build the index's artifacts for one split file; write them (unregistered) at their deterministic names."""
    parquet = pq.ParquetFile(storage.open_input(split["uri"]))
    result = build_artifacts(parquet, split["split_id"], ArtifactConfig.model_validate(ARTIFACTS),
                             {f["name"]: FieldType(f["type"]) for f in FIELDS}, zstd_level=zstd_level)
    out = []
    for artifact in result.artifacts:
        key = artifact_key(split["split_id"], artifact.artifact_type, artifact.column, artifact.format_version)
        uri = storage.uri_for(f"{prefix_of(storage, split['index_uid'], split['split_id'])[len(storage.root_uri) + 1:]}"
                              f"/{key.split('/', 1)[1]}")
        if write:
            storage.write_bytes(uri, artifact.data)
        out.append({"artifact_type": str(artifact.artifact_type), "column": artifact.column,
                    "format_version": artifact.format_version, "uri": uri, "size_bytes": artifact.size_bytes,
                    "content_hash": artifact.content_hash, "data": artifact.data})
    return out


def as_request(artifacts: list[dict]) -> list[dict]:
    return [{k: v for k, v in a.items() if k != "data"} for a in artifacts]
