"""The maintenance listings for operators.

`GET /v1/<api>/maintenance/skips`, written once for every API that runs maintenance passes: what its passes
currently skip, oldest record first, cursor-paged, filtered by pass and index. Each API serves it under its own
path head (`skips.LISTING_HEAD`: planner-api `compaction`, indexer-api `indexing`) since the proxy routes by path
alone.

`GET /v1/maintenance/passes` (`passes_router`): which replica runs each periodic pass run once across the replicas
(`web/singleton.py`), whether it is running now, and how its last run went. The leases live in the one metastore,
so any API including this router lists the passes of all of them (planner-api's and indexer-api's).

No `from __future__ import annotations`: FastAPI reads the annotations of the route function built here, which
must be objects rather than names (as in `strata_frame.jobqueue.router`).
"""

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from strata_core.domain.wire_types import IndexId
from strata_core.errors import InvalidInput
from strata_frame.maintenance.passes import LISTING_HEAD, MaintenancePass
from strata_frame.maintenance.schemas import BackgroundPassList, BackgroundPassOut, SkipOut, SkipPage
from strata_frame.web.auth import Principal, Scope, require, require_any
from strata_frame.web.deps import Session
from strata_frame.web.problems import problem_responses
from strata_metastore.background_pass_repository import BackgroundPassRepository
from strata_metastore.maintenance_repository import MaintenanceSkipRepository

Cursor = Annotated[str | None, Query(pattern=r"^[0-9]{1,18}$", description="`next_cursor` of the previous page")]


def maintenance_router(passes: Sequence[MaintenancePass], api: str) -> APIRouter:
    router = APIRouter(tags=["maintenance"])
    own = tuple(passes)
    [head] = {LISTING_HEAD[p] for p in own}
    names = ", ".join(own)

    async def list_maintenance_skips(
        session: Session, _: Annotated[Principal, Depends(require(Scope.ADMIN))],
        pass_name: Annotated[list[MaintenancePass] | None, Query(alias="pass", description=f"one of {names}")]
        = None,
        index_id: IndexId | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        cursor: Cursor = None,
    ) -> SkipPage:
        wanted = tuple(pass_name or own)
        foreign = [p for p in wanted if p not in own]
        if foreign:
            raise InvalidInput.field("pass", f"{api} records the passes {names}, not {', '.join(foreign)}")
        rows = await MaintenanceSkipRepository(session).list_page(
            [str(p) for p in wanted], index_id=index_id, limit=limit + 1,
            after_skip_id=None if cursor is None else int(cursor))
        page = [SkipOut.of(r) for r in rows[:limit]]
        return SkipPage(skips=page, next_cursor=str(page[-1].skip_id) if len(rows) > limit else None)

    router.add_api_route(
        f"/v1/{head}/maintenance/skips", list_maintenance_skips, methods=["GET"], name="list_maintenance_skips",
        response_model=SkipPage, response_model_by_alias=True, responses=problem_responses(401, 403, 422),
        description=f"Entries {api}'s maintenance passes ({names}) currently skip, oldest record first: a file "
                    f"outside the storage root or that cannot be deleted, an artifact that cannot be read, an "
                    f"index whose planning raises. One record per entry, with its reason and how many passes met "
                    f"it; cleared once a pass handles the entry or no longer meets it.")
    return router


passes_router = APIRouter(tags=["operations"])


@passes_router.get("/v1/maintenance/passes", response_model=BackgroundPassList,
                   responses=problem_responses(401, 403))
async def list_background_passes(
        session: Session,
        _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))]) -> BackgroundPassList:
    """Every periodic pass that runs once across the replicas (garbage collection, retention, debt samples, the
    janitor), by name: its holder, whether it runs now, and its last start, finish and error. Times are
    PostgreSQL's clock."""
    passes = await BackgroundPassRepository(session).list()
    return BackgroundPassList(passes=[BackgroundPassOut(
        name=p.name, holder=p.holder, running=p.running, lease_expires_at=p.lease_expires_at,
        last_started_at=p.last_started_at, last_finished_at=p.last_finished_at, last_error=p.last_error)
        for p in passes])
