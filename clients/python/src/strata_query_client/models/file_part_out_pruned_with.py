from enum import StrEnum


class FilePartOutPrunedWith(StrEnum):
    ARTIFACTS = "artifacts"
    PARQUET_STATISTICS = "parquet_statistics"

    def __str__(self) -> str:
        return str(self.value)
