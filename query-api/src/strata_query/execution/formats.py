"""Result serialization, chosen by the Accept header: an Arrow IPC stream, NDJSON, or one JSON document. Each is
produced batch by batch as the engine delivers them, so a response never holds the whole result."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from strata_core.errors import StrataError
from strata_query.execution.json_encoding import encode_rows, joined, text_offsets
from strata_query.execution.result_stream import ResultStream

ARROW = "application/vnd.apache.arrow.stream"
NDJSON = "application/x-ndjson"
JSON = "application/json"
BATCH_ROWS = 8192
CHUNK_BYTES = 64 * 1024


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


def _parts(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for offset in range(0, batch.num_rows, BATCH_ROWS):
            yield batch.slice(offset, BATCH_ROWS)


def arrow_stream(result: ResultStream) -> Iterator[bytes]:
    """An Arrow IPC stream; a result cut at the row cap ends with an empty batch whose custom metadata says so
    (`strata.truncated: true`, `strata.row_cap: N`)."""
    sink = io.BytesIO()
    with ipc.new_stream(sink, result.schema) as writer:
        for batch in result:
            writer.write_batch(batch)
            yield sink.getvalue()
            sink.seek(0)
            sink.truncate()
        if result.truncated:
            writer.write_batch(pa.RecordBatch.from_pylist([], schema=result.schema), custom_metadata={
                "strata.truncated": "true", "strata.row_cap": str(result.row_cap)})
    yield sink.getvalue()


def ndjson_stream(result: ResultStream) -> Iterator[bytes]:
    """One JSON object per row; a result cut at the row cap ends with one more line,
    `{"strata_truncated": true, "row_cap": N}`, which no row can be (rows are objects of the query's columns).
    Chunks of BATCH_ROWS lines; the rows are encoded a column at a time (json_encoding)."""
    chunk: list[bytes] = []
    count = 0
    for part in _parts(result):
        lines = encode_rows(part, suffix="\n")
        start = 0
        while start < len(lines):
            stop = min(len(lines), start + BATCH_ROWS - count)
            chunk.append(joined(lines, start, stop))
            count += stop - start
            start = stop
            if count == BATCH_ROWS:
                yield b"".join(chunk)
                chunk, count = [], 0
    if chunk:
        yield b"".join(chunk)
    if result.truncated:
        yield json.dumps({"strata_truncated": True, "row_cap": result.row_cap}, separators=(",", ":")).encode() + b"\n"


def json_stream(result: ResultStream, query_id: str, summary: Callable[[], dict]) -> Iterator[bytes]:
    """One document: the columns, the rows, then a summary written after the last row (rows, whether the cap cut
    the result, timings)."""
    head = {"query_id": query_id, "columns": [{"name": f.name, "type": str(f.type)} for f in result.schema]}
    # Rows are gathered into chunks of about CHUNK_BYTES: the server pulls each chunk from a worker thread, and a
    # chunk per row made a small result cost a thread hop per row. A chunk ends with the row that takes it to
    # CHUNK_BYTES or more.
    parts = [json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"rows":[']
    size = len(parts[0])
    first = True
    for part in _parts(result):
        rows = encode_rows(part, prefix=",")  # every row after a comma; the document's first row without it
        if not len(rows):
            continue
        skip = 1 if first else 0
        first = False
        offsets = text_offsets(rows)
        ends = offsets[1:].astype(np.int64) - (offsets[0] + skip)  # bytes from the part's start to each row's end
        start, before = 0, 0
        while start < len(rows):
            stop = int(np.searchsorted(ends, before + CHUNK_BYTES - size, side="left"))
            if stop >= len(rows):
                parts.append(joined(rows, start, len(rows))[skip:])
                size += int(ends[-1]) - before
                break
            parts.append(joined(rows, start, stop + 1)[skip:])
            yield b"".join(parts)
            parts, size, skip = [], 0, 0
            start, before = stop + 1, int(ends[stop])
    parts.append(b'],"summary":' + json.dumps(summary(), separators=(",", ":")).encode() + b"}")
    yield b"".join(parts)


def serialize(result: ResultStream, media: str, query_id: str, summary: Callable[[], dict]) -> Iterator[bytes]:
    if media == ARROW:
        return arrow_stream(result)
    if media == NDJSON:
        return ndjson_stream(result)
    return json_stream(result, query_id, summary)
