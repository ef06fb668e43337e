"""Result serialization, chosen by the Accept header: an Arrow IPC stream, NDJSON, or one JSON document. Each
is produced batch by batch, so the response streams without holding a second copy of the result."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import math
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from strata_shared.errors import StrataError

ARROW = "application/vnd.apache.arrow.stream"
NDJSON = "application/x-ndjson"
JSON = "application/json"
BATCH_ROWS = 8192


class NotAcceptable(StrataError):
    status, slug, title = 406, "not-acceptable", "No acceptable result format"


def negotiate(accept: str | None) -> str:
    """The first of our formats the client accepts (q-values honoured in order of preference); JSON if none."""
    if not accept:
        return JSON
    offered = []
    for part in accept.split(","):
        media, *params = [p.strip() for p in part.split(";")]
        quality = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    quality = float(param[2:])
                except ValueError:
                    quality = 0.0
        offered.append((quality, media.lower()))
    for quality, media in sorted(offered, key=lambda item: -item[0]):
        if quality <= 0:
            continue
        if media in (ARROW, NDJSON, JSON):
            return media
        if media in ("*/*", "application/*"):
            return JSON
    raise NotAcceptable(f"results are available as {ARROW}, {NDJSON} or {JSON}, not {accept!r}")


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _rows(table: pa.Table) -> Iterator[dict]:
    names = table.column_names
    for batch in table.to_batches(max_chunksize=BATCH_ROWS):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for values in zip(*columns, strict=True):
            yield {name: _plain(v) for name, v in zip(names, values, strict=True)}


def arrow_stream(table: pa.Table) -> Iterator[bytes]:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=BATCH_ROWS * 8):
            writer.write_batch(batch)
            yield sink.getvalue()
            sink.seek(0)
            sink.truncate()
    yield sink.getvalue()


def ndjson_stream(table: pa.Table) -> Iterator[bytes]:
    chunk = []
    for row in _rows(table):
        chunk.append(json.dumps(row, separators=(",", ":")))
        if len(chunk) == BATCH_ROWS:
            yield ("\n".join(chunk) + "\n").encode()
            chunk = []
    if chunk:
        yield ("\n".join(chunk) + "\n").encode()


def json_stream(table: pa.Table, query_id: str, summary: dict) -> Iterator[bytes]:
    head = {"query_id": query_id, "columns": [{"name": f.name, "type": str(f.type)} for f in table.schema]}
    yield json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"rows":['
    first = True
    for row in _rows(table):
        yield (b"" if first else b",") + json.dumps(row, separators=(",", ":")).encode()
        first = False
    yield b'],"summary":' + json.dumps(summary, separators=(",", ":")).encode() + b"}"


def serialize(table: pa.Table, media: str, query_id: str, summary: dict) -> Iterator[bytes]:
    if media == ARROW:
        return arrow_stream(table)
    if media == NDJSON:
        return ndjson_stream(table)
    return json_stream(table, query_id, summary)
