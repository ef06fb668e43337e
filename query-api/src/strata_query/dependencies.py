"""The FastAPI dependency that hands query-api's routes the query service `create_app` built (`service.py`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request

from strata_frame.web.app import built_at_start
from strata_frame.web.deps import on_app_state
from strata_query.service import QueryService


def query_service_of(app: FastAPI) -> QueryService:
    """The query service of `app` (its shutdown hook and tests hold the app, not a request)."""
    return built_at_start(app, "query", "query-api")


@on_app_state
async def query_service(request: Request) -> QueryService:
    # async although it awaits nothing: FastAPI runs a plain-def dependency in a worker thread, a hop on every
    # query.
    return query_service_of(request.app)


Service = Annotated[QueryService, Depends(query_service)]
