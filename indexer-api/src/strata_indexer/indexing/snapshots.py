"""Registering a file's artifacts and publishing its snapshot: the manifest goes to its predictable path first,
then the snapshot row flips to published in the caller's transaction, so readers see all of the set or none."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.artifacts import manifest_key
from strata_core.domain.artifact_refs import ArtifactRef, manifest_bytes
from strata_core.storage import ObjectStore
from strata_indexer.indexing.artifact_checks import artifact_prefix
from strata_metastore.indexing_models import ArtifactRow
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.models import SplitRow


def manifest_uri(storage: ObjectStore, split: SplitRow) -> str:
    return f"{artifact_prefix(storage, split.index_uid)}/{manifest_key(split.split_id)}"


async def write_manifest(storage: ObjectStore, split: SplitRow, refs: Sequence[ArtifactRef],
                         skipped: list[dict[str, Any]], published_by: str) -> str:
    """The manifest listing exactly `refs` at the file's predictable path; its URI."""
    uri = manifest_uri(storage, split)
    body = manifest_bytes(split.split_id, split.index_uid, refs, skipped, published_by)
    await asyncio.to_thread(storage.write_bytes, uri, body)
    return uri


async def publish(session: AsyncSession, storage: ObjectStore, split: SplitRow, artifacts: Sequence[ArtifactRow],
                  skipped: list[dict[str, Any]], published_by: str, now: datetime,
                  manifest_written: str | None = None) -> None:
    """Write the manifest listing exactly `artifacts` (unless the caller wrote it already: `manifest_written`, its
    URI), then mark the snapshot published (visible at commit)."""
    uri = manifest_written or await write_manifest(storage, split, [
        ArtifactRef(a.artifact_type, a.column_name, a.format_version, a.uri, a.size_bytes, a.content_hash)
        for a in artifacts], skipped, published_by)
    await IndexingRepository(session).publish_snapshot(split, artifacts, uri, published_by, now)
