"""What query-api keeps between requests: the planning caches, the queries running on Spark (so DELETE can
interrupt them), asynchronous plans, and the query metrics."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram

from strata_query.planning.caches import ArtifactCache, FooterCache, TotalsCache
from strata_query.planning.schemas import PlanStatus
from strata_shared.storage import ObjectStore

MAX_PLANS = 1000


@dataclass
class RunningQuery:
    query_id: str
    tenant: str | None
    started: float = field(default_factory=time.monotonic)
    cancelled: bool = False


@dataclass
class AsyncPlan:
    status: PlanStatus
    tenant: str | None
    task: asyncio.Task | None = None


class QueryMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.latency = Histogram("strata_query_phase_seconds", "Query latency by phase", ["phase"],
                                 registry=registry, buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                                             10, 30, 60, 300))
        self.pruned = Counter("strata_query_pruned_total", "Files and row groups removed, by pruning stage",
                              ["stage", "unit"], registry=registry)
        self.bytes_scanned = Counter("strata_query_bytes_scanned_total", "Bytes of column chunks read by queries",
                                     registry=registry)
        self.rows_scanned = Counter("strata_query_rows_scanned_total", "Rows in the row groups queries read",
                                    registry=registry)
        self.outcomes = Counter("strata_query_total", "Queries by outcome", ["outcome"], registry=registry)

    def observe_plan(self, plan) -> None:
        for stage in plan.stages:
            self.pruned.labels(stage.stage, "files").inc(stage.files_before - stage.files_after)
            self.pruned.labels(stage.stage, "row_groups").inc(stage.row_groups_before - stage.row_groups_after)


class QueryRuntime:
    def __init__(self, storage: ObjectStore, registry: CollectorRegistry) -> None:
        self.artifacts = ArtifactCache(storage)
        self.footers = FooterCache(storage)
        self.totals = TotalsCache(ttl_secs=30.0)
        self.running: dict[str, RunningQuery] = {}
        self.plans: OrderedDict[str, AsyncPlan] = OrderedDict()
        self.metrics = QueryMetrics(registry)

    def remember_plan(self, plan_id: str, plan: AsyncPlan) -> None:
        self.plans[plan_id] = plan
        # Finished plans are kept for their readers, the oldest dropped past the bound.
        while len(self.plans) > MAX_PLANS:
            oldest_id, oldest = next(iter(self.plans.items()))
            if oldest.task is not None and not oldest.task.done():
                break
            self.plans.pop(oldest_id)
