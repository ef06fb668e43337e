"""HTTP routes of row-level deletes: accept, list, status with the receipt, cancel, verify."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from strata_core.domain.wire_types import IndexId, Ulid
from strata_frame.web.auth import Principal, Scope, require_any
from strata_frame.web.deps import Session, State
from strata_frame.web.problems import problem_responses
from strata_metastore.conflicts import retrying_conflicts
from strata_planner.deletes.metrics import delete_metrics
from strata_planner.deletes.schemas import DeleteOut, DeletePage, DeleteRequest, DeleteVerification
from strata_planner.deletes.service import (
    accept_delete,
    cancel_delete,
    describe_delete,
    get_delete,
    list_deletes,
    verify_delete,
)

router = APIRouter(tags=["deletes"])
Writer = Annotated[Principal, Depends(require_any(Scope.WRITER))]
Reader = Annotated[Principal, Depends(require_any(Scope.WRITER, Scope.QUERY))]


@router.post("/v1/indexes/{index_id}/deletes", response_model=DeleteOut, status_code=202,
             responses=problem_responses(400, 401, 403, 404, 422))
async def create_delete(index_id: IndexId, request: DeleteRequest, session: Session, state: State,
                        principal: Writer) -> DeleteOut:
    """Accept a row-level delete: from this answer on, no query returns a row it matches among the splits
    published before it; fenced rewrite jobs then remove those rows from the files."""
    return await accept_delete(session, state.storage, index_id, request, principal, state.clock(),
                               delete_metrics(state.registry))


@router.get("/v1/indexes/{index_id}/deletes", response_model=DeletePage, responses=problem_responses(401, 403, 404))
async def list_index_deletes(index_id: IndexId, session: Session, principal: Reader,
                             limit: Annotated[int, Query(ge=1, le=1_000)] = 100) -> DeletePage:
    """The index's deletes, newest first (a tenant-bound key sees its own partition's)."""
    return await list_deletes(session, index_id, principal, limit)


@router.get("/v1/indexes/{index_id}/deletes/{delete_id}", response_model=DeleteOut,
            responses=problem_responses(401, 403, 404))
async def get_index_delete(index_id: IndexId, delete_id: Ulid, session: Session, principal: Reader) -> DeleteOut:
    """Status, cutoff, progress and, once it succeeded, the receipt."""
    return await describe_delete(session, await get_delete(session, index_id, delete_id, principal))


@router.post("/v1/indexes/{index_id}/deletes/{delete_id}/cancel", response_model=DeleteOut,
             responses=problem_responses(401, 403, 404, 409))
async def cancel_index_delete(index_id: IndexId, delete_id: Ulid, session: Session, state: State,
                              principal: Writer) -> DeleteOut:
    """Cancel a delete none of whose rewrites has published yet: its rows are visible to queries again and its
    rewrite jobs are cancelled (a late report of one is refused). Once a rewrite has published, the rows it
    removed are gone: 409. A cancelled delete is answered as it is."""
    async def attempt() -> DeleteOut:
        delete = await get_delete(session, index_id, delete_id, principal)
        return await cancel_delete(session, delete, state.clock())
    # A rewrite job created and published between the cancel's first read of its jobs and its locks can deadlock
    # with it; PostgreSQL aborts one of the two, and the cancel, run again, sees the publish (409) or wins.
    return await retrying_conflicts(session, attempt)


@router.get("/v1/indexes/{index_id}/deletes/{delete_id}/verify", response_model=DeleteVerification,
            responses=problem_responses(401, 403, 404, 503))
async def verify_index_delete(index_id: IndexId, delete_id: Ulid, session: Session, state: State,
                              principal: Reader) -> DeleteVerification:
    """Run the condition over the data again: 0 matching rows in the splits published before the delete, or
    which splits still hold some."""
    delete = await get_delete(session, index_id, delete_id, principal)
    return await verify_delete(session, state.storage, delete, state.clock())
