"""indexer-api: the index catalog, ingestion, and registration of splits."""

from __future__ import annotations

from fastapi import FastAPI

from strata_indexer.indexes.router import router as indexes_router
from strata_indexer.ingest.router import router as ingest_router
from strata_indexer.splits.router import router as splits_router
from strata_shared.config import Settings
from strata_shared.web.app import build_app


def create_app(settings: Settings) -> FastAPI:
    return build_app(
        settings,
        service="indexer-api",
        title="Strata indexer-api",
        description="Index catalog, ingestion into windowed sorted splits, and registration of split files.",
        routers=[indexes_router, ingest_router, splits_router],
    )
