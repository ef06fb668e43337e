"""Prometheus metrics of maintenance skips (`strata_shared.maintenance.skips`), in the /metrics of each API that
runs maintenance passes. Kept here, beside the app's state (`AppState.maintenance`), not in the maintenance package:
the passes use the web package's state and routes, so the web package imports nothing of theirs."""

from __future__ import annotations

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Counter, Gauge


class MaintenanceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        # `reason` is the exception's class, never its message: a bounded label set.
        self.skipped = Counter("strata_maintenance_skipped", "Entries a maintenance pass skipped, each time it did",
                               ["pass", "reason"], registry=registry)
        self.recorded = Gauge("strata_maintenance_skips_recorded",
                              "Entries currently recorded as skipped (GET /v1/maintenance/skips), per pass",
                              ["pass"], registry=registry)


async def install_maintenance_metrics(app: FastAPI) -> None:
    """A startup hook of the APIs that run maintenance passes."""
    state = app.state.strata
    state.maintenance = MaintenanceMetrics(state.registry)
