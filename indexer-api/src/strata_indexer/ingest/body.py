"""Reading a request body as a stream, refusing it (413) as soon as it passes the configured size."""

from __future__ import annotations

from fastapi import Request

from strata_core.errors import PayloadTooLarge


async def read_limited(request: Request, max_bytes: int) -> bytearray:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLarge(f"body of {declared} bytes exceeds the limit of {max_bytes} bytes")
    # One growing buffer rather than a list joined at the end, which would hold the body twice at its peak.
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > max_bytes:
            raise PayloadTooLarge(f"body exceeds the limit of {max_bytes} bytes")
        body += chunk
    return body
