"""Request and response bodies of the index catalog."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from strata_core.domain.index_config import IndexSettings


class IndexOut(BaseModel):
    index_id: str
    index_uid: str
    incarnation: str
    doc_mapping_uid: str
    version: int
    created_at: datetime
    updated_at: datetime
    config: IndexSettings
    # Operator state (POST .../compaction|indexing/pause|resume): when each queue was paused for the index.
    compaction_paused_at: datetime | None = None
    indexing_paused_at: datetime | None = None


class IndexPage(BaseModel):
    indexes: list[IndexOut]
    next_cursor: str | None = None
