"""``AsgiTransport``: upstream requests served by an ASGI app in the same event loop.

No socket is opened, so the app's waits are the loop's timers and nothing
else: on ``laneway.clocks.VirtualTimeLoop`` an upstream that sleeps five
seconds (``laneway.sim``'s ``sleep=5``) costs no real time, and a call loop
test against it is exact and deterministic. The transport behaves as the
aiohttp one does where a test can tell: headers are read by lower-case name,
an answer past ``max_bytes`` is ``too_large``, an app that ends before
finishing its answer has ``cut`` it, and a caller that stops waiting (an
attempt cut at its timeout, a stream closed early) is a client that left:
the app hears ``http.disconnect`` and its task is ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Mapping,
    MutableMapping,
)
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream
from laneway.http.sse import LineBlocks, lines_of

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]
_END = b""
"""Queued after the last body chunk of a complete answer."""


class _Exchange:
    """One request in flight through the app: its task, head and body chunks."""

    def __init__(self, app: AsgiApp, request: HttpRequest) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head = asyncio.Event()
        self.chunks: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._left = asyncio.Event()
        self._body_sent = False
        self.task = asyncio.ensure_future(app(_scope(request), self._receive(request), self._send))
        self.task.add_done_callback(self._ended)

    def _receive(self, request: HttpRequest) -> Receive:
        async def receive() -> Message:
            if not self._body_sent:
                self._body_sent = True
                return {"type": "http.request", "body": request.body, "more_body": False}
            await self._left.wait()
            return {"type": "http.disconnect"}

        return receive

    async def _send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
            self.head.set()
        elif message["type"] == "http.response.body":
            body = bytes(message.get("body", b""))
            if body:
                self.chunks.put_nowait(body)
            if not message.get("more_body", False):
                self.chunks.put_nowait(_END)

    def _ended(self, _: asyncio.Future[None]) -> None:
        """Mark where the app stopped: ``None`` after the chunks means it never finished."""
        self.head.set()
        self.chunks.put_nowait(None)

    async def opened(self) -> None:
        """Wait for the response head; an app that ends without one cut the connection."""
        await self.head.wait()
        if not self.status:
            raise AttemptFailure(
                FailureKind.CONNECT, f"upstream closed before answering{self._why()}"
            )

    async def next_chunk(self) -> bytes | None:
        """The next body chunk, ``None`` at a complete end; ``cut`` if the app stopped short."""
        chunk = await self.chunks.get()
        if chunk is None:
            raise AttemptFailure(FailureKind.CUT, f"answer broken off{self._why()}")
        return None if chunk == _END else chunk

    def _why(self) -> str:
        if self.task.done() and not self.task.cancelled() and self.task.exception() is not None:
            return f": {self.task.exception()!r}"
        return ""

    async def leave(self) -> None:
        """Hang up: the app hears the disconnect and is ended, as a server ends a dropped request.

        ``asyncio.wait`` neither raises the app's error (read here, so it is
        not reported as lost) nor hides a cancellation of the caller.
        """
        self._left.set()
        self.task.cancel()
        await asyncio.wait([self.task])
        if not self.task.cancelled():
            self.task.exception()


def _scope(request: HttpRequest) -> dict[str, Any]:
    url = urlsplit(request.url)
    headers = [(k.lower().encode(), v.encode()) for k, v in request.headers.items()]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": url.scheme or "http",
        "path": url.path,
        "raw_path": url.path.encode(),
        "query_string": url.query.encode(),
        "root_path": "",
        "headers": [(b"host", (url.netloc or "asgi").encode()), *headers],
        "client": ("127.0.0.1", 0),
        "server": (url.hostname or "asgi", url.port or 80),
    }


class _AsgiStream:
    """An answer in flight, read line by line as the app sends it."""

    def __init__(self, exchange: _Exchange) -> None:
        self.status = exchange.status
        self.headers: Mapping[str, str] = exchange.headers
        self._exchange = exchange
        self._framing = LineBlocks()

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        """Yield the body as the app sends it, cut at line endings (``LineBlocks``).

        An answer the app did not finish raises ``cut``.
        """
        framing = self._framing
        while (chunk := await self._exchange.next_chunk()) is not None:
            block = framing.feed(chunk)
            if block:
                yield block
        rest = framing.rest()
        if rest:
            yield rest

    def lines(self) -> AsyncIterator[bytes]:
        """Yield lines without endings; an answer the app did not finish raises ``cut``."""
        return lines_of(self.blocks())

    async def read(self) -> bytes:
        """Read the rest of the body."""
        body = bytearray(self._framing.rest())
        while (chunk := await self._exchange.next_chunk()) is not None:
            body += chunk
        return bytes(body)


class AsgiTransport:
    """``Transport`` to an ASGI app running in the caller's event loop; records what was sent."""

    def __init__(self, app: AsgiApp) -> None:
        self._app = app
        self.requests: list[HttpRequest] = []

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send and read the whole answer (``too_large`` past ``request.max_bytes``)."""
        async with self.stream(request) as answer:
            body = await answer.read()
        limit = request.max_bytes
        if limit is not None and len(body) > limit:
            raise AttemptFailure(
                FailureKind.TOO_LARGE, f"answer exceeds the response limit of {limit} bytes"
            )
        return HttpResponse(answer.status, answer.headers, body)

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        """Open the answer once the app sends its head; on exit the client leaves."""
        self.requests.append(request)
        exchange = _Exchange(self._app, request)
        try:
            await exchange.opened()
            yield _AsgiStream(exchange)
        finally:
            await exchange.leave()

    async def aclose(self) -> None:
        """Nothing pooled to release: every exchange ends with its request."""
