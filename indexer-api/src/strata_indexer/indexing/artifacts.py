"""A file's artifacts through the API: what is registered and which of it queries use, and registering
artifacts built elsewhere (checked, registered and published all or nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.artifact_refs import ArtifactRef
from strata_core.errors import Conflict, InvalidInput, NotFound
from strata_core.principal import Principal
from strata_core.storage import ObjectStore
from strata_indexer.indexing import snapshots
from strata_indexer.indexing.artifact_checks import check_artifacts
from strata_indexer.indexing.schemas import ArtifactOut, SnapshotOut, SplitArtifacts
from strata_metastore.indexing_repository import ArtifactConflict, IndexingRepository
from strata_metastore.models import SplitRow
from strata_metastore.repositories import SplitRepository


async def split_of(session: AsyncSession, split_id: str, principal: Principal, *,
                   for_update: bool = False) -> SplitRow:
    """The split, if it exists and belongs to the caller's tenant."""
    split = await SplitRepository(session).row(split_id, for_update=for_update)
    if split is None:
        raise NotFound(f"split {split_id!r} does not exist")
    principal.check_tenant(split.partition_id)
    return split


async def split_artifacts(session: AsyncSession, split_id: str) -> SplitArtifacts:
    rows, snapshot = await IndexingRepository(session).artifacts_and_snapshot(split_id)
    visible = set(snapshot.artifact_ids) if snapshot is not None and snapshot.published else set()
    return SplitArtifacts(
        split_id=split_id,
        snapshot=SnapshotOut(published=bool(snapshot and snapshot.published),
                             manifest_uri=snapshot.manifest_uri if snapshot else None,
                             published_at=snapshot.published_at if snapshot else None,
                             artifact_count=len(visible)),
        artifacts=[ArtifactOut(artifact_id=a.artifact_id, artifact_type=a.artifact_type, column=a.column_name,
                               format_version=a.format_version, uri=a.uri, size_bytes=a.size_bytes,
                               content_hash=a.content_hash, registered_by=a.registered_by, created_at=a.created_at,
                               in_published_snapshot=a.artifact_id in visible)
                   for a in rows])


async def register_artifacts(session: AsyncSession, storage: ObjectStore, split: SplitRow,
                             refs: Sequence[ArtifactRef], *, publish: bool, now: datetime) -> list[str]:
    """Check every artifact against its object (a 422 naming each problem), register them (the same artifact
    again is a no-op, the same identity with other content a 409), optionally publish the file's snapshot over
    every registered artifact, and commit; returns the ids registered anew."""
    checked, problems = check_artifacts(storage, split.split_id, split.index_uid, refs)
    if problems:
        raise InvalidInput.fields(problems)
    repo = IndexingRepository(session)
    try:
        registered = await repo.register(split, checked, "api", replace=False)
    except ArtifactConflict as conflict:
        raise Conflict(str(conflict)) from conflict
    if publish:
        await snapshots.publish(session, storage, split, await repo.artifacts_of(split.split_id), [], "api", now)
    await session.commit()
    return [row.artifact_id for row, new in registered if new]
