"""Child process of the harness: indexer-api under uvicorn on 127.0.0.1.

Settings come as JSON in BENCH_INDEXER_SETTINGS (the harness clears STRATA_* so nothing else leaks in).
"""

from __future__ import annotations

import argparse
import json
import os

import uvicorn

from strata_indexer.app import create_app
from strata_shared.config import Settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    settings = Settings(**json.loads(os.environ["BENCH_INDEXER_SETTINGS"]))
    uvicorn.run(create_app(settings), host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
