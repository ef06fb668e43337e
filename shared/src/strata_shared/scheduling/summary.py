"""`GET /v1/<queue>/summary`: how many jobs of a queue are in each status, in one query, for dashboards and the
console (listing every job to count them would page through the whole history)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from strata_shared.domain.jobs import JobStatus
from strata_shared.metastore.leases import LeaseQueue
from strata_shared.web.auth import Principal, Scope, require_any
from strata_shared.web.deps import db_session
from strata_shared.web.problems import problem_responses


class QueueSummary(BaseModel):
    queue: str
    counts: dict[JobStatus, int] = Field(description="jobs per status, every status present (0 when none)")


def queue_summary_router(queue: str, model: type[Any]) -> APIRouter:
    """The summary route of the queue whose jobs live in `model`'s table."""
    router = APIRouter(tags=[queue])

    async def summary(session: Annotated[AsyncSession, Depends(db_session)],
                      _: Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))]) -> QueueSummary:
        counts = await LeaseQueue(session, model).count_by_status()
        return QueueSummary(queue=queue, counts={status: counts.get(status, 0) for status in JobStatus})

    summary.__doc__ = f"How many {queue} jobs are in each status."
    router.add_api_route(f"/v1/{queue}/summary", summary, methods=["GET"], response_model=QueueSummary,
                         name=f"{queue}_summary", responses=problem_responses(401, 403))
    return router
