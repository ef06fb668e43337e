"""Sort schemas: ordered columns, each ascending or descending, with a version.

Text form: `metric_name,service,-host,timestamp_secs@v1` (a leading `-` means descending). Null ordering is fixed:
a null sorts after every value, so it comes last in an ascending column and first in a descending one. The same
comparator serves ingestion and the merge (MC-3): `compare_rows` states it on Python values, and
strata_core.domain.sort_key implements it as packed integer keys for both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COLUMN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^v[0-9]+$")
DEFAULT_SORT_SCHEMA_VERSION = "v1"


@dataclass(frozen=True, slots=True)
class SortColumn:
    name: str
    descending: bool = False

    def __str__(self) -> str:
        return f"-{self.name}" if self.descending else self.name


@dataclass(frozen=True, slots=True)
class SortSchema:
    columns: tuple[SortColumn, ...]
    version: str = DEFAULT_SORT_SCHEMA_VERSION

    @classmethod
    def parse(cls, text: str) -> SortSchema:
        """Parse the text form; raises ValueError with what is wrong."""
        body, _, version = text.strip().partition("@")
        version = version.strip() or DEFAULT_SORT_SCHEMA_VERSION
        if not _VERSION.match(version):
            raise ValueError(f"sort schema version {version!r} must look like v1")
        if not body.strip():
            raise ValueError("sort schema has no columns")
        columns: list[SortColumn] = []
        for raw in body.split(","):
            token = raw.strip()
            descending = token.startswith("-")
            name = token.lstrip("+-").strip()
            if not _COLUMN_NAME.match(name):
                raise ValueError(f"sort column {token!r} is not a valid column name")
            if any(existing.name == name for existing in columns):
                raise ValueError(f"sort column {name!r} appears twice")
            columns.append(SortColumn(name, descending))
        return cls(tuple(columns), version)

    def __str__(self) -> str:
        return ",".join(str(c) for c in self.columns) + f"@{self.version}"

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


def compare_rows(left: tuple, right: tuple, descending: list[bool]) -> int:
    """The comparator on Python values, one per sort column: -1, 0 or 1. A null is greater than every value and
    NaN greater than every number, per column direction. The reference the packed keys (sort_key) are checked
    against, and the merge's spot checks."""
    for a, b, desc in zip(left, right, descending, strict=True):
        result = _compare_values(a, b)
        if result:
            return -result if desc else result
    return 0


def _compare_values(a, b) -> int:
    if a is None or b is None:
        return 0 if a is None and b is None else (1 if a is None else -1)
    a_nan = isinstance(a, float) and a != a
    b_nan = isinstance(b, float) and b != b
    if a_nan or b_nan:
        return 0 if a_nan and b_nan else (1 if a_nan else -1)
    if a == b:
        return 0
    return -1 if a < b else 1
