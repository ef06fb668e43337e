"""Asynchronous plans (after Iceberg's REST scan planning): a plan submitted, planned in the background within the
query timeout, read and cancelled from any replica through the shared registry (`registry.QueryRegistry`).

A plan's end is kept in its record in the form its readers are answered with, since the replica that reads it may
not be the one that planned it; that form is the door's (`RecordForms`, given by `router.py`), not this module's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from ulid import ULID

from strata_core.config import Settings
from strata_core.errors import NotFound, StrataError
from strata_query.calls import PlannedQuery, QueryCall, QueryTimeout
from strata_query.registry import AsyncPlan, QueryRegistry, replica_stopped

log = logging.getLogger("strata.query")


class PlanningFailed(StrataError):
    """An asynchronous plan failed on a defect (not a problem of the query): recorded for its reader."""


@dataclass(frozen=True, slots=True)
class RecordForms:
    """How a plan's end is kept for its readers: a completed plan as its body, a failure as its problem (JSON)."""

    plan: Callable[[PlannedQuery], dict[str, Any]]
    problem: Callable[[StrataError], dict[str, Any]]


class AsyncPlans:
    def __init__(self, registry: QueryRegistry, settings: Settings,
                 plan: Callable[[QueryCall], Awaitable[PlannedQuery]], forms: RecordForms) -> None:
        self.registry = registry
        self.settings = settings
        # Plans a query under admission, as EXPLAIN does.
        self.plan = plan
        self.forms = forms
        # Plans being planned in this process, so a cancel can stop them.
        self.tasks: dict[str, asyncio.Task] = {}

    async def submit(self, call: QueryCall) -> AsyncPlan:
        """Starts planning in the background and returns its record to poll."""
        entry = AsyncPlan(str(ULID()), call.tenant)
        await self.registry.add_plan(entry)
        task = asyncio.create_task(self._plan_in_background(entry, call), name=f"plan-{entry.plan_id}")
        self.tasks[entry.plan_id] = task
        task.add_done_callback(lambda _: self.tasks.pop(entry.plan_id, None))
        return entry

    async def status(self, plan_id: str, tenant: str | None) -> AsyncPlan:
        entry = await self.registry.plan(plan_id)
        if entry is None or (tenant is not None and entry.tenant != tenant):
            raise NotFound(f"plan {plan_id!r} does not exist")
        return entry

    async def cancel(self, plan_id: str, tenant: str | None) -> AsyncPlan:
        """Cancels a plan still being planned, on whichever replica plans it; a finished one keeps its status."""
        entry = await self.status(plan_id, tenant)
        if entry.status != "submitted":
            return entry
        entry = await self.registry.cancel_plan(plan_id) or entry
        # Planned here: stopped now. Elsewhere, its replica sees the cancel within CANCEL_POLL_SECS.
        await self._stop_planning(plan_id)
        return entry

    async def close(self) -> None:
        """At shutdown: plans being planned here get the shutdown timeout to finish, as requests in flight do, so
        a rolling restart fails none; those still planning then fail (their readers, on any replica, learn it at
        once rather than at the timeout)."""
        if self.tasks:
            await asyncio.wait(list(self.tasks.values()), timeout=self.settings.shutdown_timeout_secs)
        for plan_id, task in list(self.tasks.items()):
            try:
                await self.registry.finish_plan(AsyncPlan(plan_id, None, "failed",
                                                          problem=self.forms.problem(replica_stopped(plan_id))))
            except Exception:  # noqa: BLE001 - the plan then reads failed once its owner counts as lost
                log.exception("recording plan %s as stopped failed", plan_id)
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    async def _stop_planning(self, plan_id: str) -> None:
        task = self.tasks.get(plan_id)
        if task is not None and not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def _plan_in_background(self, entry: AsyncPlan, call: QueryCall) -> None:
        """Plans within the query timeout, so a plan still submitted past it can only be a stopped replica's;
        a cancelled plan is recorded by whoever cancelled it."""
        timeout = min(call.timeout_secs or self.settings.query_timeout_secs, self.settings.query_timeout_secs)
        problem = self.forms.problem
        try:
            async with asyncio.timeout(timeout):
                if self.settings.fault_query_plan_delay_secs:
                    await asyncio.sleep(self.settings.fault_query_plan_delay_secs)
                planned = await self.plan(call)
            entry.status, entry.plan = "completed", self.forms.plan(planned)
        except TimeoutError:
            entry.status, entry.problem = "failed", problem(
                QueryTimeout(f"plan {entry.plan_id} did not finish within its time limit of {timeout:g} s"))
        except StrataError as exc:
            entry.status, entry.problem = "failed", problem(exc)
        except Exception as exc:  # noqa: BLE001 - recorded on the plan for its reader
            log.exception("plan %s failed", entry.plan_id)
            entry.status, entry.problem = "failed", problem(PlanningFailed(f"planning failed: {type(exc).__name__}"))
        try:
            await self.registry.finish_plan(entry)
        except Exception:  # noqa: BLE001 - the plan then reads failed once its owner counts as lost
            log.exception("recording the end of plan %s failed", entry.plan_id)
