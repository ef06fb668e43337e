from enum import StrEnum


class JobStatus(StrEnum):
    CANCELLED = "cancelled"
    EXCLUDED = "excluded"
    IN_PROGRESS = "in_progress"
    SUCCESS = "success"
    UNASSIGNED = "unassigned"

    def __str__(self) -> str:
        return str(self.value)
