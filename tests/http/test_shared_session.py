"""The pooled session is shared by every caller: nothing one answer sets rides on another request.

A loopback upstream, named ``localhost`` (a jar refuses the cookies of an IP address),
answers the first request with ``Set-Cookie`` and records every request's head; the
second request (another caller's, through the same transport) must carry no ``Cookie``.
"""

from __future__ import annotations

import asyncio

from laneway.core.transport import HttpRequest
from laneway.http import AiohttpTransport

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nSet-Cookie: session=caller-one; Path=/\r\n\r\nok"


async def test_a_cookie_set_for_one_caller_is_not_sent_for_the_next() -> None:
    heads: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            heads.append(head.lower())
            writer.write(ANSWER)
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"http://localhost:{server.sockets[0].getsockname()[1]}/v1/models"
    transport = AiohttpTransport()
    try:
        async with server:
            for _ in range(2):
                answer = await transport.send(HttpRequest("GET", url))
                assert answer.status == 200 and answer.body == b"ok"
    finally:
        await transport.aclose()
    assert len(heads) == 2
    assert b"cookie:" not in heads[1]
