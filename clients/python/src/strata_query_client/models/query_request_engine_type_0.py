from enum import StrEnum


class QueryRequestEngineType0(StrEnum):
    LOCAL = "local"
    SPARK = "spark"

    def __str__(self) -> str:
        return str(self.value)
