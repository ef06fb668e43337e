"""The embedded PostgreSQL of the local stack: a real server from the `pgserver` wheel, used when
STRATA_DATABASE_URL is unset."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from strata_core.config import set_environment_default

log = logging.getLogger("strata.local.postgres")


class EmbeddedPostgres:
    """Starts (or reuses) a pgserver cluster in `data_dir` and stops it on `stop()` and at process exit."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._server = None

    def start(self) -> None:
        # pgserver picks a runtime dir through platformdirs, which warns when XDG_RUNTIME_DIR is unset.
        set_environment_default("XDG_RUNTIME_DIR", "/tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._server = pgserver.get_server(self.data_dir, cleanup_mode="stop")
        log.info("embedded postgresql running in %s", self.data_dir)

    def url(self, database: str = "postgres") -> str:
        """An asyncpg URL; pgserver listens on a unix socket in its runtime directory."""
        if self._server is None:
            raise RuntimeError("embedded postgres is not started")
        uri = self._server.get_uri(database)
        return uri.replace("postgresql://", "postgresql+asyncpg://", 1)

    def ensure_database(self, name: str) -> str:
        if self._server is None:
            raise RuntimeError("embedded postgres is not started")
        exists = self._server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")
        if "(1 row)" not in exists:
            self._server.psql(f'CREATE DATABASE "{name}";')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        if self._server is not None:
            self._server.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE);')

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.cleanup()
