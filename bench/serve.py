"""Child process of the harness: indexer-api (or, with --echo, a bare ASGI app) under uvicorn on 127.0.0.1.

Settings come as JSON in BENCH_INDEXER_SETTINGS (the harness clears STRATA_* so nothing else leaks in). The
echo app reads the whole request body the way ingestion does (chunks joined into one bytes) and answers its
length: it measures the HTTP transport floor of the same uvicorn configuration and client.
"""

from __future__ import annotations

import argparse
import json
import os

import uvicorn
from fastapi import FastAPI, Request


async def echo_app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": json.dumps({"received": len(body)}).encode()})


def floor_app(kind: str, dsn: str, directory: str):
    """The floor of an ingest request (bench_ingest_cpu's `floor` part), as a FastAPI app of one route:
    `fastapi` reads the body and answers; `full` also decodes it (pyarrow.json, the index's schema), writes it as one
    Parquet file (zstd, statistics) and makes one PostgreSQL round trip (an INSERT on a pooled asyncpg connection,
    autocommit): what any ingest of a request to a file plus a catalog row costs, in this Python stack."""
    import asyncio
    import uuid
    from contextlib import asynccontextmanager
    from pathlib import Path

    import asyncpg
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    schema = pa.schema([("metric_name", pa.string()), ("service", pa.string()), ("host", pa.string()),
                        ("timestamp_secs", pa.int64()), ("value", pa.float64())])
    out = Path(directory)
    pools = {}

    @asynccontextmanager
    async def lifespan(_app):
        if kind == "full":
            pools["db"] = await asyncpg.create_pool(dsn, min_size=1, max_size=4)
            await pools["db"].execute("CREATE TABLE IF NOT EXISTS floor_files (id text PRIMARY KEY, rows int)")
        yield
        if "db" in pools:
            await pools["db"].close()

    app = FastAPI(lifespan=lifespan)

    def write(body: bytes, name: str) -> int:
        table = pj.read_json(pa.BufferReader(body), read_options=pj.ReadOptions(use_threads=False),
                             parse_options=pj.ParseOptions(explicit_schema=schema))
        pq.write_table(table, out / f"{name}.parquet", compression="zstd")
        return table.num_rows

    @app.post("/v1/indexes/{index_id}/ingest")
    async def ingest(index_id: str, request: Request) -> dict:
        body = await request.body()
        if kind == "fastapi":
            return {"rows_written": body.count(b"\n"), "rows_dropped_late": 0}
        name = uuid.uuid4().hex
        rows = await asyncio.to_thread(write, body, name)
        await pools["db"].execute("INSERT INTO floor_files VALUES ($1, $2)", name, rows)
        return {"rows_written": rows, "rows_dropped_late": 0}

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--echo", action="store_true", help="serve the bare echo app instead of indexer-api")
    parser.add_argument("--floor", choices=("fastapi", "full"), help="serve a floor app (bench_ingest_cpu)")
    args = parser.parse_args()
    if args.floor:
        app = floor_app(args.floor, os.environ.get("BENCH_FLOOR_DSN", ""), os.environ.get("BENCH_FLOOR_DIR", "."))
    elif args.echo:
        app = echo_app
    else:
        from strata_core.config import Settings
        from strata_indexer.app import create_app

        app = create_app(Settings(**json.loads(os.environ["BENCH_INDEXER_SETTINGS"])))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
