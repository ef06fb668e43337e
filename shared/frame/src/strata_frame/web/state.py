"""What every API keeps for its lifetime: settings, the database, Spark, storage, keys, metrics. Each API's own
objects (its use cases, their metrics) are not here: its `create_app` builds them from these and hands its routes
them through a typed dependency of its own (docs/architecture.md, "Building an API")."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from strata_core.api_keys import ApiKeyRegistry
from strata_core.clock import Clock, system_clock
from strata_core.config import Settings
from strata_core.object_store_metrics import ObjectStoreMetrics
from strata_core.storage import ObjectStore
from strata_frame.spark.session import SparkSessionFactory
from strata_frame.web.background import Background


@dataclass
class AppState:
    service: str
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    spark: SparkSessionFactory | None
    storage: ObjectStore
    api_keys: ApiKeyRegistry
    registry: CollectorRegistry
    # Object-store requests and bytes by operation, for every API's /metrics.
    object_store: ObjectStoreMetrics
    # Leases, planning and GC read time here, so tests can move it by hand.
    clock: Clock = system_clock
    background: Background | None = None
