from enum import StrEnum


class TimeRangeOutSource(StrEnum):
    DEFAULT_LOOKBACK = "default_lookback"
    WHERE = "where"

    def __str__(self) -> str:
        return str(self.value)
