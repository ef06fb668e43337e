from enum import StrEnum


class SplitState(StrEnum):
    DELETED = "deleted"
    MARKED_FOR_DELETION = "marked_for_deletion"
    PUBLISHED = "published"
    STAGED = "staged"

    def __str__(self) -> str:
        return str(self.value)
