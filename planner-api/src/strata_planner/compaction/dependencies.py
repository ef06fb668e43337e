"""The FastAPI dependency that hands planner-api's routes its services (`services.PlannerServices`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request

from strata_frame.web.app import built_at_start
from strata_frame.web.deps import on_app_state
from strata_planner.compaction.services import PlannerServices


def planner_services_of(app: FastAPI) -> PlannerServices:
    """The services `create_app` built for `app` (the background work and tests hold the app, not a request)."""
    return built_at_start(app, "planner", "planner-api")


@on_app_state
async def planner_services(request: Request) -> PlannerServices:
    # async although it awaits nothing: FastAPI runs a plain-def dependency in a worker thread.
    return planner_services_of(request.app)


Planner = Annotated[PlannerServices, Depends(planner_services)]
