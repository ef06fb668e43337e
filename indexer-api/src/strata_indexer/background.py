"""indexer-api's background work: the embedded indexing runner, the janitor (once across the replicas), and the
refresh of the indexing-lag gauges (in every replica: they only read). It starts what `parts.py` holds, so it sits
above it, beside `app.py`."""

from __future__ import annotations

import logging
import os
import socket

from fastapi import FastAPI

from strata_indexer.services import indexer_services_of
from strata_shared.maintenance.skips import quiet_on_outage
from strata_shared.web.auth import Scope
from strata_shared.web.background import Background
from strata_shared.web.singleton import PassLeases, replica_id
from strata_shared.web.state import AppState

log = logging.getLogger("strata.indexer")


async def start_background(app: FastAPI) -> None:
    state: AppState = app.state.strata
    services = indexer_services_of(app)
    settings, sessions, clock = state.settings, state.sessions, state.clock
    background = state.background = Background(PassLeases(sessions, replica_id()),
                                              stop_timeout_secs=settings.worker_shutdown_timeout_secs + 5)
    background.once_every(settings.janitor_interval_secs,
                          quiet_on_outage("janitor", lambda: services.janitor.run(clock())), "janitor")
    background.every(10.0, lambda: services.metrics.refresh(sessions, clock()), "lag metrics")
    if settings.indexing_worker_slots > 0 and state.spark is not None:
        from strata_indexer.indexing.runner import index_build_executor, indexing_runner

        executor = index_build_executor(state.spark, settings)
        background.on_close(executor.close)
        runner = indexing_runner(background.in_process_client(app, "http://indexer-api"), executor,
                                 worker_id=f"{socket.gethostname()}:{os.getpid()}:indexer",
                                 slots=settings.indexing_worker_slots,
                                 api_key=state.api_keys.add_internal_key(frozenset({Scope.WORKER})),
                                 poll_interval_secs=settings.indexing_poll_interval_secs,
                                 shutdown_timeout_secs=settings.worker_shutdown_timeout_secs,
                                 local_slots=settings.indexing_worker_local_slots,
                                 local_batch=settings.local_job_batch)
        background.run(runner.run)

