"""What planner-api keeps for its lifetime: its use cases, each built once in `create_app` from the sessions, the
object store, the clock and the compaction settings, and its metrics. Routes reach them through
`dependencies.planner_services`, the background work through the app that built them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.clock import Clock
from strata_core.config import CompactionSettings
from strata_core.storage import ObjectStore
from strata_frame.jobqueue.service import QueueSpec
from strata_frame.maintenance.skips import PassRecorder
from strata_planner.compaction.gc import GarbageCollector
from strata_planner.compaction.metrics import CompactionMetrics
from strata_planner.compaction.retention import Retention
from strata_planner.compaction.scheduler import compaction_queue
from strata_planner.compaction.schemas import Assignment, StatusUpdate


@dataclass(slots=True)
class PlannerServices:
    sessions: async_sessionmaker[AsyncSession]
    clock: Clock
    settings: CompactionSettings
    gc: GarbageCollector
    retention: Retention
    queue: QueueSpec[StatusUpdate, Assignment]
    # Only when the background work runs (it refreshes them); tests without it read no compaction metrics.
    metrics: CompactionMetrics | None


def build_planner_services(sessions: async_sessionmaker[AsyncSession], storage: ObjectStore, clock: Clock,
                           settings: CompactionSettings, passes: PassRecorder,
                           metrics: CompactionMetrics | None) -> PlannerServices:
    return PlannerServices(
        sessions=sessions, clock=clock, settings=settings,
        gc=GarbageCollector(sessions, storage, settings, passes),
        retention=Retention(sessions, passes, clock, None if metrics is None else metrics.observe_retention),
        queue=compaction_queue(storage, settings, passes, None if metrics is None else metrics.observe_success),
        metrics=metrics)
