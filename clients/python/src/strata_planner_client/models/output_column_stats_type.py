from enum import StrEnum


class OutputColumnStatsType(StrEnum):
    F64 = "f64"
    I64 = "i64"
    NULL = "null"
    STRING = "string"
    U64 = "u64"

    def __str__(self) -> str:
        return str(self.value)
