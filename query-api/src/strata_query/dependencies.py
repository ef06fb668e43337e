"""The FastAPI dependency that hands query-api's routes the query service `create_app` built (`service.py`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request

from strata_query.service import QueryService
from strata_shared.web.deps import on_app_state


def query_service_of(app: FastAPI) -> QueryService:
    """The query service of `app` (its shutdown hook and tests hold the app, not a request)."""
    service = getattr(app.state, "query", None)
    if service is None:
        raise RuntimeError("query-api has not finished starting")
    return service


@on_app_state
async def query_service(request: Request) -> QueryService:
    # async although it awaits nothing: FastAPI runs a plain-def dependency in a worker thread, a hop on every
    # query.
    return query_service_of(request.app)


Service = Annotated[QueryService, Depends(query_service)]
