from enum import StrEnum


class StatusUpdateStatus(StrEnum):
    FAILURE = "failure"
    IN_PROGRESS = "in_progress"
    RELEASED = "released"
    SUCCESS = "success"

    def __str__(self) -> str:
        return str(self.value)
