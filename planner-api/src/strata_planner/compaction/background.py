"""planner-api's background work: the embedded compaction runner, the garbage collector, retention, the debt
samples and the commit log's ship and checkpoint passes (once across the replicas), and the metrics refresh (in
every replica)."""

from __future__ import annotations

import os
import socket

from fastapi import FastAPI

from strata_frame.maintenance.skips import quiet_on_outage
from strata_frame.web.auth import Scope
from strata_frame.web.background import Background
from strata_frame.web.singleton import PassLeases, replica_id
from strata_frame.web.state import AppState
from strata_metastore.commit_log_passes import ship_pending, write_checkpoint
from strata_planner.compaction.debt import SAMPLE_SECS, sample_debts
from strata_planner.compaction.dependencies import planner_services_of
from strata_planner.compaction.retention import RetentionSchedule


async def start_background(app: FastAPI) -> None:
    state: AppState = app.state.strata
    services = planner_services_of(app)
    settings, sessions, clock = state.settings, services.sessions, services.clock
    background = state.background = Background(PassLeases(sessions, replica_id()),
                                              stop_timeout_secs=settings.worker_shutdown_timeout_secs + 5)
    background.once_every(settings.gc_interval_secs,
                          quiet_on_outage("gc", lambda: services.gc.collect(clock())), "gc")
    background.once_every(settings.retention_tick_secs,
                          quiet_on_outage("retention", RetentionSchedule(services.retention).tick), "retention")
    background.once_every(SAMPLE_SECS, lambda: sample_debts(sessions, clock()), "debt samples")
    background.once_every(settings.commit_log_ship_interval_secs, quiet_on_outage(
        "commit log ship", lambda: ship_pending(state.sessions, state.storage)), "commit log ship")
    background.once_every(settings.commit_log_checkpoint_interval_secs, quiet_on_outage(
        "commit log checkpoint", lambda: write_checkpoint(state.sessions, state.storage,
                                                          settings.commit_log_checkpoint_entries)),
        "commit log checkpoint")
    metrics = services.metrics
    if metrics is not None:
        background.every(10.0, lambda: metrics.refresh(sessions, clock()), "metrics refresh")
    if settings.compaction_worker_slots > 0 and state.spark is not None:
        from strata_planner.compaction.executor import merge_executor
        from strata_planner.compaction.runner import CompactionRunner

        executor = merge_executor(state.spark, settings)
        background.on_close(executor.close)
        runner = CompactionRunner(
            background.in_process_client(app, "http://planner-api"),
            worker_id=f"{socket.gethostname()}:{os.getpid()}:embedded",
            slots=settings.compaction_worker_slots, executor=executor,
            api_key=state.api_keys.add_internal_key(frozenset({Scope.WORKER})),
            poll_interval_secs=settings.compaction_poll_interval_secs,
            merge_delay_secs=settings.fault_merge_delay_secs,
            report_delay_secs=settings.fault_report_delay_secs,
            shutdown_timeout_secs=settings.worker_shutdown_timeout_secs,
            local_slots=settings.compaction_worker_local_slots, local_batch=settings.local_job_batch)
        background.run(runner.run)

