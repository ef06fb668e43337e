"""The janitor: reconciles object storage and the metastore through the artifacts' deterministic names.

Per index incarnation, it lists `.../artifacts/` and compares with the registered rows:
- an object with an artifact name, not registered, complete and valid (header names its file, type, column and
  version; the hash verifies), whose file still exists: registered (a crash between upload and registration);
- an object that is incomplete, invalid, a leftover temporary, or belongs to a file that no longer exists:
  deleted once older than the grace period (an upload in flight is younger than that);
- a registered artifact whose object is missing: the row goes, the file's snapshot is unpublished (queries fall
  back to Parquet statistics) and the file is indexed again.
Running it twice changes nothing the second time.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from strata_indexer.indexing.artifact_checks import artifact_prefix
from strata_shared.artifacts import ArtifactFormatError, decode_artifact, manifest_key, parse_artifact_key
from strata_shared.domain.artifact_refs import ArtifactRef
from strata_shared.domain.split import SplitState
from strata_shared.metastore.indexing_repository import ArtifactConflict, IndexingRepository
from strata_shared.metastore.repositories import IndexRepository, SplitRepository
from strata_shared.observability.tracing import traced
from strata_shared.storage import ObjectStore
from strata_shared.web.state import AppState

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
    try:
        with storage.open_input(uri) as source:
            data = source.read()
        header, _ = decode_artifact(data)
    except (ArtifactFormatError, OSError):
        return None
    identity = (header.split_id, str(header.artifact_type), header.column, header.format_version)
    if identity != (split_id, str(key.artifact_type), key.column, key.format_version):
        return None
    return ArtifactRef(str(header.artifact_type), header.column, header.format_version, uri, len(data),
                       header.content_hash)


@traced("janitor_pass")
async def run_janitor(state: AppState, now: datetime) -> JanitorReport:
    report = JanitorReport()
    async with state.sessions() as session:
        index_uids = [index_uid for index_uid, _, _ in await IndexRepository(session).incarnations()]
    for index_uid in index_uids:
        await _reconcile_index(state, index_uid, now, report)
    if report.changed:
        log.info("janitor: registered %d, deleted %d, missing %d, re-indexing %d files", len(report.registered),
                 len(report.deleted), len(report.missing), len(report.reindexed))
    return report


async def _reconcile_index(state: AppState, index_uid: str, now: datetime, report: JanitorReport) -> None:
    storage = state.storage
    prefix = artifact_prefix(storage, index_uid)
    relative_prefix = prefix[len(storage.root_uri) + 1:]
    listed = await asyncio.to_thread(storage.list_files_with_mtime, relative_prefix)
    old_enough = (now - timedelta(seconds=state.settings.janitor_grace_secs)).timestamp()
    async with state.sessions() as session:
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
                    await _delete(storage, uri, report)
                continue
            key = parse_artifact_key(key_text)
            ref = None if key is None or not alive else await asyncio.to_thread(
                _valid_object, storage, uri, split_id, key)
            if ref is not None:
                try:
                    async with session.begin_nested():
                        await repo.register(split, [ref], "janitor", replace=False)
                    report.registered.append(uri)
                    continue
                except ArtifactConflict:
                    pass  # another object holds the identity: this one is stale
            if mtime <= old_enough:
                await _delete(storage, uri, report)
        for uri, row in registered.items():
            if uri in present:
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


async def _delete(storage: ObjectStore, uri: str, report: JanitorReport) -> None:
    await asyncio.to_thread(storage.delete, uri)
    report.deleted.append(uri)
