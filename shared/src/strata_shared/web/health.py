"""/healthz (the process answers) and /readyz (PostgreSQL and Spark Connect answer)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from strata_shared.web.problems import problem_responses

router = APIRouter(tags=["operations"])


class Health(BaseModel):
    status: str
    service: str


class Readiness(BaseModel):
    status: str
    service: str
    checks: dict[str, str]


@router.get("/healthz", operation_id="healthz", response_model=Health, responses=problem_responses(500))
async def healthz(request: Request) -> Health:
    """Liveness: the process serves requests."""
    return Health(status="ok", service=request.app.state.strata.service)


async def _check_database(request: Request, limit_secs: float) -> str | None:
    try:
        async with asyncio.timeout(limit_secs):
            async with request.app.state.strata.engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means not ready; the reason is reported
        return f"postgresql unreachable: {type(exc).__name__}: {exc}"[:300]


async def _check_spark(request: Request, limit_secs: float) -> str | None:
    spark = request.app.state.strata.spark
    if spark is None:
        return "spark connect is not configured (STRATA_SPARK_REMOTE)"
    ok, detail = await spark.check_ready(limit_secs)
    return None if ok else f"spark connect unreachable: {detail}"[:300]


@router.get("/readyz", operation_id="readyz", response_model=Readiness, responses=problem_responses(503))
async def readyz(request: Request):
    """Readiness: PostgreSQL and Spark Connect both answer a real request in time."""
    state = request.app.state.strata
    timeout = state.settings.readiness_timeout_secs
    db_error, spark_error = await asyncio.gather(_check_database(request, timeout), _check_spark(request, timeout))
    checks = {"postgresql": db_error or "ok", "spark_connect": spark_error or "ok"}
    if db_error or spark_error:
        return JSONResponse(
            {"type": "https://strata.dev/problems/unavailable", "title": "Dependency unavailable", "status": 503,
             "detail": "; ".join(e for e in (db_error, spark_error) if e), "instance": "/readyz", "errors": [],
             "checks": checks},
            status_code=503, media_type="application/problem+json")
    return Readiness(status="ready", service=state.service, checks=checks)
