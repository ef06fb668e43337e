"""The stack every benchmark runs against: a PostgreSQL (embedded pgserver in a temporary directory, or the
server named by STRATA_DATABASE_URL), fresh databases migrated with Alembic, and indexer-api served by real
uvicorn in a subprocess on 127.0.0.1, reached over real HTTP. Everything started here is stopped by
`Stack.close()` (use it as a context manager), databases dropped and temporary files removed.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from strata_core.config import Settings
from strata_metastore import migrate

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
DATA_DIR = BENCH_DIR / ".data"


QUIET_TENANT = "quiet"


@dataclass(frozen=True)
class Keys:
    admin: str = "bench-admin-key"
    writer: str = "bench-writer-key"
    # Query keys of two tenants: "default" holds what the admin-less writer ingests, "quiet" its own partition.
    noisy: str = "bench-noisy-query-key"
    quiet: str = "bench-quiet-query-key"

    def as_json(self) -> str:
        return json.dumps({self.admin: {"scopes": ["admin"]}, self.writer: {"scopes": ["writer"]},
                           self.noisy: {"scopes": ["query"], "tenant": "default"},
                           self.quiet: {"scopes": ["query"], "tenant": QUIET_TENANT}})

    @staticmethod
    def header(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}


# Connection settings of a benchmark's bulk fill: rows written straight into the metastore are not commitments of
# the product, so they skip the commit log's capture (README, "Losing PostgreSQL"), as any bulk load must.
BULK_LOAD = {"strata.capture": "off"}


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """A DSN asyncpg.connect accepts, from a `postgresql+asyncpg://` URL."""
    return sqlalchemy_url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def _admin(url: str, statement: str) -> None:
    engine = create_async_engine(url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------------------------------------------------
# Process memory, from /proc (Linux): the peak (VmHWM) can be reset by writing 5 to clear_refs.


def _status_kib(pid: int | str, key: str) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def rss_bytes(pid: int | str = "self") -> int:
    return _status_kib(pid, "VmRSS") * 1024


def peak_rss_bytes(pid: int | str = "self") -> int:
    return _status_kib(pid, "VmHWM") * 1024


def reset_peak_rss(pid: int | str = "self") -> bool:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def _process_table() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, command name, CPU seconds so far) for every process, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                raw = handle.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        table[int(entry)] = (int(fields[1]), name, (int(fields[11]) + int(fields[12])) / ticks)
    return table


def cpu_seconds_by_tree(roots: dict[str, int], *, children_apart: bool = False) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each named process and all its live descendants: the figure a
    benchmark samples before and after a phase to say where the machine's CPU went. With `children_apart`, the
    descendants' share is also given on its own, as "NAME children"."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    out = {}
    for label, root in roots.items():
        total, stack = 0.0, [root]
        while stack:
            pid = stack.pop()
            if pid in table:
                total += table[pid][2]
                stack.extend(children.get(pid, []))
        out[label] = total
        if children_apart:
            own = table.get(root, (0, "", 0.0))[2]
            out[label] = own
            out[f"{label} children"] = total - own
    return out


# ------------------------------------------------------------------------------------------------------------


class IndexerServer:
    """indexer-api under uvicorn in a child process (`python -m bench.serve`); with echo=True, the bare ASGI
    app that only reads the body (the HTTP transport floor)."""

    def __init__(self, settings: Settings, log_path: Path, *, echo: bool = False) -> None:
        self.settings = settings
        self.echo = echo
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.base_url = ""

    def start(self, timeout: float = 60.0) -> None:
        # Every setting the harness or a benchmark set explicitly (start_indexer's overrides included), nothing else.
        payload = json.dumps(self.settings.model_dump(mode="json", exclude_unset=True))
        last_error = ""
        for _attempt in range(3):
            port = _free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
            env["BENCH_INDEXER_SETTINGS"] = payload
            log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
            try:
                self.proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "bench.serve",
                        "--port",
                        str(port),
                        *(["--echo"] if self.echo else []),
                    ],
                    cwd=REPO_ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            finally:
                log.close()
            self.base_url = f"http://127.0.0.1:{port}"
            if self._wait_ready(timeout):
                return
            last_error = self._tail_log()
            self.stop()
        raise RuntimeError(f"indexer-api did not start; log tail:\n{last_error}")

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                return False
            try:
                if httpx.get(self.base_url + "/healthz", timeout=2).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        return False

    def _tail_log(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("server not started")
        return self.proc.pid

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(
            signal.SIGINT
        )  # uvicorn shuts down gracefully (lifespan shutdown disposes the engine)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class Stack:
    """PostgreSQL + databases + indexer-api servers for one benchmark session; `close()` undoes everything."""

    def __init__(self, keep: bool = False) -> None:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        self.workdir = Path(tempfile.mkdtemp(prefix="run-", dir=DATA_DIR))
        self.keep = keep
        self.keys = Keys()
        self._embedded = None
        self._databases: list[str] = []
        self._servers: list[IndexerServer] = []
        self.admin_url = ""
        self.postgres_kind = ""

    # -- lifecycle --

    def __enter__(self) -> Stack:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        external = Settings(database_url=os.environ.get("STRATA_DATABASE_URL")).database_url
        if external:
            self.admin_url = external
            self.postgres_kind = "external (STRATA_DATABASE_URL)"
            return
        from strata_services.local.postgres import EmbeddedPostgres

        self._embedded = EmbeddedPostgres(self.workdir / "pgdata")
        self._embedded.start()
        self.admin_url = self._embedded.url("postgres")
        self.postgres_kind = "embedded (pgserver)"

    def postgres_pid(self) -> int | None:
        """The embedded server's postmaster (its backends are its children); None for an external server."""
        if self._embedded is None:
            return None
        try:
            return int((self.workdir / "pgdata" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        errors: list[BaseException] = []
        for server in reversed(self._servers):
            try:
                server.stop()
            except BaseException as exc:  # noqa: BLE001 - keep stopping the rest
                errors.append(exc)
        self._servers.clear()
        for name in self._databases:
            try:
                asyncio.run(_admin(self.admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
        self._databases.clear()
        if self._embedded is not None:
            try:
                self._embedded.stop()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
            self._embedded = None
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if errors:
            raise errors[0]

    # -- resources --

    def path(self, name: str) -> Path:
        """A directory under this run's working directory."""
        target = self.workdir / name
        target.mkdir(parents=True, exist_ok=True)
        return target

    def create_database(self, prefix: str = "strata_bench", migrated: bool = True) -> str:
        """A fresh database (migrated to head with Alembic unless told otherwise); its SQLAlchemy URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:10]}"
        asyncio.run(_admin(self.admin_url, f'CREATE DATABASE "{name}"'))
        self._databases.append(name)
        url = make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)
        if migrated:
            migrate.upgrade(url)
        return url

    def drop_database(self, url: str) -> None:
        """Drops a database of this stack before the end (a benchmark loading many in turn)."""
        name = make_url(url).database
        asyncio.run(_admin(self.admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self._databases.remove(name)

    def start_indexer(self, database_url: str, storage_root: Path, **overrides: object) -> IndexerServer:
        overrides.setdefault("storage_uri", storage_root.resolve().as_uri())
        settings = Settings(
            database_url=database_url,
            api_keys=self.keys.as_json(),
            max_ingest_bytes=1 << 30,
            home=self.path("home"),
            **overrides,
        )
        server = IndexerServer(settings, self.workdir / f"indexer-{len(self._servers)}.log")
        self._servers.append(server)
        server.start()
        return server

    def start_echo(self) -> IndexerServer:
        """The bare echo app under the same uvicorn configuration: what HTTP alone costs."""
        server = IndexerServer(Settings(), self.workdir / f"echo-{len(self._servers)}.log", echo=True)
        self._servers.append(server)
        server.start()
        return server

    def server_version(self) -> str:
        async def query() -> str:
            engine = create_async_engine(self.admin_url)
            try:
                async with engine.connect() as connection:
                    return (await connection.execute(text("SHOW server_version"))).scalar_one()
            finally:
                await engine.dispose()

        return asyncio.run(query())
