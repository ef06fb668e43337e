"""The per-row JSON encoder query-api used before the column-wise one (`strata_query.execution.json_encoding`):
a dict and `json.dumps` per row. Kept as the reference the column-wise encoder is tested against
(tests/query/test_result_formats.py) and timed beside (bench.bench_json_encoding)."""

from __future__ import annotations

import json

from strata_query.execution.formats import BATCH_ROWS, CHUNK_BYTES
from strata_query.execution.json_encoding import _plain


def _reference_rows(batches):
    for batch in batches:
        names = batch.schema.names
        for offset in range(0, batch.num_rows, BATCH_ROWS):
            part = batch.slice(offset, BATCH_ROWS)
            columns = [part.column(i).to_pylist() for i in range(part.num_columns)]
            for values in zip(*columns, strict=True):
                yield {name: _plain(v) for name, v in zip(names, values, strict=True)}


def reference_ndjson(result):
    chunk = []
    for row in _reference_rows(result):
        chunk.append(json.dumps(row, separators=(",", ":")))
        if len(chunk) == BATCH_ROWS:
            yield ("\n".join(chunk) + "\n").encode()
            chunk = []
    if chunk:
        yield ("\n".join(chunk) + "\n").encode()
    if result.truncated:
        yield json.dumps({"strata_truncated": True, "row_cap": result.row_cap}, separators=(",", ":")).encode() + b"\n"


def reference_json(result, query_id, summary):
    head = {"query_id": query_id, "columns": [{"name": f.name, "type": str(f.type)} for f in result.schema]}
    parts = [json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"rows":[']
    size = len(parts[0])
    first = True
    for row in _reference_rows(result):
        part = (b"" if first else b",") + json.dumps(row, separators=(",", ":")).encode()
        first = False
        parts.append(part)
        size += len(part)
        if size >= CHUNK_BYTES:
            yield b"".join(parts)
            parts, size = [], 0
    parts.append(b'],"summary":' + json.dumps(summary(), separators=(",", ":")).encode() + b"}")
    yield b"".join(parts)
