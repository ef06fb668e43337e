"""What indexer-api keeps for its lifetime besides the common state: the indexing-lag gauges and the ingest group
committer (the groups in flight of every scope)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import FastAPI
from prometheus_client import Histogram

from strata_indexer.indexing.lag import IndexingMetrics
from strata_indexer.ingest.group_commit import GroupCommitter
from strata_indexer.ingest.service import IngestCommitter
from strata_shared.web.state import AppState


@dataclass(frozen=True, slots=True)
class IndexerParts:
    metrics: IndexingMetrics
    ingest: IngestCommitter


async def install_parts(app: FastAPI) -> None:
    state: AppState[IndexerParts] = app.state.strata
    settings = state.settings
    group_sizes = Histogram("strata_ingest_group_requests", "Ingest requests written by one commit (group commit)",
                            buckets=(1, 2, 4, 8, 16, 32, 64, 128), registry=state.registry)
    state.parts = IndexerParts(
        metrics=IndexingMetrics(state.registry),
        ingest=GroupCommitter(enabled=settings.ingest_group_commit, max_rows=settings.ingest_group_max_rows,
                              max_bytes=settings.ingest_group_max_bytes, on_commit=group_sizes.observe),
    )
