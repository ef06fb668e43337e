"""Attribute columns an index declares beyond its signal's default schema: a field named after an attribute key,
dots as underscores (`http_route` for `http.route`), gets that record attribute's value when its type fits the
field's (a string for `string`, an integer for `i64`, a number for `f64`, a boolean for `bool`), else null. The
attribute stays in the `attributes` JSON as well, so the record is kept whole whatever an index promotes.

Which attributes become columns is so a property of the index: create it with the default schema's fields plus
the promoted ones, and send with `X-Strata-Index`.
"""

from __future__ import annotations

from collections.abc import Iterable

from strata_core.domain.fields import FieldType
from strata_core.domain.wire_types import INT64_MAX, INT64_MIN
from strata_indexer.otlp.values import pair, plain_of


class PromotedAttributes:
    def __init__(self, fields: dict[str, FieldType], default_columns: Iterable[str]) -> None:
        defaults = set(default_columns)
        self.types = {name: kind for name, kind in fields.items() if name not in defaults}
        self.lists: dict[str, list[object]] = {name: [] for name in self.types}

    def __bool__(self) -> bool:
        return bool(self.types)

    def add(self, attributes: Iterable[bytes]) -> None:
        """One row's values: the first attribute of each promoted column's name, when its type fits."""
        found: dict[str, object] = {}
        for kv in attributes:
            key, value = pair(kv)
            column = key.replace(".", "_")
            kind = self.types.get(column)
            if kind is None or column in found:
                continue
            found[column] = _fitting(plain_of(value), kind)
        for column, values in self.lists.items():
            values.append(found.get(column))


def _fitting(value: object, kind: FieldType) -> object:
    if kind is FieldType.STRING:
        return value if isinstance(value, str) else None
    if kind is FieldType.BOOL:
        return value if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if kind is FieldType.I64:
        return value if isinstance(value, int) and INT64_MIN <= value <= INT64_MAX else None
    if kind is FieldType.U64:
        return value if isinstance(value, int) and 0 <= value else None
    if kind is FieldType.F64:
        return float(value) if isinstance(value, int | float) else None
    if kind is FieldType.STRING_LIST:
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None
    return None
