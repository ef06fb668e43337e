"""How the CLI prints rows: an aligned table for people, JSON or NDJSON for scripts. One renderer for every
listing command, so `--format` means the same everywhere."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

FORMATS = ("table", "json", "ndjson")
# A cell wider than this is cut with an ellipsis in tables (the JSON formats carry every value whole).
MAX_CELL = 60


def iso_time(epoch_secs: int | None) -> str | None:
    """Epoch seconds as the RFC 3339 time (UTC) the APIs' datetimes use."""
    return None if epoch_secs is None else datetime.fromtimestamp(epoch_secs, UTC).isoformat(timespec="seconds")


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, (dict, list)):
        value = json.dumps(value, separators=(",", ":"), default=str)
    text = str(value).replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], out: TextIO | None = None) -> None:
    """Left-aligned text, right-aligned numbers; an empty listing says so instead of printing a lone header.
    `out` defaults to the stdout of the moment of the call (a default bound at import would miss a redirect)."""
    out = out or sys.stdout
    if not rows:
        print("(none)", file=out)
        return
    cells = [[cell(row.get(column)) for column in columns] for row in rows]
    def is_number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    present = [[row.get(column) for row in rows if row.get(column) is not None] for column in columns]
    numeric = [bool(values) and all(is_number(v) for v in values) for values in present]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        aligned = (v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True))
        return "  ".join(aligned).rstrip()

    print(line([c.upper() for c in columns]), file=out)
    for values in cells:
        print(line(values), file=out)


def emit(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], fmt: str, document: Any = None,
         out: TextIO | None = None) -> None:
    """`document` is what `json` prints (the API's whole answer, when there is one); `ndjson` prints the rows."""
    out = out or sys.stdout
    if fmt == "json":
        print(json.dumps(document if document is not None else list(rows), indent=2, default=str), file=out)
    elif fmt == "ndjson":
        ndjson(rows, out)
    else:
        table(rows, columns, out)


def ndjson(rows: Iterable[Mapping[str, Any]], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    for row in rows:
        print(json.dumps(row, separators=(",", ":"), default=str), file=out)
