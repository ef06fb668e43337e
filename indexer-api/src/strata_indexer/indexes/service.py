"""Index catalog use cases: create, read, replace, delete index configurations."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from ulid import ULID

from strata_core.domain.index_config import IndexConfig, IndexSettings, config_problems
from strata_core.domain.index_uid import make_index_uid
from strata_core.errors import Conflict, InvalidInput
from strata_indexer.indexes.schemas import IndexOut
from strata_metastore.compaction_repository import CompactionRepository
from strata_metastore.indexing_repository import IndexingRepository
from strata_metastore.models import IndexRow
from strata_metastore.repositories import IndexRepository, SplitRepository, load_live_index, utcnow


def to_out(row: IndexRow) -> IndexOut:
    return IndexOut(
        index_id=row.index_id,
        index_uid=row.index_uid,
        incarnation=row.incarnation,
        doc_mapping_uid=row.doc_mapping_uid,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
        config=IndexSettings.model_validate(row.config),
        compaction_paused_at=row.compaction_paused_at,
        indexing_paused_at=row.indexing_paused_at,
    )


def _check(settings: IndexSettings) -> None:
    problems = config_problems(settings)
    if problems:
        raise InvalidInput.fields(problems)


def _settings_json(settings: IndexSettings) -> dict:
    return settings.model_dump(mode="json", exclude={"index_id"})


async def create_index(session: AsyncSession, config: IndexConfig) -> IndexOut:
    _check(config)
    repo = IndexRepository(session)
    if await repo.get_live(config.index_id) is not None:
        raise Conflict(f"index {config.index_id!r} already exists")
    incarnation = str(ULID())
    now = utcnow()
    row = IndexRow(
        index_uid=make_index_uid(config.index_id, incarnation),
        index_id=config.index_id,
        incarnation=incarnation,
        config=_settings_json(config),
        doc_mapping_uid=config.doc_mapping_uid,
        version=1,
        created_at=now,
        updated_at=now,
    )
    try:
        await repo.add(row)
        await session.commit()
    except IntegrityError as exc:
        # Two creates of one name raced: the partial unique index let exactly one through.
        await session.rollback()
        raise Conflict(f"index {config.index_id!r} already exists") from exc
    return to_out(row)


async def replace_index_settings(session: AsyncSession, index_id: str, settings: IndexSettings) -> IndexOut:
    """New splits follow the new settings; existing splits keep the scope they were written with (CS-1)."""
    _check(settings)
    row = await load_live_index(session, index_id, for_update=True)
    row.config = _settings_json(settings)
    row.doc_mapping_uid = settings.doc_mapping_uid
    row.version += 1
    row.updated_at = utcnow()
    await session.flush()
    await session.commit()
    return to_out(row)


async def delete_index(session: AsyncSession, index_id: str) -> int:
    """Soft-delete the incarnation, mark its splits for deletion and cancel its live compaction and indexing jobs
    (a merge or build of files being deleted is wasted work, and a merge could never publish); returns how many
    splits were marked."""
    row = await load_live_index(session, index_id, for_update=True)
    await IndexRepository(session).soft_delete(row)
    now = utcnow()
    # Jobs before splits: a publishing worker locks its job, then the job's splits, in that order.
    await CompactionRepository(session).cancel_index_jobs(row.index_uid, now)
    await IndexingRepository(session).cancel_index_jobs(row.index_uid, now)
    marked = await SplitRepository(session).mark_index_for_deletion(row.index_uid)
    await session.commit()
    return marked
