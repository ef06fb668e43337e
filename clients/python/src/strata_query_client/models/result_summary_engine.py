from enum import StrEnum


class ResultSummaryEngine(StrEnum):
    LOCAL = "local"
    SPARK = "spark"

    def __str__(self) -> str:
        return str(self.value)
