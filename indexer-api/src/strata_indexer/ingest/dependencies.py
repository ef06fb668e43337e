"""The FastAPI dependency that hands the ingest routes the write path `create_app` built (`service.Ingest`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request

from strata_frame.web.app import built_at_start
from strata_frame.web.deps import on_app_state
from strata_indexer.ingest.service import Ingest


def ingest_of(app: FastAPI) -> Ingest:
    """The write path of `app` (held by indexer-api's services, `strata_indexer.services`, which this package may
    not import: they hold it)."""
    return built_at_start(app, "indexer", "indexer-api").ingest


@on_app_state
async def ingest_service(request: Request) -> Ingest:
    # async although it awaits nothing: FastAPI runs a plain-def dependency in a worker thread.
    return ingest_of(request.app)


IngestWrites = Annotated[Ingest, Depends(ingest_service)]
