"""The proxy's HTTP/1.1 client for its upstreams: connections kept alive per upstream, responses parsed by
httptools (llhttp, the parser uvicorn serves requests with), bodies relayed as they arrive, with back-pressure
both ways.

Why not httpx: forwarding a small query through httpx cost the proxy about 0.6 ms CPU of its 2.4 ms per request,
its largest single part, against under 0.1 ms for the same exchange on a bare asyncio connection
(docs/benchmarks.md, "Interactive latency"). The proxy needs only a narrow client: absolute targets on known
upstreams, bodies as bytes or a stream, no redirects, cookies or authentication of its own."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httptools

# A response body is read ahead at most this far before reading from the upstream pauses until the client takes it.
_READ_AHEAD_BYTES = 1024 * 1024
# Idle connections older than this are not reused: uvicorn closes a kept-alive connection after 5 s, and reusing
# one it is closing would fail the request.
DEFAULT_IDLE_SECS = 4.0
_IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}


class UpstreamError(Exception):
    """The upstream could not be reached, or broke off its answer; the message names how."""


class UpstreamUnreachable(UpstreamError):
    """No connection to the upstream could be made, so nothing of the request reached it on one (a streamed body
    was not even read). Only a replayable request was tried before on a kept-alive connection that turned out
    closed (see `UpstreamPool.request`). Either way the request can go to another replica."""


class _Connection(asyncio.Protocol):
    """One kept-alive connection: the protocol side of asyncio's transport and the parser's callbacks."""

    def __init__(self, key: tuple[str, str, int]) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._writable = asyncio.Event()
        self._writable.set()
        self._changed: asyncio.Future[None] | None = None
        self._reset()

    def _reset(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.complete = False
        self.received_any = False
        self.error: BaseException | None = None
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.reading_paused = False
        self.request_cut = False
        self.keep_alive = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received_any = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(UpstreamError(f"its answer is not valid HTTP: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._writable.set()
        if not self.complete:
            self._fail(UpstreamError(f"it closed the connection{f': {exc}' if exc else ''}"))

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if self.status >= 200:
            self.head_done = True
            self._wake()
        else:
            # An interim answer (100 Continue, 103 Early Hints): the real one follows on the same connection.
            self.headers = []

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > _READ_AHEAD_BYTES and not self.reading_paused and self.transport is not None:
            self.transport.pause_reading()
            self.reading_paused = True
        self._wake()

    def on_message_complete(self) -> None:
        if self.head_done:
            self.complete = True
            # Asked here: once the message is over, the parser no longer knows.
            self.keep_alive = self.parser.should_keep_alive()
            self._wake()

    # the client side
    def _fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)

    async def changed(self) -> None:
        self._changed = asyncio.get_running_loop().create_future()
        try:
            await self._changed
        finally:
            self._changed = None

    def take(self) -> bytes | None:
        if not self.chunks:
            return None
        chunk = self.chunks.popleft()
        self.buffered -= len(chunk)
        if self.reading_paused and self.buffered <= _READ_AHEAD_BYTES // 2 and self.transport is not None:
            self.transport.resume_reading()
            self.reading_paused = False
        return chunk

    async def write(self, data: bytes) -> None:
        if self.closed or self.transport is None:
            raise UpstreamError("it closed the connection while the request was being sent")
        self.transport.write(data)
        if not self._writable.is_set():
            await self._writable.wait()

    def reusable(self) -> bool:
        return (self.complete and not self.closed and not self.request_cut and self.keep_alive
                and not self.chunks)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class UpstreamResponse:
    """An upstream's answer: status and headers at once, the body as it arrives. Close it (`aclose`) however it
    is used: the connection goes back to the pool only when the whole body was read."""

    def __init__(self, pool: UpstreamPool, connection: _Connection) -> None:
        self._pool = pool
        self._connection = connection
        self.status = connection.status
        self.headers = connection.headers
        self._done = False

    def header(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    @property
    def content_length(self) -> int | None:
        value = self.header(b"content-length")
        return int(value) if value is not None and value.isdigit() else None

    async def chunks(self) -> AsyncIterator[bytes]:
        connection = self._connection
        while True:
            while (chunk := connection.take()) is not None:
                yield chunk
            if connection.complete:
                return
            if connection.error is not None:
                raise UpstreamError(f"it broke off its answer: {connection.error}")
            await connection.changed()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def aclose(self) -> None:
        if self._done:
            return
        self._done = True
        self._pool.release(self._connection)


class UpstreamPool:
    """Kept-alive connections to each upstream (scheme, host, port)."""

    def __init__(self, connect_timeout_secs: float = 10.0, idle_secs: float = DEFAULT_IDLE_SECS,
                 max_idle_per_upstream: int = 32) -> None:
        self.connect_timeout_secs = connect_timeout_secs
        self.idle_secs = idle_secs
        self.max_idle = max_idle_per_upstream
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._tls: ssl.SSLContext | None = None

    async def request(self, method: str, base_url: str, target: str, headers: list[tuple[bytes, bytes]],
                      body: bytes | AsyncIterator[bytes] | None = None, *, replayable: bool | None = None
                      ) -> UpstreamResponse:
        """Sends the request to `base_url` + `target` (a path with its query, still encoded) and returns once the
        answer's status and headers are in. Raises UpstreamError when the upstream cannot be reached or breaks
        off before answering, UpstreamUnreachable when nothing was sent. `replayable`: whether sending the request
        twice does no harm (by default, when its method is idempotent, RFC 9110 section 9.2.2)."""
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"an upstream is an http(s) URL, not {base_url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (parts.scheme, parts.hostname, port)
        authority = parts.netloc.rsplit("@", 1)[-1].encode("latin-1")
        head = [f"{method} {parts.path.rstrip('/')}{target} HTTP/1.1\r\n".encode("latin-1"), b"host: ", authority,
                b"\r\n"]
        for name, value in headers:
            head += [name, b": ", value, b"\r\n"]
        if isinstance(body, bytes | bytearray):
            head.append(b"content-length: %d\r\n\r\n" % len(body))
            head.append(bytes(body))
        elif body is None:
            head.append(b"\r\n" if method in ("GET", "HEAD", "DELETE") else b"content-length: 0\r\n\r\n")
        else:
            head.append(b"transfer-encoding: chunked\r\n\r\n")
        request_head = b"".join(head)
        # A kept-alive connection the upstream closed meanwhile fails before any answer. A request that may be sent
        # twice is then sent again once, on a new connection; any other could have been carried out by an
        # upstream that died before answering, so it fails. A streamed body cannot be replayed: it always goes on
        # a new connection.
        if replayable is None:
            replayable = method in _IDEMPOTENT
        reused = self._take_idle(key) if not isinstance(body, AsyncIterator) else None
        if reused is not None:
            try:
                return await self._exchange(reused, request_head, None)
            except UpstreamError:
                if reused.received_any or not replayable:
                    raise
        connection = await self._connect(key)
        return await self._exchange(connection, request_head, body if isinstance(body, AsyncIterator) else None)

    async def _exchange(self, connection: _Connection, head: bytes, stream: AsyncIterator[bytes] | None
                        ) -> UpstreamResponse:
        connection._reset()
        try:
            await connection.write(head)
            if stream is not None:
                async for chunk in stream:
                    if chunk:
                        await connection.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    if connection.head_done:
                        # Answered before the body was all sent (a refusal): the rest is not wanted, and the
                        # connection, its request unfinished, cannot carry another.
                        connection.request_cut = True
                        break
                else:
                    await connection.write(b"0\r\n\r\n")
            while not connection.head_done:
                if connection.error is not None:
                    raise connection.error
                await connection.changed()
        except BaseException:
            connection.close()
            raise
        return UpstreamResponse(self, connection)

    async def _connect(self, key: tuple[str, str, int]) -> _Connection:
        scheme, host, port = key
        tls = None
        if scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(key), host, port, ssl=tls), self.connect_timeout_secs)
        except TimeoutError:
            raise UpstreamUnreachable(f"connecting took over {self.connect_timeout_secs:g} s") from None
        except OSError as exc:
            raise UpstreamUnreachable(f"connecting failed: {exc.strerror or exc}") from exc
        return connection

    def _take_idle(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if not connection.closed and now - connection.idle_since < self.idle_secs:
                return connection
            connection.close()
        return None

    def release(self, connection: _Connection) -> None:
        """Back to the pool when its answer was read to the end and the upstream keeps it alive; closed otherwise
        (an answer abandoned midway leaves the connection in an unknown state)."""
        idle = self._idle.setdefault(connection.key, [])
        if connection.reusable() and len(idle) < self.max_idle:
            connection.idle_since = time.monotonic()
            idle.append(connection)
        else:
            connection.close()

    def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
