"""The local stack supervisor behind `strata up`: embedded PostgreSQL, a Spark Connect server, the three APIs (each
as `replicas` processes) and the proxy in front of them all, each as a child bound to this process. A replica or
the proxy that exits is started again (`supervision`); everything is stopped in reverse order on Ctrl-C, SIGTERM,
a first start that fails, or the death of the Spark Connect server."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from strata_core.config import Settings
from strata_metastore import migrate
from strata_services.local import STATE_FILE
from strata_services.local.api_process import ApiProcess
from strata_services.local.keys import resolve_api_keys
from strata_services.local.postgres import EmbeddedPostgres
from strata_services.local.spark_server import LocalSparkConnectServer
from strata_services.local.supervision import (
    TICK_SECS,
    Supervisor,
    clear_restart_requests,
    take_restart_requests,
    write_json_atomically,
)
from strata_services.proxy.routes import APIS

log = logging.getLogger("strata.stack")
# Replica i (from 0) of an API listens on the API's port + 10 * i: 8001, 8011, 8021 for planner-api, 8002, 8012
# for indexer-api, 8003, 8013 for query-api (and 8004, 8014 for its Flight SQL), clear of each other's for up to ten
# replicas.
REPLICA_PORT_STRIDE = 10
# The proxy's environment variable naming each API's replicas.
_UPSTREAM_VARIABLES = {"planner-api": "STRATA_PLANNER_UPSTREAMS", "indexer-api": "STRATA_INDEXER_UPSTREAMS",
                       "query-api": "STRATA_QUERY_UPSTREAMS"}


def replica_label(api: str, replica: int) -> str:
    """The first replica carries the API's name, the others a number (`query-api`, `query-api-2`), as the
    services of compose.yaml do."""
    return api if replica == 0 else f"{api}-{replica + 1}"


def _flight_port(settings: Settings, api: str, replica: int) -> int | None:
    """query-api's replica i serves Flight SQL on STRATA_FLIGHT_PORT + 10 * i, as its HTTP port is offset. None
    for the other APIs, and when the setting is 0 (each replica picks a free port, known only to itself)."""
    if api != "query-api" or not settings.flight_port:
        return None
    return settings.flight_port + REPLICA_PORT_STRIDE * replica


def _user_upstreams(settings: Settings, api: str) -> str | None:
    """What the user set to name an API's replicas, if anything."""
    return {"planner-api": settings.planner_upstreams or settings.planner_url,
            "indexer-api": settings.indexer_upstreams or settings.indexer_url,
            "query-api": settings.query_upstreams}[api]


@dataclass
class LocalStack:
    settings: Settings
    replicas: int = 1
    postgres: EmbeddedPostgres | None = None
    spark: LocalSparkConnectServer | None = None
    apis: list[ApiProcess] = field(default_factory=list)
    database_url: str = ""
    spark_remote: str = ""
    keys_json: str = ""
    keys_source: str = ""
    # Told each step as it completes, and every few seconds while Spark starts (the longest wait): `strata up`
    # prints them so a first start (a JVM, maybe a minute on a small machine) never looks hung.
    report: Callable[[str], None] = lambda _: None
    supervisor: Supervisor | None = None
    _started_at: float = field(default_factory=time.monotonic)

    @property
    def home(self) -> Path:
        return self.settings.home

    def start(self) -> None:
        if self.replicas < 1:
            raise ValueError("a stack runs at least one replica of each API")
        self.home.mkdir(parents=True, exist_ok=True)
        clear_restart_requests(self.home)
        self.keys_json, self.keys_source = resolve_api_keys(self.settings)
        self._start_database()
        self._step(f"postgresql ready, metastore migrated ({self.database_url.split('@')[-1].split('?')[0]})")
        self._start_spark()
        env = {
            "STRATA_DATABASE_URL": self.database_url,
            "STRATA_SPARK_REMOTE": self.spark_remote,
            "STRATA_STORAGE_URI": self.settings.resolved_storage_uri,
            "STRATA_API_KEYS": self.keys_json,
            "STRATA_HOME": str(self.home),
            "STRATA_LOG_FORMAT": self.settings.log_format,
        }
        s = self.settings
        base_ports = {"planner-api": s.planner_port, "indexer-api": s.indexer_port, "query-api": s.query_port}
        replicas = [ApiProcess(api, s.host, base_ports[api] + REPLICA_PORT_STRIDE * i, env, self.home / "logs",
                               replica_label(api, i), flight_port=_flight_port(s, api, i))
                    for api in APIS for i in range(self.replicas)]
        # The proxy fronts every replica, unless the user named an API's upstreams: then those, as they are.
        proxy_env = {**env, **{_UPSTREAM_VARIABLES[api]: ",".join(r.url for r in replicas if r.name == api)
                               for api in APIS if not _user_upstreams(s, api)}}
        self.apis = [*replicas, ApiProcess("proxy", s.host, s.proxy_port, proxy_env, self.home / "logs")]
        for api in self.apis:
            api.start()
        for api in self.apis:
            api.wait_healthy()
        if self.replicas == 1:
            self._step("planner-api, indexer-api, query-api and proxy answer /healthz")
        else:
            self._step(f"{self.replicas} replicas each of planner-api, indexer-api and query-api, and the proxy, "
                       f"answer /healthz")
        if self.spark is not None:
            version = self.spark.wait_ready(timeout=180, waiting=lambda secs: self._step(
                f"waiting for the Spark Connect server to answer ({secs:.0f}s so far)"))
            self._step(f"spark connect {version} ready at {self.spark_remote}")
        self.supervisor = Supervisor(self.apis, self._stop_timeout_secs(), report=self._step)
        self._write_state()

    def _step(self, what: str) -> None:
        self.report(f"  [{time.monotonic() - self._started_at:5.1f}s] {what}")

    def _start_database(self) -> None:
        if self.settings.database_url:
            self.database_url = self.settings.database_url
        else:
            self.postgres = EmbeddedPostgres(self.home / "pgdata")
            self.postgres.start()
            self.database_url = self.postgres.ensure_database("strata")
        migrate.upgrade(self.database_url)

    def _start_spark(self) -> None:
        if self.settings.spark_remote:
            self.spark_remote = self.settings.spark_remote
            return
        s = self.settings
        self.spark = LocalSparkConnectServer(s.spark_port, s.host, s.spark_master, s.spark_driver_memory,
                                             work_dir=self.home / "spark")
        self.spark.start()
        self.spark_remote = self.spark.remote

    def urls(self) -> dict[str, str]:
        urls = {api.label: api.url for api in self.apis}
        urls.update({f"{api.label} flight sql": api.flight_url for api in self.apis if api.flight_url})
        urls["spark-connect"] = self.spark_remote
        urls["postgresql"] = self.database_url.split("@")[-1] if "@" in self.database_url else self.database_url
        return urls

    def _write_state(self) -> None:
        # `urls` names each API's first replica by the API's name (what the CLI calls); `processes` lists every
        # process, which `strata status` asks and `strata down` waits for, with what the supervisor did to it
        # (`Supervised.as_state`): its pid is null while it waits to be started again.
        supervised = self.supervisor.children if self.supervisor is not None else {}
        # The embedded database's URL, for `strata metastore` (an external one is the operator's own setting).
        embedded_database = {} if self.settings.database_url else {"database_url": self.database_url}
        state = {"pid": os.getpid(), "urls": self.urls(), "storage": self.settings.resolved_storage_uri,
                 **embedded_database,
                 "keys": self.keys_source, "replicas": self.replicas, "supervised": self.supervisor is not None,
                 "processes": [{"label": api.label, "serves": api.name, "url": api.url, "pid": api.pid,
                                "flight_url": api.flight_url,
                                **(supervised[api.label].as_state() if api.label in supervised else {})}
                               for api in self.apis]}
        write_json_atomically(self.home / STATE_FILE, json.dumps(state, indent=2))

    def wait(self, stop_event: threading.Event) -> str:
        """Keep the children running until asked to stop or the Spark Connect server dies; returns why."""
        while not stop_event.wait(TICK_SECS):
            if self.spark is not None and not self.spark.running():
                return f"spark connect server exited unexpectedly:\n{self.spark.log_tail()}"
            if self.supervisor is None:
                continue
            changed = False
            for label in take_restart_requests(self.home):
                if self.supervisor.request_restart(label):
                    changed = True
                else:
                    log.warning("restart requested for %r, which this stack does not run", label)
            if self.supervisor.tick() or changed:
                self._write_state()
        return "stop requested"

    def _stop_timeout_secs(self) -> float:
        """How long a process may take to stop after SIGTERM before it is killed: its drain grace, the time its
        requests in flight get, and its lifespan's end."""
        return self.settings.drain_grace_secs + self.settings.shutdown_timeout_secs + 15.0

    def stop(self) -> None:
        # The proxy first, so no new request comes in; then every replica at once, so their drains overlap.
        timeout = self._stop_timeout_secs()
        proxies = [api for api in self.apis if api.name == "proxy"]
        replicas = [api for api in self.apis if api.name != "proxy"]
        for group in (proxies, replicas):
            for api in group:
                try:
                    api.terminate()
                except Exception:  # noqa: BLE001 - keep stopping the rest
                    log.exception("stopping %s", api.label)
            for api in group:
                api.wait_stopped(timeout)
        if self.spark is not None:
            self.spark.stop()
        if self.postgres is not None:
            self.postgres.stop()
        (self.home / STATE_FILE).unlink(missing_ok=True)


def install_stop_signals(stop_event: threading.Event) -> None:
    def handler(signum, _frame) -> None:
        stop_event.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
