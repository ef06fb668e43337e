"""What indexer-api keeps for its lifetime: its use cases, each built once in `create_app` from the sessions, the
object store, the clock and its settings groups, and the gauges and histogram they feed. Routes reach their part
through their package's `dependencies` module; the background work and tests through `indexer_services_of`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Histogram
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from strata_core.clock import Clock
from strata_core.config import IndexingSettings, IngestSettings
from strata_core.storage import ObjectStore
from strata_frame.jobqueue.service import QueueSpec
from strata_frame.maintenance.skips import PassRecorder
from strata_frame.web.app import built_at_start
from strata_indexer.indexing.janitor import Janitor
from strata_indexer.indexing.lag import IndexingMetrics
from strata_indexer.indexing.scheduler import indexing_queue
from strata_indexer.indexing.schemas import IndexingAssignment, IndexingUpdate
from strata_indexer.ingest.group_commit import GroupCommitter
from strata_indexer.ingest.service import Ingest
from strata_metastore.plain_writes import PlainWrites
from strata_metastore.single_reads import SingleReads


@dataclass(frozen=True, slots=True)
class IndexerServices:
    ingest: Ingest
    janitor: Janitor
    queue: QueueSpec[IndexingUpdate, IndexingAssignment]
    # The indexing-lag gauges, refreshed by the background work.
    metrics: IndexingMetrics


def build_indexer_services(sessions: async_sessionmaker[AsyncSession], storage: ObjectStore, clock: Clock,
                           ingest: IngestSettings, indexing: IndexingSettings, passes: PassRecorder,
                           registry: CollectorRegistry,
                           measure: Callable[[str], AbstractContextManager[object]],
                           reads: SingleReads | None = None, writes: PlainWrites | None = None) -> IndexerServices:
    group_sizes = Histogram("strata_ingest_group_requests", "Ingest requests written by one commit (group commit)",
                            buckets=(1, 2, 4, 8, 16, 32, 64, 128), registry=registry)
    committer = GroupCommitter(enabled=ingest.group_commit, max_rows=ingest.group_max_rows,
                               max_bytes=ingest.group_max_bytes, on_commit=group_sizes.observe)
    return IndexerServices(
        ingest=Ingest(sessions, storage, committer, measure, reads, writes),
        janitor=Janitor(sessions, storage, indexing, passes),
        queue=indexing_queue(storage, indexing, passes, clock),
        metrics=IndexingMetrics(registry))


def indexer_services_of(app: FastAPI) -> IndexerServices:
    """The services `create_app` built for `app`."""
    return built_at_start(app, "indexer", "indexer-api")
