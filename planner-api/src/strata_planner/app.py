"""planner-api: Merge planning, compaction scheduling and the timeline (compaction lands with its issue)."""

from __future__ import annotations

from fastapi import FastAPI

from strata_shared.config import Settings
from strata_shared.web.app import build_app


def create_app(settings: Settings) -> FastAPI:
    return build_app(
        settings,
        service="planner-api",
        title="Strata planner-api",
        description="Merge planning, compaction scheduling and the timeline (compaction lands with its issue).",
        routers=[],
    )
