"""query-api: Query planning with pruning, execution and result streaming (lands with its issue)."""

from __future__ import annotations

from fastapi import FastAPI

from strata_shared.config import Settings
from strata_shared.web.app import build_app


def create_app(settings: Settings) -> FastAPI:
    return build_app(
        settings,
        service="query-api",
        title="Strata query-api",
        description="Query planning with pruning, execution and result streaming (lands with its issue).",
        routers=[],
    )
