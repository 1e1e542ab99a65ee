"""A fixed-length answer leaves in one socket write: its head and body together.

uvicorn writes a response's head when the application sends
``http.response.start`` and its body when it sends ``http.response.body``:
two ``send`` system calls for every non-streamed answer, where the loopback
delivery to the reader's socket runs inside each. ``OneWriteCycle`` keeps the
head of an answer that declares its ``content-length`` and writes it with the
body. A chunked answer (a stream) still has its head written at once, so a
caller sees the status before the first token.
"""

from __future__ import annotations

import asyncio
from typing import cast

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.http.httptools_impl import RequestResponseCycle


class _HeadKeeper:
    """Stands in for the transport while uvicorn writes a head, and keeps its bytes."""

    __slots__ = ("head",)

    def __init__(self) -> None:
        self.head = b""

    def write(self, data: bytes) -> None:
        self.head = data


class _HeadFirst:
    """Stands in for the transport while uvicorn writes a body: the kept head goes first."""

    __slots__ = ("head", "transport")

    def __init__(self, transport: asyncio.Transport, head: bytes) -> None:
        self.transport = transport
        self.head = head

    def write(self, data: bytes) -> None:
        self.transport.write(self.head + data)

    def close(self) -> None:
        self.transport.close()


class OneWriteCycle(RequestResponseCycle):
    """uvicorn's cycle, with the head of a fixed-length answer written with its body."""

    kept_head: bytes | None = None

    async def send(self, message: ASGISendEvent) -> None:
        """Keep a fixed-length head; write it in front of the body that follows."""
        transport = self.transport
        if message["type"] == "http.response.start" and self.scope["method"] != "HEAD":
            keeper = _HeadKeeper()
            self.transport = cast(asyncio.Transport, keeper)
            try:
                await super().send(message)
            finally:
                self.transport = transport
            if self.chunked_encoding:
                transport.write(keeper.head)
            else:
                self.kept_head = keeper.head
            return
        head = self.kept_head
        if head is None:
            await super().send(message)
            return
        self.kept_head = None
        self.transport = cast(asyncio.Transport, _HeadFirst(transport, head))
        try:
            await super().send(message)
        finally:
            self.transport = transport
