"""The Spark Connect session factory used by every service.

Each service owns one factory per remote (built from `Settings.spark_remote` in its app factory). The client
session is created on first use, not at import or app start, so an app can start and report "not ready" while
Spark is still booting. This module stays free of FastAPI and SQLAlchemy: it is imported by services and tests
alike.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import socket
import threading
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from strata_core.config import Settings
from strata_frame.spark.bundle import JobBundle, build_job_bundle, ship_job_bundle
from strata_frame.spark.pyspark_imports import pyspark_module

if TYPE_CHECKING:
    # pyspark's Connect client imports pandas: seconds of CPU at every process start, which the proxy and a
    # replica that has not met Spark yet need not pay. It is imported where a session is made.
    from pyspark.sql.connect.session import SparkSession

log = logging.getLogger("strata.spark")

_DEFAULT_PORT = 15002
_STOP_TIMEOUT = 5.0
# Set on every session before it is handed out (again on a session re-created after a server restart). Queries run
# users' SQL on these sessions: with SQL on files, `SELECT * FROM parquet.`/any/path`` reads whatever the server
# can, another tenant's splits included. Strata's own jobs read files through DataFrames, which this leaves alone.
SESSION_CONF = {"spark.sql.runSQLOnFiles": "false"}


def parse_remote(remote: str) -> tuple[str, int]:
    """(host, port) of a Spark Connect URL such as `sc://127.0.0.1:15002/;token=...`."""
    if not remote.startswith("sc://"):
        raise ValueError(f"spark remote must start with sc://, got {remote!r}")
    parsed = urllib.parse.urlparse("http" + remote[2:])
    if not parsed.hostname:
        raise ValueError(f"spark remote has no host: {remote!r}")
    return parsed.hostname, parsed.port or _DEFAULT_PORT


class SparkSessionFactory:
    """A thread-safe, lazily created Spark Connect session for one remote.

    Every factory gets its own client session (`builder.create()`, never `getOrCreate()`): pyspark caches a
    process-wide default session, and `getOrCreate()` would hand a second factory the first factory's session
    even when it points at a different server.

    With `bundle_dir`, every session it creates gets Strata's job bundle (`strata_frame.spark.bundle`, built
    there once per code version) before it is handed out, so jobs run on executors that have only Spark and a
    stock Python. A server that restarted has forgotten the session and its artifacts: the client then reports
    the session stopped, and the next call creates a new session and ships the bundle again.
    """

    def __init__(self, remote: str, *, bundle_dir: Path | None = None) -> None:
        self.remote = remote
        self.host, self.port = parse_remote(remote)
        self.bundle_dir = bundle_dir
        self.bundle: JobBundle | None = None
        # How often a bundle was shipped (one per session created): tests and status read it.
        self.shipments = 0
        self._lock = threading.Lock()
        # Apart from `_lock`, which a first session() holds for as long as shipping the bundle takes (seconds to
        # a minute on a loaded machine): check_ready runs on the event loop, and waiting there for `_lock` froze
        # every request and every job's lease refresh of the process until the bundle was shipped.
        self._probe_lock = threading.Lock()
        self._session: SparkSession | None = None
        self._closed = False
        # The session SESSION_CONF was last applied to (query_session).
        self._configured: SparkSession | None = None
        self._probe: concurrent.futures.Future[str] | None = None

    @classmethod
    def for_jobs(cls, settings: Settings) -> SparkSessionFactory:
        """A factory on the configured remote whose sessions carry the job bundle (what every service uses)."""
        if not settings.spark_remote:
            raise ValueError("no Spark Connect remote is configured (STRATA_SPARK_REMOTE)")
        return cls(settings.spark_remote, bundle_dir=settings.resolved_job_bundle_dir)

    def session(self) -> SparkSession:
        """The factory's Spark Connect session, created on first call (and again if it was stopped)."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"spark session factory for {self.remote} is closed")
            if self._session is None or self._session.is_stopped:
                builder = pyspark_module("pyspark.sql.connect.session").SparkSession.builder
                session = builder.remote(self.remote).create()
                if self.bundle_dir is not None:
                    try:
                        self._ship(session)
                    except BaseException:
                        _stop_quietly(session, self.host, self.port)
                        raise
                self._session = session
            return self._session

    def query_session(self) -> SparkSession:
        """The session with SESSION_CONF applied, once per session: what users' SQL runs on. Applied here, not
        when the session is created: creating one makes no call to the server (readiness probes and tests rely
        on that), while a query is about to call it anyway."""
        session = self.session()
        if self._configured is not session:
            for key, value in SESSION_CONF.items():
                session.conf.set(key, value)
            self._configured = session
        return session

    def require_reachable(self, timeout: float = 2.0) -> None:
        """Raise ConnectionError at once when nothing accepts connections at the remote: the client would
        otherwise retry an unreachable server for minutes before failing a request."""
        try:
            socket.create_connection((self.host, self.port), timeout=timeout).close()
        except OSError as exc:
            reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else str(exc) or repr(exc)
            raise ConnectionError(f"{self.host}:{self.port}: {reason}") from None

    def _ship(self, session: SparkSession) -> None:
        if self.bundle is None:
            self.bundle = build_job_bundle(self.bundle_dir)
        started = time.monotonic()
        ship_job_bundle(session, self.bundle)
        self.shipments += 1
        log.info("shipped job bundle %s (%.1f MB) to %s in %.2f s", self.bundle.digest,
                 self.bundle.size_bytes / 1e6, self.remote, time.monotonic() - started)

    def close(self, timeout: float = _STOP_TIMEOUT) -> None:
        """Stop the client session, waiting at most `timeout` s; later session() calls raise. Idempotent."""
        with self._lock:
            self._closed = True
            session, self._session = self._session, None
        if session is not None:
            _stop_quietly(session, self.host, self.port, timeout)

    def _probe_once(self) -> str:
        """One real round trip to the server; returns the server's Spark version."""
        session = self.session()
        try:
            return _round_trip(session)
        except Exception:
            if not session.is_stopped:
                raise
        # A restarted server makes the client close its session; session() opens a fresh one.
        return _round_trip(self.session())

    def _start_probe(self) -> concurrent.futures.Future[str]:
        """Run _probe_once() in a daemon thread; at most one probe is in flight per factory."""
        with self._probe_lock:
            if self._probe is not None and not self._probe.done():
                return self._probe
            future: concurrent.futures.Future[str] = concurrent.futures.Future()
            # Running state: a caller's timeout then cannot cancel it out from under the thread.
            future.set_running_or_notify_cancel()
            self._probe = future

        def run() -> None:
            try:
                future.set_result(self._probe_once())
            except BaseException as exc:  # handed to whoever awaits the probe
                future.set_exception(exc)

        # A daemon thread, not the default executor: the client retries an unreachable server for minutes,
        # and a stuck probe must neither block interpreter exit nor occupy a shared worker.
        threading.Thread(target=run, name=f"spark-ready-probe-{self.port}", daemon=True).start()
        return future

    # A timeout parameter on purpose (ASYNC109): a readiness probe reports a timeout, it does not raise one.
    async def check_ready(self, timeout: float) -> tuple[bool, str]:  # noqa: ASYNC109
        """Whether the remote answers a cheap real RPC within `timeout` seconds, as (ok, detail).

        Never raises: readiness endpoints turn the detail into their response body.
        """
        if self._closed:
            return False, "spark session factory is closed"
        start = time.monotonic()
        # A TCP connect first: refusals come back in milliseconds, while the client would retry for minutes.
        try:
            async with asyncio.timeout(timeout):
                _, writer = await asyncio.open_connection(self.host, self.port)
                writer.close()
                await writer.wait_closed()
        except TimeoutError:
            return False, f"spark connect {self.host}:{self.port}: connect timed out after {timeout:g}s"
        except OSError as exc:
            reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else str(exc)
            return False, f"spark connect {self.host}:{self.port} unreachable: {reason}"
        remaining = max(0.0, timeout - (time.monotonic() - start))
        probe = asyncio.wrap_future(self._start_probe())
        # After a timeout nobody awaits the probe any more; mark its outcome as seen, or asyncio logs
        # "exception was never retrieved" from a finalizer when the probe fails later.
        probe.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            async with asyncio.timeout(remaining):
                version = await asyncio.shield(probe)
        except TimeoutError:
            return False, f"spark connect {self.remote}: no answer within {timeout:g}s"
        except Exception as exc:
            return False, f"spark connect {self.remote}: {type(exc).__name__}: {_first_line(exc)}"
        return True, f"spark {version} at {self.remote}"


def _round_trip(session: SparkSession) -> str:
    # Not `session.version` alone: pyspark caches it per session (functools.cached_property), so from the
    # second call on it would answer without asking the server. A Config RPC is as cheap, always travels,
    # and notices a restarted server that no longer knows our session.
    session.conf.get("spark.sql.shuffle.partitions")
    return session.version


def _stop_quietly(session: SparkSession, host: str, port: int, timeout: float = _STOP_TIMEOUT) -> None:
    """Stop a client session without letting a dead or hung server stall the caller."""
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except OSError:
        # Nobody to release the server-side session with; skip the RPC and its retry warnings.
        session.release_session_on_close = False
    # stop() sends ReleaseSession through the client's retry policy, which keeps retrying an unreachable
    # server for ~10 minutes; shutdown paths must not wait on that.
    DefaultPolicy = pyspark_module("pyspark.sql.connect.client.retries").DefaultPolicy  # noqa: N806
    session.client.set_retry_policies([DefaultPolicy(max_retries=1, initial_backoff=50, max_backoff=200)])
    # And a server that accepts the connection but never answers would block stop() with no deadline at all.
    stopper = threading.Thread(target=session.stop, name="spark-session-stop", daemon=True)
    stopper.start()
    stopper.join(timeout)
    if stopper.is_alive():
        # Closing the channel cancels the hanging ReleaseSession (and any probe stuck on this session).
        session.client.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else repr(exc)
