"""The janitor: reconciles object storage and the metastore through the artifacts' deterministic names.

Per index incarnation, it lists `.../artifacts/` and compares with the registered rows:
- an object with an artifact name, not registered, complete and valid (header names its file, type, column and
  version; the hash verifies), whose file still exists: registered once older than the grace period (a crash
  between upload and registration; a younger one may be a build's still to register it);
- an object that is incomplete, invalid, a leftover temporary, or belongs to a file that no longer exists:
  deleted once older than the grace period (an upload in flight is younger than that);
- a registered artifact whose object is missing from a listing made after it was registered: the row goes, the
  file's snapshot is unpublished (queries fall back to Parquet statistics) and the file is indexed again.
Running it twice changes nothing the second time. An index whose artifacts cannot be listed, or an object that
cannot be read or deleted, is skipped and recorded (`strata_frame.maintenance.skips`); the rest goes on.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.artifacts import ArtifactFormatError, decode_artifact, manifest_key, parse_artifact_key
from strata_core.config import IndexingSettings
from strata_core.domain.artifact_refs import ArtifactRef
from strata_core.domain.split import SplitState
from strata_core.observability.tracing import traced
from strata_core.storage import ObjectStore
from strata_frame.maintenance.skips import MaintenancePass, PassRecorder, PassSkips, maintenance_pass
from strata_indexer.indexing.artifact_checks import artifact_prefix
from strata_metastore.indexing_repository import ArtifactConflict, IndexingRepository
from strata_metastore.repositories import IndexRepository, SplitRepository

log = logging.getLogger("strata.janitor")
READABLE = (SplitState.STAGED, SplitState.PUBLISHED, SplitState.MARKED_FOR_DELETION)


@dataclass
class JanitorReport:
    registered: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    reindexed: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.registered or self.deleted or self.missing or self.reindexed)


def _valid_object(storage: ObjectStore, uri: str, split_id: str, key) -> ArtifactRef | None:
    """The object's ref when it is a complete artifact of this name, None when it is not one; a storage error
    reading it raises (the object is then skipped and recorded, neither registered nor deleted)."""
    with storage.open_input(uri) as source:
        data = source.read()
    try:
        header, _ = decode_artifact(data)
    except ArtifactFormatError:
        return None
    identity = (header.split_id, str(header.artifact_type), header.column, header.format_version)
    if identity != (split_id, str(key.artifact_type), key.column, key.format_version):
        return None
    return ArtifactRef(str(header.artifact_type), header.column, header.format_version, uri, len(data),
                       header.content_hash)


@dataclass(frozen=True, slots=True)
class Janitor:
    """The janitor with what it works on: built once per app, run by the periodic pass, the route and tests."""

    sessions: async_sessionmaker[AsyncSession]
    storage: ObjectStore
    settings: IndexingSettings
    passes: PassRecorder

    @traced("janitor_pass")
    async def run(self, now: datetime) -> JanitorReport:
        report = JanitorReport()
        async with self.sessions() as session:
            incarnations = await IndexRepository(session).incarnations()
        async with maintenance_pass(self.passes, MaintenancePass.JANITOR, now) as skips:
            for index_uid, index_id, _ in incarnations:
                # An index whose artifacts cannot be listed is skipped whole; an object that cannot be read or
                # deleted, alone.
                async with skips.entry(index_id, artifact_prefix(self.storage, index_uid)):
                    await self._reconcile_index(index_uid, index_id, now, report, skips)
        if report.changed:
            log.info("janitor: registered %d, deleted %d, missing %d, re-indexing %d files", len(report.registered),
                     len(report.deleted), len(report.missing), len(report.reindexed))
        return report


    async def _reconcile_index(self, index_uid: str, index_id: str, now: datetime, report: JanitorReport,
                               skips: PassSkips) -> None:
        storage = self.storage
        prefix = artifact_prefix(storage, index_uid)
        relative_prefix = prefix[len(storage.root_uri) + 1:]
        # Read before the listing: an artifact registered by then had its object uploaded before, so the listing
        # shows it. A row read only after the listing may be a build's that uploaded and registered in between, and
        # its object is no more missing than the listing is recent.
        async with self.sessions() as session:
            registered_before_listing = {r.uri for r in await IndexingRepository(session).artifacts_of_index(index_uid)}
        listed = await asyncio.to_thread(storage.list_files_with_mtime, relative_prefix)
        old_enough = (now - timedelta(seconds=self.settings.janitor_grace_secs)).timestamp()
        async with self.sessions() as session:
            repo = IndexingRepository(session)
            registered = {r.uri: r for r in await repo.artifacts_of_index(index_uid)}
            split_ids = {uri[len(prefix) + 1:].split("/", 1)[0] for uri, _ in listed}
            split_ids |= {r.split_id for r in registered.values()}
            splits = await SplitRepository(session).rows(sorted(split_ids))
            present = set()
            for uri, mtime in listed:
                present.add(uri)
                key_text = uri[len(prefix) + 1:]
                split_id = key_text.split("/", 1)[0]
                split = splits.get(split_id)
                alive = split is not None and split.state in READABLE
                if key_text == manifest_key(split_id) or uri in registered:
                    if not alive and mtime <= old_enough:
                        await _delete(storage, uri, index_id, report, skips)
                    continue
                key = parse_artifact_key(key_text)
                ref = None
                if key is not None and alive:
                    async with skips.entry(index_id, uri) as read:
                        ref = await asyncio.to_thread(_valid_object, storage, uri, split_id, key)
                    if read.skipped:
                        continue
                # Younger than the grace, a complete object may be a build's that is about to register it itself:
                # registering it too would race that build's registration.
                if ref is not None and mtime <= old_enough:
                    try:
                        async with session.begin_nested():
                            await repo.register(split, [ref], "janitor", replace=False)
                        report.registered.append(uri)
                        continue
                    except ArtifactConflict:
                        pass  # another object holds the identity: this one is stale
                if mtime <= old_enough:
                    await _delete(storage, uri, index_id, report, skips)
            for uri, row in registered.items():
                if uri in present or uri not in registered_before_listing:
                    continue
                report.missing.append(uri)
                await repo.unregister(row.artifact_id)
                await repo.unpublish_snapshot(row.split_id, now)
                split = splits.get(row.split_id)
                if split is not None and split.state is SplitState.PUBLISHED:
                    # A live job (new, or already waiting) rebuilds the whole set and publishes it again.
                    await repo.enqueue([(split.split_id, split.index_uid, split.partition_id)], "repair", now)
                    if split.split_id not in report.reindexed:
                        report.reindexed.append(split.split_id)
            await session.commit()


async def _delete(storage: ObjectStore, uri: str, index_id: str, report: JanitorReport, skips: PassSkips) -> None:
    async with skips.entry(index_id, uri) as deletion:
        await asyncio.to_thread(storage.delete, uri)
    if not deletion.skipped:
        report.deleted.append(uri)
