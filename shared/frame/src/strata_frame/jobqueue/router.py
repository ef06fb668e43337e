"""The HTTP routes of a job queue, written once for every queue (`/v1/<queue>/...`):

- `POST poll`: the worker protocol (fenced updates in, assignments out), `QueueSpec` doing the work;
- `POST jobs/{job_id}/status`: one fenced status write outside a poll (a refused write is a 409);
- `GET jobs`: jobs in creation order, cursor-paged, filtered by index, status and the queue's own fields;
- `GET jobs/{job_id}`: one job;
- `GET summary`: how many jobs are in each status, in one query (for dashboards and the console: listing every
  job to count them would page through the whole history);
- `POST jobs/{job_id}/<action>`: the queue's operator actions (cancel, retry), each answering the job;
- `POST /v1/indexes/{index_id}/<queue>/pause|resume`: the queue hands out none of the index's jobs while paused
  (running ones finish, or are cancelled with `cancel_running`);
- `POST /v1/indexes/{index_id}/<queue>/jobs/retry`: every excluded job of the index retried at once.

A queue describes itself with a `JobQueueApi`; what differs (bodies, filters, what a job shows, the actions it
offers) are its fields. An operator action is data, so another one (a retry) is a `JobAction` more, not a route
more.

No `from __future__ import annotations` here: the route functions are built per queue, and FastAPI reads their
parameter annotations, which must therefore be the queue's classes themselves rather than names.
"""

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from sqlalchemy.ext.asyncio import AsyncSession

from strata_core.domain.job_statuses import InvalidTransition, JobStatus
from strata_core.domain.wire_types import IndexId, Ulid
from strata_core.errors import Conflict, InvalidInput, NotFound
from strata_core.object_store_metrics import ObjectStoreMetrics
from strata_frame.jobqueue import service
from strata_frame.jobqueue.schemas import (
    BulkRetryResult,
    JobUpdate,
    LeasedJobOut,
    PauseState,
    PollFields,
    UpdateResult,
)
from strata_frame.jobqueue.service import JobRepository, QueueSpec
from strata_frame.web.auth import Principal, Scope, require, require_any
from strata_frame.web.deps import Session, State
from strata_frame.web.problems import problem_responses
from strata_metastore.lease_queue import JobFilter
from strata_metastore.repositories import load_live_index

Worker = Annotated[Principal, Depends(require(Scope.WORKER))]
Reader = Annotated[Principal, Depends(require_any(Scope.WORKER, Scope.WRITER))]
Admin = Annotated[Principal, Depends(require(Scope.ADMIN))]


class QueueSummary(BaseModel):
    queue: str
    counts: dict[JobStatus, int] = Field(description="jobs per status, every status present (0 when none)")


@dataclass(frozen=True)
class JobAction:
    """An operator action on one job: `run(session, job_id, now)` changes it in the request's transaction and
    returns it (None: no such job); a transition the job's status does not allow is a 409."""

    name: str
    run: Callable[[AsyncSession, str, datetime], Awaitable[Any]]
    description: str


@dataclass(frozen=True)
class JobQueueApi:
    # Paths /v1/{name}/... and operationIds (list_{name}_jobs, ...); the including router gives the tag.
    name: str
    # A FastAPI dependency returning the app's queue (built once in its `create_app`).
    queue: Callable[..., Awaitable[QueueSpec]]
    jobs: Callable[[AsyncSession], JobRepository]
    poll_request: type[PollFields]
    poll_response: type[BaseModel]
    job_out: type[LeasedJobOut]
    job_page: type[BaseModel]
    # A FastAPI dependency declaring the queue's own query parameters and returning its filter (index and
    # status are filled in by the listing).
    filters: Callable[..., JobFilter]
    # For the descriptions: what the listing filters on besides index and status, what one job shows, what a
    # worker is handed.
    filtered_by: str
    job_shows: str
    hands_out: str
    # The body of `POST jobs/{job_id}/status`; None: the queue takes status writes only through polls.
    status_update: type[JobUpdate] | None = None
    # The operation the object-store requests its workers report are counted under in /metrics.
    requests_operation: str = "job"
    actions: Sequence[JobAction] = ()


@dataclass(frozen=True)
class _Listing:
    index_id: str | None
    statuses: tuple[JobStatus, ...]


def _listing(index_id: IndexId | None = None,
             status: Annotated[list[JobStatus] | None, Query()] = None) -> _Listing:
    return _Listing(index_id, tuple(status or ()))


@dataclass(frozen=True)
class _Page:
    limit: int
    cursor: str | None


def _page(limit: Annotated[int, Query(ge=1, le=1000)] = 100,
          cursor: Ulid | None = None) -> _Page:
    return _Page(limit, cursor)


def job_queue_router(api: JobQueueApi) -> APIRouter:
    router = APIRouter()
    base = f"/v1/{api.name}"

    def record_reported(object_store: ObjectStoreMetrics, updates: Sequence[JobUpdate]) -> None:
        """The requests each finished job made, whichever worker ran it and whether or not its update is then
        accepted: they were made either way."""
        for update in updates:
            if update.object_requests is not None:
                object_store.record(api.requests_operation, update.object_requests.requests())

    async def poll(request: api.poll_request, state: State, _: Worker,
                   spec: Annotated[QueueSpec, Depends(api.queue)]) -> BaseModel:
        record_reported(state.object_store, request.updates)
        assignments, results = await service.poll(state.sessions, spec, request, request.updates, state.clock)
        return api.poll_response(assignments=assignments, updates=results, lease_secs=spec.lease_secs)

    router.add_api_route(
        f"{base}/poll", poll, methods=["POST"], name=f"poll_{api.name}_jobs", response_model=api.poll_response,
        responses=problem_responses(401, 403, 422),
        description=f"The worker protocol: report status updates (each fenced by its token) and free capacity, "
                    f"receive {api.hands_out} with leases and fencing tokens. Stale updates come back with "
                    f"accepted=false.")

    if api.status_update is not None:
        async def report_status(job_id: Ulid, update: api.status_update, state: State, _: Worker,
                                spec: Annotated[QueueSpec, Depends(api.queue)]) -> UpdateResult:
            if update.job_id != job_id:
                raise InvalidInput.field("job_id", "does not match the path")
            record_reported(state.object_store, [update])
            result = await service.apply_update(state.sessions, spec, update, state.clock())
            if not result.accepted:
                raise Conflict(result.reason or "update refused")
            return result

        router.add_api_route(
            f"{base}/jobs/{{job_id}}/status", report_status, methods=["POST"], name="report_job_status",
            response_model=UpdateResult, responses=problem_responses(401, 403, 404, 409, 422),
            description="One fenced status write outside a poll: a stale token (or a finished/cancelled job) is a "
                        "409.")

    async def list_jobs(session: Session, _: Reader, listing: Annotated[_Listing, Depends(_listing)],
                        own: Annotated[JobFilter, Depends(api.filters)],
                        page: Annotated[_Page, Depends(_page)]) -> BaseModel:
        index_uid = (await load_live_index(session, listing.index_id)).index_uid if listing.index_id else None
        flt = replace(own, index_uid=index_uid, statuses=listing.statuses)
        jobs, next_cursor = await service.list_jobs(api.jobs(session), flt, page.limit, page.cursor)
        return api.job_page(jobs=[api.job_out.of(j) for j in jobs], next_cursor=next_cursor)

    router.add_api_route(
        f"{base}/jobs", list_jobs, methods=["GET"], name=f"list_{api.name}_jobs", response_model=api.job_page,
        responses=problem_responses(401, 403, 404, 422),
        description=f"{api.name.capitalize()} jobs in creation order, filtered by index, status and "
                    f"{api.filtered_by}.")

    async def get_job(job_id: Ulid, session: Session, _: Reader) -> LeasedJobOut:
        job = await api.jobs(session).get(job_id)
        if job is None:
            raise NotFound(f"{api.name} job {job_id!r} does not exist")
        return api.job_out.of(job)

    router.add_api_route(
        f"{base}/jobs/{{job_id}}", get_job, methods=["GET"], name=f"get_{api.name}_job", response_model=api.job_out,
        responses=problem_responses(401, 403, 404), description=f"One job: {api.job_shows}.")

    async def summary(session: Session, _: Reader) -> QueueSummary:
        counts = await api.jobs(session).count_by_status()
        return QueueSummary(queue=api.name, counts={status: counts.get(status, 0) for status in JobStatus})

    router.add_api_route(
        f"{base}/summary", summary, methods=["GET"], name=f"{api.name}_summary", response_model=QueueSummary,
        responses=problem_responses(401, 403), description=f"How many {api.name} jobs are in each status.")

    for action in [*api.actions, _retry(api)]:
        router.add_api_route(
            f"{base}/jobs/{{job_id}}/{action.name}", _action_route(api, action), methods=["POST"],
            name=f"{action.name}_{api.name}_job", response_model=api.job_out,
            responses=problem_responses(401, 403, 404, 409), description=action.description)
    _add_index_controls(router, api)
    return router


def _add_index_controls(router: APIRouter, api: JobQueueApi) -> None:
    """Pause, resume and bulk retry of one index's jobs, under /v1/indexes/{index_id}/<queue>/."""
    base = f"/v1/indexes/{{index_id}}/{api.name}"

    async def pause(index_id: IndexId, session: Session, state: State, _: Admin,
                    cancel_running: Annotated[bool, Query(description="also cancel the index's running jobs")]
                    = False) -> PauseState:
        paused_at, cancelled = await service.pause_index(session, api.jobs(session), index_id, state.clock(),
                                                         cancel_running=cancel_running)
        return PauseState(index_id=index_id, queue=api.name, paused=True, paused_at=paused_at,
                          cancelled_job_ids=cancelled)

    router.add_api_route(
        f"{base}/pause", pause, methods=["POST"], name=f"pause_{api.name}", response_model=PauseState,
        responses=problem_responses(401, 403, 404, 422),
        description=f"Pause {api.name} of one index: no worker is handed its jobs from the next poll on"
                    f"{' and the planner creates none' if api.name == 'compaction' else ''}; running jobs "
                    f"finish, or are cancelled with cancel_running. Pausing a paused index keeps its first time.")

    async def resume(index_id: IndexId, session: Session, state: State, _: Admin) -> PauseState:
        await service.resume_index(session, api.jobs(session), index_id, state.clock())
        return PauseState(index_id=index_id, queue=api.name, paused=False, paused_at=None)

    router.add_api_route(
        f"{base}/resume", resume, methods=["POST"], name=f"resume_{api.name}", response_model=PauseState,
        responses=problem_responses(401, 403, 404),
        description=f"Resume {api.name} of one index: its waiting jobs are handed out again from the next poll.")

    async def retry_all(index_id: IndexId, session: Session, state: State, _: Admin) -> BulkRetryResult:
        retried, cancelled = await service.retry_excluded(session, api.jobs(session), index_id, state.clock())
        return BulkRetryResult(index_id=index_id, queue=api.name, retried=retried, cancelled=cancelled)

    router.add_api_route(
        f"{base}/jobs/retry", retry_all, methods=["POST"], name=f"retry_{api.name}_jobs_of_index",
        response_model=BulkRetryResult, responses=problem_responses(401, 403, 404),
        description=f"Retry every excluded {api.name} job of the index: each goes back to the queue with its "
                    f"failure count reset (its failure log kept), or is cancelled when its inputs changed.")



def _retry(api: JobQueueApi) -> JobAction:
    """The retry every queue offers, through its repository's own `retry` (what "inputs changed" means is the
    queue's: compaction checks its claimed splits, indexing its file)."""
    async def run(session: AsyncSession, job_id: str, now: datetime) -> Any:
        return await api.jobs(session).retry(job_id, now)

    return JobAction("retry", run,
                     "Retry an excluded job: back to the queue with its failure count reset and its failure log "
                     "kept; when its inputs changed meanwhile it is cancelled instead (its claims released). A job "
                     "that is not excluded is a 409.")


def _action_route(api: JobQueueApi, action: JobAction) -> Callable[..., Awaitable[LeasedJobOut]]:
    async def act(job_id: Ulid, session: Session, state: State, _: Admin) -> LeasedJobOut:
        try:
            job = await service.act_on_job(session, action.run, job_id, state.clock())
        except InvalidTransition as exc:
            raise Conflict(str(exc)) from exc
        if job is None:
            raise NotFound(f"{api.name} job {job_id!r} does not exist")
        return api.job_out.of(job)

    return act
