"""How `strata serve` runs one process under uvicorn, with the rolling-restart drain (README "Replicas and rolling
restarts"): on SIGTERM the process first drains, then shuts down.

1. At once: /readyz answers 503 `draining` (`strata_frame.web.health.Drain`); /healthz still answers 200, and
   requests, new or in flight (streamed query results too), are served as before.
2. For `drain_grace_secs`, a bit over the proxy's health-check interval: the proxy sees `draining` and stops
   sending new requests before the listener closes, so no caller meets a closed port.
3. uvicorn's graceful shutdown: the listener closes, idle kept-alive connections are closed, requests in flight get
   `shutdown_timeout_secs` to finish (then they are cancelled), the lifespan shutdown stops background work, and
   the process exits.

A second SIGTERM, or SIGINT (Ctrl-C), skips what is left of the grace: uvicorn's own shutdown starts at once."""

from __future__ import annotations

import logging
import signal
import time
from types import FrameType

import uvicorn
from fastapi import FastAPI

from strata_core.config import Settings
from strata_frame.web.health import Drain

log = logging.getLogger("strata.serve")


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, drain: Drain, grace_secs: float) -> None:
        super().__init__(config)
        self.drain = drain
        self.grace_secs = grace_secs
        self._grace_ends: float | None = None
        self._announced = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Runs as a signal handler, between two bytecodes of the event loop's thread: it only records the time.
        if sig == signal.SIGTERM and self._grace_ends is None and not self.should_exit:
            self.drain.begin()
            self._grace_ends = time.monotonic() + self.grace_secs
            return
        super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        # uvicorn's main loop ticks every 0.1 s; the grace ends at the first tick past it.
        if self._grace_ends is not None:
            if not self._announced:
                self._announced = True
                log.info("SIGTERM: draining (/readyz answers 503 draining) for %.1f s, then shutting down with "
                         "%.1f s for requests in flight", self.grace_secs, self.config.timeout_graceful_shutdown)
            if time.monotonic() >= self._grace_ends:
                self.should_exit = True
        return await super().on_tick(counter)


def serve(app: FastAPI, host: str, port: int, settings: Settings) -> None:
    """Serves `app` until SIGTERM (drained) or SIGINT. `app.state.drain` is the flag its /readyz reads."""
    # log_config=None: uvicorn's lines go through the handler configure_logging installed, in its format.
    config = uvicorn.Config(app, host=host, port=port, log_level="info", log_config=None,
                            timeout_graceful_shutdown=settings.shutdown_timeout_secs)
    DrainingServer(config, app.state.drain, settings.drain_grace_secs).run()
