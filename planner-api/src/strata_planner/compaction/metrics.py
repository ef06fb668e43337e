"""Prometheus metrics of compaction: the backlog by status, job durations, bytes merged and written, and write
amplification per index (how many times, on average, the bytes now published have been written:
sum(size * (1 + num_merge_ops)) / sum(size) over published splits)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from strata_shared.domain.jobs import JobStatus
from strata_shared.metastore.compaction_models import CompactionJobRow
from strata_shared.metastore.compaction_repository import CompactionRepository
from strata_shared.metastore.repositories import SplitRepository
from strata_shared.web.state import AppState


class CompactionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.jobs = Gauge("strata_compaction_jobs", "Compaction jobs by status (the backlog is unassigned)",
                          ["status"], registry=registry)
        self.durations = Histogram("strata_compaction_job_duration_seconds", "From first assignment to publish",
                                   registry=registry, buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800))
        self.bytes_merged = Counter("strata_compaction_input_bytes", "Bytes of input splits merged",
                                    registry=registry)
        self.bytes_written = Counter("strata_compaction_output_bytes", "Bytes of merge outputs published",
                                     registry=registry)
        self.write_amplification = Gauge("strata_compaction_write_amplification",
                                         "Average times the published bytes of an index have been written",
                                         ["index_id"], registry=registry)

        # Retention (and an operator's DELETE of windows) drops whole windows: what went, per index.
        self.retention_windows = Counter("strata_retention_windows_dropped", "Windows dropped by retention",
                                         ["index_id"], registry=registry)
        self.retention_splits = Counter("strata_retention_splits_dropped", "Splits marked for deletion by retention",
                                        ["index_id"], registry=registry)
        self.retention_bytes = Counter("strata_retention_bytes_dropped", "Bytes of splits dropped by retention",
                                       ["index_id"], registry=registry)

    def observe_retention(self, index_id: str, outcome) -> None:
        self.retention_windows.labels(index_id).inc(len(outcome.windows))
        self.retention_splits.labels(index_id).inc(outcome.splits)
        self.retention_bytes.labels(index_id).inc(outcome.bytes)

    def observe_success(self, job: CompactionJobRow) -> None:
        self.bytes_merged.inc(job.input_bytes)
        self.bytes_written.inc(job.output_bytes or 0)
        if job.first_assigned_at and job.finished_at:
            self.durations.observe((job.finished_at - job.first_assigned_at).total_seconds())

    async def refresh(self, state: AppState) -> None:
        async with state.sessions() as session:
            counts = await CompactionRepository(session).count_by_status()
            amplification = await SplitRepository(session).write_amplification()
        for status in JobStatus:
            self.jobs.labels(str(status)).set(counts.get(status, 0))
        for index_id, value in amplification:
            self.write_amplification.labels(index_id).set(value)
