"""Prometheus metrics of maintenance skips (`skips.py`), in the /metrics of each API that runs maintenance passes:
built with its services and handed to its passes in their `PassRecorder`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class MaintenanceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        # `reason` is the exception's class, never its message: a bounded label set.
        self.skipped = Counter("strata_maintenance_skipped", "Entries a maintenance pass skipped, each time it did",
                               ["pass", "reason"], registry=registry)
        self.recorded = Gauge("strata_maintenance_skips_recorded",
                              "Entries currently recorded as skipped (GET /v1/maintenance/skips), per pass",
                              ["pass"], registry=registry)
