"""HTTP routes for split registration and listing."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from strata_core.domain.split import SplitState
from strata_core.domain.wire_types import IndexId, Int64, Name
from strata_frame.web.auth import Principal, Scope, require, require_any
from strata_frame.web.deps import Session, State
from strata_frame.web.problems import problem_responses
from strata_indexer.splits import service
from strata_indexer.splits.schemas import RegisterSplitsRequest, RegisterSplitsResponse, SplitOut, SplitPage
from strata_metastore.repositories import SplitFilter, load_live_index

router = APIRouter(prefix="/v1/indexes", tags=["splits"])


@router.post("/{index_id}/splits", response_model=RegisterSplitsResponse,
             responses=problem_responses(404, 409))
async def register_splits(
    index_id: IndexId,
    request: RegisterSplitsRequest,
    session: Session,
    state: State,
    principal: Annotated[Principal, Depends(require(Scope.WRITER))],
) -> RegisterSplitsResponse:
    """Register splits written elsewhere under the storage root. Each footer is checked (schema, one window,
    row count). All or nothing; the same split again is a no-op, different metadata for it a 409."""
    for item in request.splits:
        principal.check_tenant(item.partition_id)
    index = await load_live_index(session, index_id)
    with state.object_store.measure("register"):
        return await service.register_splits(session, index, request.splits, state.storage,
                                             state.settings.max_register_batch)


@router.get("/{index_id}/splits", response_model=SplitPage, responses=problem_responses(400, 404))
async def list_splits(
    index_id: IndexId,
    session: Session,
    principal: Annotated[Principal, Depends(require_any(Scope.WRITER, Scope.WORKER, Scope.QUERY))],
    state: Annotated[list[SplitState] | None, Query()] = None,
    partition_id: Name | None = None,
    window_start_gte: Int64 | None = None,
    window_start_lt: Int64 | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> SplitPage:
    """Splits of an index in (window_start, split_id) order, filtered by window range, state and partition; a
    tenant-bound key sees only its own partition."""
    if principal.tenant is not None:
        partition_id = partition_id or principal.tenant
        principal.check_tenant(partition_id)
    index = await load_live_index(session, index_id)
    flt = SplitFilter(index_uid=index.index_uid, states=tuple(state or ()), partition_id=partition_id,
                      window_start_gte=window_start_gte, window_start_lt=window_start_lt)
    page, next_cursor = await service.list_splits(session, flt, limit=limit, cursor=cursor)
    return SplitPage(splits=[SplitOut.of(s) for s in page], next_cursor=next_cursor)
