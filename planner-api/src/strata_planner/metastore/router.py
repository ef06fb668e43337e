"""The commit log over HTTP, for operators (admin key):

- `POST /v1/metastore/verify`: PostgreSQL compared with the bucket's commit log (`strata_metastore.verify`),
  each kind of drift also exported as `strata_metastore_drift{kind}`;
- `POST /v1/metastore/rebuild` and `GET /v1/metastore/rebuild`: the rebuild from the bucket
  (`strata_metastore.rebuild`) run by this replica in the background, and its progress. Refused (409) while
  the database holds indexes, unless `from_dump`. `strata metastore rebuild` does the same without an API, which
  is what to use when no API can start."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any
from weakref import WeakKeyDictionary

from fastapi import APIRouter, Depends, Request
from prometheus_client import CollectorRegistry, Gauge
from pydantic import BaseModel

from strata_core.errors import Conflict, NotFound
from strata_frame.web.auth import Principal, Scope, require
from strata_frame.web.deps import State
from strata_frame.web.problems import problem_responses
from strata_metastore.rebuild import rebuild, refuse_a_database_with_indexes
from strata_metastore.verify import verify

router = APIRouter(tags=["metastore"])


class TableDriftOut(BaseModel):
    rows_only_in_postgres: int
    rows_only_in_bucket: int
    examples: list[dict[str, Any]]


class VerifyOut(BaseModel):
    agrees: bool
    checkpoint_seq: int | None
    entries_checked: int
    drift: dict[str, int]
    tables: dict[str, TableDriftOut]
    unshipped: list[int]
    bucket_only: list[int]
    missing_files: list[str]
    checkpoint_missing: bool


# One gauge per app's registry (tests build several apps in one process).
_GAUGES: WeakKeyDictionary[CollectorRegistry, Gauge] = WeakKeyDictionary()


def _gauge(registry: CollectorRegistry) -> Gauge:
    if registry not in _GAUGES:
        _GAUGES[registry] = Gauge("strata_metastore_drift", "Drift between PostgreSQL and the bucket's commit log "
                                  "at the last verify, by kind (0 when they agree)", ["kind"], registry=registry)
    return _GAUGES[registry]


@router.post("/v1/metastore/verify", response_model=VerifyOut, responses=problem_responses(401, 403, 503))
async def verify_metastore(state: State, _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> VerifyOut:
    """Compare PostgreSQL with the bucket's commit log both ways: rows that differ from the log, committed
    entries the bucket lacks, entries PostgreSQL lacks, published splits whose files are missing."""
    report = await verify(state.sessions, state.storage)
    gauge = _gauge(state.registry)
    for kind, count in report.drift.items():
        gauge.labels(kind).set(count)
    return VerifyOut.model_validate(report.as_json())


log = logging.getLogger("strata.metastore")


class RebuildRequest(BaseModel):
    from_dump: bool = False


class RebuildOut(BaseModel):
    status: str  # running | succeeded | failed
    from_dump: bool
    started_at: datetime
    finished_at: datetime | None = None
    entries_done: int = 0
    entries_total: int = 0
    error: str | None = None
    report: dict[str, Any] | None = None


@dataclass
class _Run:
    out: RebuildOut
    task: asyncio.Task | None = field(default=None, repr=False)


@router.post("/v1/metastore/rebuild", response_model=RebuildOut, status_code=202,
             responses=problem_responses(401, 403, 409, 503))
async def start_metastore_rebuild(request: Request, body: RebuildRequest, state: State,
                                  _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> RebuildOut:
    """Rebuild the metastore from the bucket's commit log in the background, into this empty database (or, with
    `from_dump`, over a restored dump); `GET` the same path for its progress."""
    current: _Run | None = getattr(request.app.state, "metastore_rebuild", None)
    if current is not None and current.out.status == "running":
        raise Conflict("a rebuild is already running on this replica")
    if not body.from_dump:
        async with state.sessions() as session:  # refused now, as a 409, not later in the background
            await refuse_a_database_with_indexes(session)
    run = _Run(RebuildOut(status="running", from_dump=body.from_dump, started_at=datetime.now(UTC)))

    def progress(_what: str, done: int, total: int) -> None:
        run.out.entries_done, run.out.entries_total = done, total

    async def work() -> None:
        try:
            report = await rebuild(state.sessions, state.storage, state.clock(), from_dump=body.from_dump,
                                   progress=progress)
            run.out.report, run.out.status = report.as_json(), "succeeded"
        except Exception as exc:  # noqa: BLE001 - the run's outcome is reported on GET, not raised into nowhere
            log.exception("metastore rebuild failed")
            run.out.error, run.out.status = f"{type(exc).__name__}: {exc}", "failed"
        finally:
            run.out.finished_at = datetime.now(UTC)

    run.task = asyncio.create_task(work())
    request.app.state.metastore_rebuild = run
    return run.out


@router.get("/v1/metastore/rebuild", response_model=RebuildOut, responses=problem_responses(401, 403, 404, 503))
async def get_metastore_rebuild(request: Request,
                                _: Annotated[Principal, Depends(require(Scope.ADMIN))]) -> RebuildOut:
    """The progress of the last rebuild this replica ran (404 if none since it started)."""
    current: _Run | None = getattr(request.app.state, "metastore_rebuild", None)
    if current is None:
        raise NotFound("no rebuild has run on this replica since it started")
    return current.out
