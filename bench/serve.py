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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--echo", action="store_true", help="serve the bare echo app instead of indexer-api")
    args = parser.parse_args()
    if args.echo:
        app = echo_app
    else:
        from strata_core.config import Settings
        from strata_indexer.app import create_app

        app = create_app(Settings(**json.loads(os.environ["BENCH_INDEXER_SETTINGS"])))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
