"""What every API keeps for its lifetime: settings, the database, Spark, storage, keys, metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from strata_shared.config import Settings
from strata_shared.spark.session import SparkSessionFactory
from strata_shared.storage import ObjectStore
from strata_shared.web.auth import ApiKeyRegistry


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
    extras: dict[str, Any] = field(default_factory=dict)
