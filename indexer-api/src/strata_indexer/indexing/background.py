"""indexer-api's background work: the embedded indexing runner, the janitor (once across the replicas), and the
indexing-lag gauges (in every replica: they only read)."""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING

from fastapi import FastAPI
from prometheus_client import Gauge

from strata_indexer.indexing.janitor import run_janitor
from strata_indexer.indexing.lag import lag_by_index
from strata_shared.maintenance.skips import quiet_on_outage
from strata_shared.web.auth import Scope
from strata_shared.web.background import Background
from strata_shared.web.singleton import PassLeases, replica_id
from strata_shared.web.state import AppState

if TYPE_CHECKING:
    from strata_indexer.parts import IndexerParts

log = logging.getLogger("strata.indexer")


class IndexingMetrics:
    """Indexing debt per index: files waiting for their artifacts and the age of the oldest, from the lag
    (`lag_by_index`, the same measure as planner-api's GET /v1/indexes/{id}/debt). The `strata_indexing_lag_*`
    names are the same two values under the names dashboards and alerts used before the debt had its own; kept
    so those still work, not a second measure."""

    def __init__(self, registry) -> None:
        self.files = Gauge("strata_indexing_debt_files", "Published files without a published artifact snapshot",
                           ["index_id"], registry=registry)
        self.oldest = Gauge("strata_indexing_debt_oldest_seconds",
                            "Age of the oldest published file without a published artifact snapshot",
                            ["index_id"], registry=registry)
        self.lag_files = Gauge("strata_indexing_lag_files", "Same as strata_indexing_debt_files (older name)",
                               ["index_id"], registry=registry)
        self.lag_oldest = Gauge("strata_indexing_lag_oldest_seconds",
                                "Same as strata_indexing_debt_oldest_seconds (older name)", ["index_id"],
                                registry=registry)

    async def refresh(self, state: AppState) -> None:
        async with state.sessions() as session:
            lags = await lag_by_index(session, state.clock())
        for files, oldest in ((self.files, self.oldest), (self.lag_files, self.lag_oldest)):
            files.clear()
            oldest.clear()
            for lag in lags:
                files.labels(lag.index_id).set(lag.files_waiting)
                oldest.labels(lag.index_id).set(lag.oldest_waiting_secs or 0.0)


async def start_background(app: FastAPI) -> None:
    state: AppState[IndexerParts] = app.state.strata
    settings = state.settings
    background = state.background = Background(PassLeases(state.sessions, replica_id()),
                                              stop_timeout_secs=settings.worker_shutdown_timeout_secs + 5)
    metrics = state.own().metrics
    background.once_every(settings.janitor_interval_secs,
                          quiet_on_outage("janitor", lambda: run_janitor(state, state.clock())), "janitor")
    background.every(10.0, lambda: metrics.refresh(state), "lag metrics")
    if settings.indexing_worker_slots > 0 and state.spark is not None:
        from strata_indexer.indexing.runner import index_build_executor, indexing_runner

        executor = index_build_executor(state.spark, settings)
        background.on_close(executor.close)
        runner = indexing_runner(background.in_process_client(app, "http://indexer-api"), executor,
                                 worker_id=f"{socket.gethostname()}:{os.getpid()}:indexer",
                                 slots=settings.indexing_worker_slots,
                                 api_key=state.api_keys.add_internal_key(frozenset({Scope.WORKER})),
                                 poll_interval_secs=settings.indexing_poll_interval_secs,
                                 shutdown_timeout_secs=settings.worker_shutdown_timeout_secs)
        background.run(runner.run)

