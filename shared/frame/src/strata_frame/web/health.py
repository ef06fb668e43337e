"""/healthz (the process answers) and /readyz (the process takes new work: it is not draining, and PostgreSQL and
Spark Connect answer)."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import text

from strata_core.errors import PROBLEM_BASE
from strata_frame.web.problems import PROBLEM_MEDIA_TYPE, problem_responses

router = APIRouter(tags=["operations"])

# The problem type of a draining process's /readyz, distinct from a dependency failure's: the proxy takes a draining
# replica out of rotation, while a dependency every replica reports down keeps them in (proxy/upstreams.py).
DRAINING_PROBLEM_TYPE = PROBLEM_BASE + "draining"


class Drain:
    """Whether this process is on its way out. Set once, on SIGTERM, by the server (`strata_services.serving`);
    from then on /readyz answers 503 `draining` while /healthz and every request, new or in flight, are still
    served until the listener closes."""

    def __init__(self) -> None:
        self.since: float | None = None

    @property
    def draining(self) -> bool:
        return self.since is not None

    def begin(self) -> None:
        if self.since is None:
            self.since = time.monotonic()


def draining_response(service: str, drain: Drain) -> JSONResponse:
    """/readyz of a draining process: answered at once, without asking its dependencies."""
    secs = time.monotonic() - (drain.since or time.monotonic())
    return JSONResponse(
        {"type": DRAINING_PROBLEM_TYPE, "title": "Draining", "status": 503,
         "detail": f"{service} is shutting down (draining for {secs:.1f} s): it finishes the requests it has and "
                   f"takes no new work",
         "instance": "/readyz", "errors": [], "checks": {"lifecycle": "draining"}},
        status_code=503, media_type=PROBLEM_MEDIA_TYPE)


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
    """Readiness: not draining, and PostgreSQL and Spark Connect both answer a real request in time."""
    state = request.app.state.strata
    if request.app.state.drain.draining:
        return draining_response(state.service, request.app.state.drain)
    timeout = state.settings.readiness_timeout_secs
    db_error, spark_error = await asyncio.gather(_check_database(request, timeout), _check_spark(request, timeout))
    checks = {"postgresql": db_error or "ok", "spark_connect": spark_error or "ok"}
    if db_error or spark_error:
        return JSONResponse(
            {"type": "https://strata.dev/problems/unavailable", "title": "Dependency unavailable", "status": 503,
             "detail": "; ".join(e for e in (db_error, spark_error) if e), "instance": "/readyz", "errors": [],
             "checks": checks},
            status_code=503, media_type=PROBLEM_MEDIA_TYPE)
    return Readiness(status="ready", service=state.service, checks=checks)
