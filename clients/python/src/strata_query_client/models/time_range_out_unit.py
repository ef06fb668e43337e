from enum import StrEnum


class TimeRangeOutUnit(StrEnum):
    MICROSECONDS = "microseconds"
    SECONDS = "seconds"

    def __str__(self) -> str:
        return str(self.value)
