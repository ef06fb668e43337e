"""The use cases of row-level deletes: accept one, read its status and receipt, list an index's, cancel one and
verify one against the data (docs: README "Deletes", docs/architecture.md "Deletes").

Accepting a delete is one transaction: the delete, the splits it covers and a new plan generation of the index
commit together, so from the 202 on no query plans without it (query-api hides the matching rows of every covered
split until its rewrite publishes). The rewrites themselves are compaction jobs of kind `rewrite`, created by the
compaction queue's housekeeping (`compaction/scheduler.py`, `plan_rewrites`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime

import pyarrow.parquet as pq
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.fields import FieldType
from strata_core.domain.index_config import IndexSettings
from strata_core.domain.index_uid import split_index_uid
from strata_core.domain.split import SplitMetadata
from strata_core.errors import Conflict, NotFound
from strata_core.principal import Principal
from strata_core.query.artifact_pruning import splits_ruled_out
from strata_core.query.predicate import Predicate, columns_of, describe
from strata_core.query.predicate_json import predicate_from_data
from strata_core.query.row_filter import matching_rows
from strata_core.query.time_range import TimeRanges, extract_time_range
from strata_core.sql.delete_where import parse_delete_where
from strata_core.sql.index_columns import PARTITION_COLUMN
from strata_core.storage import ObjectStore
from strata_metastore.compaction_repository import CompactionRepository
from strata_metastore.delete_models import DeleteRow, DeleteSplitRow
from strata_metastore.delete_repository import DeleteRepository
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.repositories import load_live_index
from strata_planner.deletes.metrics import DeleteMetrics
from strata_planner.deletes.schemas import (
    DeleteCutoff,
    DeleteOut,
    DeletePage,
    DeleteProgress,
    DeleteReceipt,
    DeleteRequest,
    DeleteVerification,
    ReceiptSplit,
    VerifiedSplit,
)

log = logging.getLogger("strata.deletes")

DONE_STATES = ("rewritten", "merged", "unchanged")


def _ranges_in_seconds(predicate: Predicate, settings: IndexSettings) -> TimeRanges:
    ts = settings.timestamp_field
    ranges = extract_time_range(predicate, ts)
    return ranges if settings.field_types()[ts] is not FieldType.TIMESTAMP else ranges.coarsen(1_000_000)


def _partition_of(principal: Principal, requested: str | None) -> str | None:
    """A tenant-bound key deletes and reads in its own partition only; an admin may name any or none."""
    if principal.tenant is None:
        return requested
    principal.check_tenant(requested or principal.tenant)
    return principal.tenant


async def accept_delete(session: AsyncSession, storage: ObjectStore, index_id: str, request: DeleteRequest,
                        principal: Principal, now: datetime, metrics: DeleteMetrics | None = None) -> DeleteOut:
    index = await load_live_index(session, index_id)
    settings = IndexSettings.model_validate(index.config)
    predicate = parse_delete_where(request.where, index_id=index_id, settings=settings)
    partition_id = _partition_of(principal, request.partition_id)
    ranges, window = _ranges_in_seconds(predicate, settings), settings.window_duration_secs
    repo = DeleteRepository(session)
    examined = await repo.examinable(index.index_uid, partition_id, predicate, ranges, window)
    # The artifacts are read with no transaction open, so neither a connection nor the delete lock waits on
    # object storage; only the splits examined here can be left out by the acceptance (the repository's docstring
    # says why that is safe against publishes in between).
    await session.commit()
    ruled_out = await asyncio.to_thread(splits_ruled_out, predicate, (PARTITION_COLUMN,), examined, storage)
    accepted = await repo.accept(
        index_uid=index.index_uid, partition_id=partition_id, where_sql=request.where, predicate=predicate,
        ranges_secs=ranges, window_duration_secs=window, reason=request.reason,
        requested_by=principal.tenant or principal.key_id, now=now, ruled_out=ruled_out)
    await session.commit()
    log.info("delete %s accepted on %s: covers %d splits; %d ruled out by split statistics, %d by artifacts",
             accepted.delete.delete_id, index_id, accepted.covered, accepted.ruled_out_by_statistics,
             accepted.ruled_out_by_artifacts)
    if metrics is not None:
        metrics.observe_acceptance(accepted)
    return await describe_delete(session, accepted.delete)


async def get_delete(session: AsyncSession, index_id: str, delete_id: str, principal: Principal) -> DeleteRow:
    index = await load_live_index(session, index_id)
    delete = await DeleteRepository(session).get(delete_id)
    if delete is None or delete.index_uid != index.index_uid or (
            principal.tenant is not None and delete.partition_id != principal.tenant):
        raise NotFound(f"index {index_id!r} has no delete {delete_id!r}")
    return delete


async def list_deletes(session: AsyncSession, index_id: str, principal: Principal, limit: int) -> DeletePage:
    index = await load_live_index(session, index_id)
    rows = await DeleteRepository(session).list_of_index(index.index_uid, principal.tenant, limit)
    return DeletePage(index_id=index_id, deletes=[await describe_delete(session, row) for row in rows])


async def cancel_delete(session: AsyncSession, delete: DeleteRow, now: datetime) -> DeleteOut:
    """Cancel a delete none of whose rewrites has published: its rewrite jobs are cancelled (a late report of one
    is refused), and its rows are visible to queries again. Once a rewrite of it has published, its rows are gone
    from that split: 409. Cancelling a cancelled delete answers it as it is."""
    deletes, jobs = DeleteRepository(session), CompactionRepository(session)
    # A publish locks its job, then the index's delete lock: the same order here, so the two never deadlock, and
    # a rewrite either published before the cancel (409) or its report after it is refused.
    for job_id in await deletes.rewrite_jobs_of(delete.delete_id):
        await jobs.queue.get(job_id, for_update=True)
    await deletes.lock_index(delete.index_uid, exclusive=True)
    locked = await deletes.lock_in_progress(delete.delete_id)
    if locked is None:  # its row was read again all the same
        if delete.status == "cancelled":
            return await describe_delete(session, delete)
        raise Conflict(f"delete {delete.delete_id} has {delete.status}: there is nothing left to cancel")
    if rewritten := await deletes.rewritten_count(delete.delete_id):
        raise Conflict(f"delete {delete.delete_id} cannot be cancelled: the rewrites of {rewritten} of its splits "
                       f"have published, the rows it matched there are already gone")
    # Jobs created since the first read (the delete's row lock keeps any more from being created) are locked here.
    for job_id in await deletes.rewrite_jobs_of(delete.delete_id):
        await jobs.cancel(job_id, now, stage="delete_cancelled")
    await deletes.cancel(locked, now)
    await session.commit()
    return await describe_delete(session, locked)


async def describe_delete(session: AsyncSession, delete: DeleteRow) -> DeleteOut:
    repo = DeleteRepository(session)
    splits = await repo.splits_of(delete.delete_id)
    status, error = delete.status, delete.error
    if status in ("pending", "running") and (failed := await repo.failed_jobs_of(delete.delete_id)):
        job_id, log = failed[0]
        status = "failed"
        error = f"rewrite job {job_id} was excluded after repeated failures: " + (
            log[-1].get("reason", "no reason recorded") if log else "no reason recorded")
    done = sum(1 for s in splits if s.state in DONE_STATES)
    rewriting = sum(1 for s in splits if s.state == "rewriting")
    index_id, _ = split_index_uid(delete.index_uid)
    return DeleteOut(
        delete_id=delete.delete_id, index_id=index_id, partition_id=delete.partition_id, where=delete.where_sql,
        predicate=describe(predicate_from_data(delete.predicate)), reason=delete.reason,
        requested_by=delete.requested_by, status=status,
        cutoff=DeleteCutoff(accepted_at=delete.accepted_at, plan_generation=delete.cutoff_generation),
        progress=DeleteProgress(splits_covered=len(splits), splits_done=done, splits_rewriting=rewriting,
                                fraction=round(done / len(splits), 4) if splits else 1.0),
        started_at=delete.started_at, finished_at=delete.finished_at, error=error,
        receipt=await _receipt(session, splits, delete.finished_at) if status == "succeeded" else None)


async def _receipt(session: AsyncSession, splits: Sequence[DeleteSplitRow], completed_at: datetime | None
                   ) -> DeleteReceipt:
    rewritten = [s for s in splits if s.state == "rewritten"]
    new_ids = [i for s in rewritten for i in s.new_split_ids]
    artifacts = await IndexingRepository(session).published_artifacts(new_ids)
    return DeleteReceipt(
        splits=[ReceiptSplit(split_id=s.split_id, state=s.state, new_split_ids=list(s.new_split_ids),
                             rows_before=s.rows_before, rows_removed=s.rows_removed,
                             inherited_from=s.inherited_from, finished_at=s.finished_at) for s in splits],
        splits_rewritten=len(rewritten), splits_unchanged=sum(1 for s in splits if s.state == "unchanged"),
        rows_removed=sum(s.rows_removed or 0 for s in rewritten),
        artifacts_rebuilt=sum(len(found) for found in artifacts.values()), completed_at=completed_at)


async def verify_delete(session: AsyncSession, storage: ObjectStore, delete: DeleteRow,
                        now: datetime) -> DeleteVerification:
    """Runs the condition over every published split of the delete's scope that split statistics cannot rule
    out, reading the condition's columns of each, and counts the matching rows per split. Splits the delete
    neither covers nor wrote are reported apart: they were published after it, which does not cover them."""
    predicate = predicate_from_data(delete.predicate)
    index = await load_live_index(session, split_index_uid(delete.index_uid)[0])
    settings = IndexSettings.model_validate(index.config)
    repo = DeleteRepository(session)
    candidates = await repo.candidates(delete.index_uid, delete.partition_id, predicate,
                                       _ranges_in_seconds(predicate, settings), settings.window_duration_secs)
    # What the delete is answerable for: the splits it covers and the splits its rewrites wrote. A split outside
    # both holding matching rows was published after the delete (split statistics and published artifacts leave a
    # split out of the coverage only when it holds no such row).
    covered = set()
    for row in await repo.splits_of(delete.delete_id):
        covered.add(row.split_id)
        covered.update(row.new_split_ids)
    counts = await asyncio.to_thread(_count_matches, storage, candidates, predicate)
    found = [VerifiedSplit(split_id=s.split_id, matching_rows=n, published_after_delete=s.split_id not in covered)
             for s, n in zip(candidates, counts, strict=True) if n]
    before = sum(v.matching_rows for v in found if not v.published_after_delete)
    return DeleteVerification(delete_id=delete.delete_id, verified=before == 0, splits_examined=len(candidates),
                              splits_read=len(candidates), matching_rows=before, splits_with_matches=found,
                              verified_at=now)


def _count_matches(storage: ObjectStore, splits: Sequence[SplitMetadata], predicate: Predicate) -> list[int]:
    wanted = sorted(columns_of(predicate) - {PARTITION_COLUMN})
    counts = []
    for split in splits:
        with storage.open_input(split.uri) as source:
            parquet = pq.ParquetFile(source)
            present = [c for c in wanted if c in parquet.schema_arrow.names]
            table = parquet.read(columns=present)
        counts.append(int(matching_rows(predicate, table, {PARTITION_COLUMN: split.partition_id}).sum()))
    return counts
