"""The proxy's upstream HTTP client against small asyncio servers that answer byte by byte as each test needs:
kept-alive reuse, a connection closed while idle, chunked answers and streamed request bodies, an answer broken
off midway, an upstream that answers before the body is sent, and one that is not there."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from strata_services.local.processes import free_port
from strata_services.proxy.upstream_http import UpstreamError, UpstreamPool

pytestmark = pytest.mark.timeout(30)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """Counts connections; each connection is served by `handler` until it returns."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []

    async def __aenter__(self) -> str:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            finally:
                writer.close()

        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The request head and its whole body (by content-length, or chunked)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.lower().split(b"\r\n")
    length = next((int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length:")), None)
    if length is not None:
        return head, await reader.readexactly(length)
    if b"transfer-encoding: chunked" in lines:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return head, body
            body += chunk[:-2]
    return head, b""


def answer(body: bytes, status: bytes = b"200 OK", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\ncontent-length: %d\r\n" % len(body) + extra + b"\r\n" + body


async def echo_forever(server: RawServer) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head, body = await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            server.requests.append(head)
            writer.write(answer(b"got " + body))
            await writer.drain()
    return handler


async def test_connections_are_kept_alive_and_the_head_is_what_was_asked() -> None:
    server = RawServer(None)  # type: ignore[arg-type]
    server.handler = await echo_forever(server)
    pool = UpstreamPool()
    async with server as url:
        for i in range(3):
            response = await pool.request("POST", url, f"/v1/query?i={i}", [(b"x-request-id", b"r1")],
                                          b"select %d" % i)
            assert response.status == 200
            assert await response.read() == b"got select %d" % i
            await response.aclose()
    pool.close()
    assert server.connections == 1
    first = server.requests[0].decode()
    assert first.startswith("POST /v1/query?i=0 HTTP/1.1\r\n")
    assert f"host: {url.split('//')[1]}" in first and "x-request-id: r1" in first


async def test_a_connection_the_upstream_closed_while_idle_is_not_reused_and_the_request_still_goes() -> None:
    async def one_answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"ok"))
        await writer.drain()
        # Like a server whose keep-alive timeout ran out: it closes without saying so in its answer.

    server = RawServer(one_answer_then_close)
    pool = UpstreamPool()
    async with server as url:
        for _ in range(3):
            response = await pool.request("GET", url, "/healthz", [])
            assert await response.read() == b"ok"
            await response.aclose()
            await asyncio.sleep(0.05)
    pool.close()
    assert server.connections == 3


async def test_a_request_on_a_connection_closed_as_it_is_reused_is_sent_again_once() -> None:
    async def closes_after_reading_the_second(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(b"first"))
        await writer.drain()
        # The second request arrives on a connection this server no longer serves: closed unanswered.
        await read_request(reader)

    server = RawServer(closes_after_reading_the_second)
    pool = UpstreamPool()
    async with server as url:
        first = await pool.request("GET", url, "/a", [])
        assert await first.read() == b"first"
        await first.aclose()
        second = await pool.request("POST", url, "/b", [], b"payload", replayable=True)
        assert await second.read() == b"first"
        await second.aclose()
        # A POST is not sent twice unless its caller says it may be: it could have been carried out.
        with pytest.raises(UpstreamError, match="closed the connection"):
            await pool.request("POST", url, "/c", [], b"payload")
    pool.close()
    assert server.connections == 2


async def test_a_chunked_answer_arrives_chunk_by_chunk_and_a_streamed_body_goes_chunked() -> None:
    release = asyncio.Event()
    seen: list[bytes] = []

    async def chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, body = await read_request(reader)
        seen.extend([head, body])
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()
        await release.wait()
        writer.write(b"4\r\nlast\r\n0\r\n\r\n")
        await writer.drain()
        await read_request(reader)

    async def body() -> AsyncIterator[bytes]:
        for part in (b"one,", b"", b"two"):
            yield part

    pool = UpstreamPool()
    async with RawServer(chunked) as url:
        response = await pool.request("POST", url, "/ingest", [], body())
        assert response.status == 200 and response.content_length is None
        chunks = response.chunks()
        assert await anext(chunks) == b"first"
        release.set()
        assert b"".join([chunk async for chunk in chunks]) == b"last"
        await response.aclose()
    pool.close()
    assert b"transfer-encoding: chunked" in seen[0] and seen[1] == b"one,two"


async def test_an_answer_broken_off_midway_raises_and_the_connection_is_not_reused() -> None:
    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part")
        await writer.drain()

    server = RawServer(broken)
    pool = UpstreamPool()
    async with server as url:
        response = await pool.request("GET", url, "/v1/query", [])
        with pytest.raises(UpstreamError, match="broke off"):
            await response.read()
        await response.aclose()
        again = await pool.request("GET", url, "/v1/query", [])
        await again.aclose()
    pool.close()
    assert server.connections == 2


async def test_an_answer_before_the_body_is_sent_stops_the_body() -> None:
    sent: list[int] = []

    async def refuses_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer(b"too large", b"413 Content Too Large"))
        await writer.drain()
        await asyncio.sleep(1)

    async def endless() -> AsyncIterator[bytes]:
        while True:
            sent.append(1)
            yield b"x" * 65536
            await asyncio.sleep(0.01)

    pool = UpstreamPool()
    async with RawServer(refuses_at_once) as url:
        response = await pool.request("POST", url, "/ingest", [], endless())
        assert response.status == 413 and await response.read() == b"too large"
        await response.aclose()
    pool.close()
    assert len(sent) < 50


async def test_an_upstream_that_is_not_there_is_an_upstream_error_naming_it() -> None:
    pool = UpstreamPool()
    with pytest.raises(UpstreamError, match="connecting failed"):
        await pool.request("GET", f"http://127.0.0.1:{free_port()}", "/healthz", [])
    pool.close()


async def test_invalid_http_from_the_upstream_is_an_upstream_error() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.5)

    pool = UpstreamPool()
    async with RawServer(garbage) as url:
        with pytest.raises(UpstreamError, match="not valid HTTP"):
            await pool.request("GET", url, "/healthz", [])
    pool.close()
