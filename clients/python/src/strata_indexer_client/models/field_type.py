from enum import StrEnum


class FieldType(StrEnum):
    BOOL = "bool"
    F64 = "f64"
    I64 = "i64"
    STRING = "string"
    STRING_LIST = "string_list"
    TIMESTAMP = "timestamp"
    U64 = "u64"

    def __str__(self) -> str:
        return str(self.value)
