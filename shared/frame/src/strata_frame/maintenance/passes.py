"""The maintenance passes whose skipped entries are recorded, and which API lists each: plain values, so the CLI
names them without importing the passes' machinery (SQLAlchemy, storage)."""

from __future__ import annotations

import enum


class MaintenancePass(enum.StrEnum):
    GC = "gc"
    RETENTION = "retention"
    JANITOR = "janitor"
    COMPACTION_PLANNING = "compaction-planning"
    INDEXING_PLANNING = "indexing-planning"


# Where each pass's records are listed: under the path head of the API that runs it.
LISTING_HEAD = {MaintenancePass.GC: "compaction", MaintenancePass.RETENTION: "compaction",
                MaintenancePass.COMPACTION_PLANNING: "compaction", MaintenancePass.JANITOR: "indexing",
                MaintenancePass.INDEXING_PLANNING: "indexing"}
