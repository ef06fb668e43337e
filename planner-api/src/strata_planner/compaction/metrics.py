"""Prometheus metrics of compaction: the backlog by status, job durations, bytes merged and written, write
amplification per index (how many times, on average, the bytes now published have been written:
sum(size * (1 + num_merge_ops)) / sum(size) over published splits), and compaction debt per index (the same
measure as GET /v1/indexes/{id}/debt). Every replica refreshes them (reads only, `web/singleton.py` says why); the
sampled history is a pass of its own, run once across the replicas (`debt.sample_debts`)."""

from __future__ import annotations

from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.domain.index_uid import split_index_uid
from strata_core.domain.job_statuses import JobStatus
from strata_metastore.compaction_repository import CompactionRepository
from strata_metastore.delete_repository import DeleteRepository
from strata_metastore.repositories import SplitRepository
from strata_planner.compaction.debt import measure_debts
from strata_planner.compaction.publish import PublishedMerge
from strata_planner.compaction.schemas import LevelDebtOut


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

        # Merges as they publish, per index: the rate compaction pays its debt at.
        self.merges = Counter("strata_compaction_merges", "Merges published", ["index_id"], registry=registry)
        self.merged_rows = Counter("strata_compaction_merged_rows", "Rows of the inputs of published merges",
                                   ["index_id"], registry=registry)
        self.first_merge_delay = Histogram(
            "strata_compaction_debt_first_merge_delay_seconds",
            "From an ingested split's creation to the merge that first consumes it", ["index_id"],
            registry=registry, buckets=(5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600, 86400, 172800))

        # Debt per index, refreshed with the rest (`measure_debts`).
        self.debt_splits = Gauge("strata_compaction_debt_splits", "Published splits the merge policy would still "
                                 "merge, by level", ["index_id", "level"], registry=registry)
        self.debt_bytes = Gauge("strata_compaction_debt_bytes", "Bytes of the splits waiting for a merge, by level",
                                ["index_id", "level"], registry=registry)
        self.debt_oldest_split = Gauge("strata_compaction_debt_oldest_split_age_seconds",
                                       "Age of the oldest split waiting for a merge (0: none)", ["index_id"],
                                       registry=registry)
        self.debt_closed_windows = Gauge("strata_compaction_debt_closed_windows_not_final",
                                         "Closed windows still holding a merge", ["index_id"], registry=registry)
        self.debt_oldest_closed_window = Gauge("strata_compaction_debt_oldest_closed_window_age_seconds",
                                               "Since the oldest closed window still holding a merge closed (0: none)",
                                               ["index_id"], registry=registry)

        # Row-level deletes (README "Deletes"): what is waiting and what was removed, across indexes.
        self.deletes = Gauge("strata_deletes", "Row-level deletes by status (pending: accepted, no rewrite yet; "
                             "running: rewrites under way; failed: a rewrite job was excluded; cancelled: cancelled "
                             "before any rewrite published)", ["status"], registry=registry)
        self.delete_rows_removed = Gauge("strata_delete_rows_removed", "Rows removed by the rewrites of every "
                                         "delete so far (a sum kept in the metastore)", registry=registry)
        self.delete_oldest_pending_age = Gauge("strata_delete_oldest_pending_age_seconds",
                                               "Age of the oldest delete not yet succeeded (0: none)",
                                               registry=registry)

    def observe_retention(self, index_id: str, outcome) -> None:
        self.retention_windows.labels(index_id).inc(len(outcome.windows))
        self.retention_splits.labels(index_id).inc(outcome.splits)
        self.retention_bytes.labels(index_id).inc(outcome.bytes)

    def observe_success(self, published: PublishedMerge) -> None:
        if published.superseded_by or published.unchanged:
            return  # cancelled (a newer delete covers an input), or a rewrite that left its input as it was
        job = published.job
        index_id, _ = split_index_uid(job.index_uid)
        self.bytes_merged.inc(job.input_bytes)
        self.bytes_written.inc(job.output_bytes or 0)
        self.merges.labels(index_id).inc()
        self.merged_rows.labels(index_id).inc(job.input_rows)
        if job.first_assigned_at and job.finished_at:
            self.durations.observe((job.finished_at - job.first_assigned_at).total_seconds())
        if job.finished_at:
            for created_at in published.first_merged_created_at:
                self.first_merge_delay.labels(index_id).observe(
                    max(0.0, (job.finished_at - created_at).total_seconds()))

    async def refresh(self, sessions: async_sessionmaker[AsyncSession], now: datetime) -> None:
        async with sessions() as session:
            counts = await CompactionRepository(session).count_by_status()
            amplification = await SplitRepository(session).write_amplification()
            deletes = await DeleteRepository(session).counts()
        self.deletes.labels("pending").set(deletes.pending)
        self.deletes.labels("running").set(deletes.running)
        self.deletes.labels("failed").set(deletes.failed)
        self.deletes.labels("cancelled").set(deletes.cancelled)
        self.delete_rows_removed.set(deletes.rows_removed)
        oldest = deletes.oldest_pending_accepted_at
        self.delete_oldest_pending_age.set(0.0 if oldest is None else max(
            0.0, (now - oldest).total_seconds()))
        for status in JobStatus:
            self.jobs.labels(str(status)).set(counts.get(status, 0))
        for index_id, value in amplification:
            self.write_amplification.labels(index_id).set(value)
        debts = await measure_debts(sessions, now)
        # Cleared first: a deleted index's series, or a level now empty, go instead of keeping their last value.
        for gauge in (self.debt_splits, self.debt_bytes, self.debt_oldest_split, self.debt_closed_windows,
                      self.debt_oldest_closed_window):
            gauge.clear()
        for debt in debts:
            c = debt.compaction
            # An index without debt still has its series (level 0 at zero), so rates and alerts see it go to 0.
            for level, waiting in (c.levels or {"0": LevelDebtOut(splits=0, bytes=0)}).items():
                self.debt_splits.labels(debt.index_id, level).set(waiting.splits)
                self.debt_bytes.labels(debt.index_id, level).set(waiting.bytes)
            self.debt_oldest_split.labels(debt.index_id).set(c.oldest_waiting_split_age_secs or 0.0)
            self.debt_closed_windows.labels(debt.index_id).set(c.closed_windows_not_final)
            self.debt_oldest_closed_window.labels(debt.index_id).set(c.oldest_closed_window_not_final_age_secs or 0.0)
