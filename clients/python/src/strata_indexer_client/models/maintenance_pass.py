from enum import StrEnum


class MaintenancePass(StrEnum):
    COMPACTION_PLANNING = "compaction-planning"
    GC = "gc"
    INDEXING_PLANNING = "indexing-planning"
    JANITOR = "janitor"
    RETENTION = "retention"

    def __str__(self) -> str:
        return str(self.value)
