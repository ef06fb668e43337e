"""The web console: a static page (HTML, CSS and plain JavaScript shipped in this package, nothing fetched from
elsewhere, no build step) served by the proxy at /ui. In the browser it reads the three APIs through the proxy's
/v1 routes with the key the user enters, so the page and every API share one origin and no CORS is involved."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

STATIC_DIR = Path(__file__).parent / "static"
# The page runs only its own script and style and talks only to its own origin: a key typed into it cannot be
# sent anywhere else, even by injected markup.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


class ConsoleFiles(StaticFiles):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_policy(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                                                  (b"x-content-type-options", b"nosniff"),
                                                  (b"cache-control", b"no-cache")]}
            await send(message)

        await super().__call__(scope, receive, send_with_policy)


def install_console(app: FastAPI) -> None:
    app.mount("/ui", ConsoleFiles(directory=STATIC_DIR, html=True), name="console")
