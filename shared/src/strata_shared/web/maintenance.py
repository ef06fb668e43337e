"""`GET /v1/maintenance/passes`: which replica runs each periodic pass run once across the replicas
(`web/singleton.py`), whether it is running now, and how its last run went. The leases live in the one metastore,
so any API including this router lists the passes of all of them (planner-api's and indexer-api's)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from strata_shared.metastore.background_pass_repository import BackgroundPassRepository
from strata_shared.web.auth import Principal, Scope, require_any
from strata_shared.web.deps import Session
from strata_shared.web.problems import problem_responses

router = APIRouter(tags=["operations"])


class BackgroundPassOut(BaseModel):
    name: str
    holder: str | None = Field(description="host:pid:start of the replica running the pass, or that ran it last")
    running: bool = Field(description="a live lease is held: the holder is running the pass now")
    lease_expires_at: datetime | None = Field(description="while running: when the lease lapses unless renewed")
    last_started_at: datetime | None
    last_finished_at: datetime | None = Field(description="before last_started_at while a run is under way, or "
                                                          "when a holder died mid-run")
    last_error: str | None = Field(description="the error of the last finished run; null when it succeeded")


class BackgroundPassList(BaseModel):
    passes: list[BackgroundPassOut]


@router.get("/v1/maintenance/passes", response_model=BackgroundPassList, responses=problem_responses(401, 403))
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
