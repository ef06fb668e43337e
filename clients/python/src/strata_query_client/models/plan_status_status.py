from enum import StrEnum


class PlanStatusStatus(StrEnum):
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    FAILED = "failed"
    SUBMITTED = "submitted"

    def __str__(self) -> str:
        return str(self.value)
