"""The identity of one incarnation of an index: `index_uid = "{index_id}:{incarnation}"`.

Each creation of an index gets a new incarnation (a ULID), so deleting and re-creating a name never mixes old and
new splits. An index id never holds a colon (`wire_types.INDEX_ID_PATTERN`), so the first colon separates the two.
"""

from __future__ import annotations

SEPARATOR = ":"


def make_index_uid(index_id: str, incarnation: str) -> str:
    return f"{index_id}{SEPARATOR}{incarnation}"


def split_index_uid(index_uid: str) -> tuple[str, str]:
    """(index_id, incarnation); raises ValueError when `index_uid` has no separator."""
    index_id, separator, incarnation = index_uid.partition(SEPARATOR)
    if not separator:
        raise ValueError(f"index uid {index_uid!r} is not of the form index_id{SEPARATOR}incarnation")
    return index_id, incarnation
