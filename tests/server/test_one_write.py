"""A fixed-length answer leaves in one transport write; a stream's head leaves at once.

The protocol is driven with a transport that records each write, so the test
sees exactly what uvicorn hands the socket.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.server import ServerState

from laneway.server.asgi import Receive, Scope, Send
from laneway.server.protocol import ConnectionLimits, GatewayProtocol, LimitedConfig

BODY = b'{"ok":true}'


class RecordingTransport(asyncio.Transport):
    """A transport that keeps what is written to it, in order, one item per write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )


async def fixed_length(scope: Scope, receive: Receive, send: Send) -> None:
    headers = [(b"content-length", str(len(BODY)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})


async def streamed(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def head_then_fail(scope: Scope, receive: Receive, send: Send) -> None:
    headers = [(b"content-length", b"5")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    raise RuntimeError("the body never came")


async def answer(app: Any, request: bytes) -> RecordingTransport:
    """Feed ``request`` to a gateway protocol serving ``app``; the transport once answered."""
    config = LimitedConfig(app, limits=ConnectionLimits(), log_level="critical")
    config.load()
    protocol = GatewayProtocol(config, ServerState(), app_state={})
    transport = RecordingTransport()
    protocol.connection_made(transport)
    protocol.data_received(request)
    for _ in range(100):
        cycle = protocol.cycle
        if transport.closed or (cycle is not None and cycle.response_complete):
            break
        await asyncio.sleep(0)
    return transport


GET = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n"


async def test_a_fixed_length_answer_is_one_write_of_head_and_body() -> None:
    transport = await answer(fixed_length, GET)
    [only] = transport.writes
    assert only.startswith(b"HTTP/1.1 200 OK\r\n")
    assert only.endswith(b"\r\n\r\n" + BODY)


async def test_a_streams_head_is_written_before_its_first_chunk() -> None:
    transport = await answer(streamed, GET)
    head, *chunks = transport.writes
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    assert b"".join(chunks) == b"9\r\ndata: 1\n\n\r\n0\r\n\r\n"


async def test_a_head_request_is_answered_with_its_head_alone() -> None:
    transport = await answer(fixed_length, b"HEAD / HTTP/1.1\r\nhost: x\r\n\r\n")
    [only] = transport.writes
    assert only.startswith(b"HTTP/1.1 200 OK\r\n") and only.endswith(b"\r\n\r\n")


async def test_an_app_that_fails_after_its_head_closes_the_connection() -> None:
    transport = await answer(head_then_fail, GET)
    assert transport.closed
    assert transport.writes == []
