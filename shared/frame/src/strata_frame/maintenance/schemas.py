"""Bodies of the maintenance listings: the entries passes skip, and the periodic passes themselves."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from strata_frame.maintenance.passes import MaintenancePass
from strata_metastore.maintenance_models import MaintenanceSkipRow


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


class BackgroundPassOut(BaseModel):
    name: str
    holder: str | None = Field(description="host:pid:start of the replica running the pass, or that ran it last")
    running: bool = Field(description="a live lease is held: the holder is running the pass now")
    lease_expires_at: datetime | None = Field(description="while running: when the lease lapses unless renewed")
    last_started_at: datetime | None
    last_finished_at: datetime | None = Field(description="before last_started_at while a run is under way, or "
                                                          "when a holder died mid-run")
    last_error: str | None = Field(description="the error of the last finished run; null when it succeeded")


class BackgroundPassList(BaseModel):
    passes: list[BackgroundPassOut]
