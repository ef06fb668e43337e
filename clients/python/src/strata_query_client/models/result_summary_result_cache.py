from enum import StrEnum


class ResultSummaryResultCache(StrEnum):
    BYPASS = "bypass"
    HIT = "hit"
    MISS = "miss"

    def __str__(self) -> str:
        return str(self.value)
