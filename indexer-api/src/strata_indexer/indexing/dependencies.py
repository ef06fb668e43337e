"""The FastAPI dependencies that hand the indexing routes what `create_app` built: the janitor and the queue."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request

from strata_frame.jobqueue.service import QueueSpec
from strata_frame.web.app import built_at_start
from strata_frame.web.deps import on_app_state
from strata_indexer.indexing.janitor import Janitor
from strata_indexer.indexing.schemas import IndexingAssignment, IndexingUpdate


def _services(app: FastAPI):
    # indexer-api's services (`strata_indexer.services`) hold this package's objects, so it cannot import them.
    return built_at_start(app, "indexer", "indexer-api")


@on_app_state
async def janitor(request: Request) -> Janitor:
    # async although it awaits nothing: FastAPI runs a plain-def dependency in a worker thread.
    return _services(request.app).janitor


@on_app_state
async def indexing_queue(request: Request) -> QueueSpec[IndexingUpdate, IndexingAssignment]:
    return _services(request.app).queue


JanitorDep = Annotated[Janitor, Depends(janitor)]
