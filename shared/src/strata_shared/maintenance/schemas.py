"""Bodies of the maintenance-skips listing."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from strata_shared.maintenance.skips import MaintenancePass
from strata_shared.metastore.maintenance_models import MaintenanceSkipRow


class SkipOut(BaseModel):
    skip_id: int
    pass_name: MaintenancePass = Field(serialization_alias="pass", validation_alias="pass")
    index_id: str | None = Field(description="the index the entry belongs to (none for an entry of no index)")
    entry: str = Field(description="what was skipped: a split id, an artifact or merge output URI, an artifact "
                                   "listing's prefix, a job id, or an index uid")
    reason_class: str = Field(description="the exception's class, the `reason` label of "
                                          "strata_maintenance_skipped_total")
    reason: str = Field(description="the exception's message, credential-looking text replaced by ***")
    first_seen_at: datetime
    last_seen_at: datetime
    attempts: int = Field(description="how many passes skipped it")

    @classmethod
    def of(cls, row: MaintenanceSkipRow) -> SkipOut:
        return cls.model_validate({"skip_id": row.skip_id, "pass": row.pass_name, "index_id": row.index_id,
                                   "entry": row.entry, "reason_class": row.reason_class, "reason": row.reason,
                                   "first_seen_at": row.first_seen_at, "last_seen_at": row.last_seen_at,
                                   "attempts": row.attempts})


class SkipPage(BaseModel):
    skips: list[SkipOut]
    next_cursor: str | None = None
