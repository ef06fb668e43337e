"""HTTP routes of the index catalog."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from strata_core.domain.index_config import IndexConfig, IndexSettings
from strata_core.domain.wire_types import IndexId
from strata_frame.web.auth import Principal, Scope, require, require_any
from strata_frame.web.deps import Session
from strata_frame.web.problems import problem_responses
from strata_indexer.indexes import service
from strata_indexer.indexes.schemas import IndexOut, IndexPage
from strata_metastore.repositories import IndexRepository, load_live_index

router = APIRouter(prefix="/v1/indexes", tags=["indexes"])
any_key = require_any(Scope.ADMIN, Scope.WRITER, Scope.WORKER, Scope.QUERY)


@router.post("", status_code=201, response_model=IndexOut, responses=problem_responses(409))
async def create_index(config: IndexConfig, session: Session,
                       _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> IndexOut:
    """Create an index. The window duration must divide one hour (TW-2); sort columns must be declared fields."""
    return await service.create_index(session, config)


@router.get("", response_model=IndexPage)
async def list_indexes(session: Session, _: Annotated[Principal, Depends(any_key)],
                       limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                       cursor: IndexId | None = None) -> IndexPage:
    """Live indexes in name order; pass `next_cursor` back as `cursor` for the next page."""
    rows = await IndexRepository(session).list_live(limit=limit + 1, after_index_id=cursor)
    page = [service.to_out(r) for r in rows[:limit]]
    return IndexPage(indexes=page, next_cursor=page[-1].index_id if len(rows) > limit else None)


@router.get("/{index_id}", response_model=IndexOut, responses=problem_responses(404))
async def get_index(index_id: IndexId, session: Session, _: Annotated[Principal, Depends(any_key)]) -> IndexOut:
    """One index's configuration and identity."""
    return service.to_out(await load_live_index(session, index_id))


@router.put("/{index_id}", response_model=IndexOut, responses=problem_responses(404))
async def update_index(index_id: IndexId, settings: IndexSettings, session: Session,
                       _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> IndexOut:
    """Replace an index's settings. Splits already written keep their scope; new ones follow the new settings."""
    return await service.replace_index_settings(session, index_id, settings)


@router.delete("/{index_id}", status_code=204, response_class=Response,
               responses=problem_responses(404))
async def delete_index(index_id: IndexId, session: Session,
                       _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> Response:
    """Delete an index: its splits are marked for deletion, its live compaction and indexing jobs are cancelled,
    and its name becomes free for a new incarnation."""
    await service.delete_index(session, index_id)
    return Response(status_code=204)
