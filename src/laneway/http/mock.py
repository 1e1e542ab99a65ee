"""``MockTransport``: a fake upstream that is a plain function (httpx's shape)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream
from laneway.http.sse import LineBlocks, lines_of

Handler = Callable[[HttpRequest], Awaitable[HttpResponse] | HttpResponse]


class _BufferedStream:
    def __init__(self, response: HttpResponse) -> None:
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self._body = response.body

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        """The whole body as one network read."""
        framing = LineBlocks()
        for block in (framing.feed(self._body), framing.rest()):
            if block:
                yield block

    def lines(self) -> AsyncIterator[bytes]:
        return lines_of(self.blocks())

    async def read(self) -> bytes:
        return self._body


class MockTransport:
    """Answers every request with ``handler(request)``; records what was sent."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.requests: list[HttpRequest] = []

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Call the handler (sync or async); honour ``max_bytes`` like the real transport."""
        self.requests.append(request)
        result = self._handler(request)
        response = result if isinstance(result, HttpResponse) else await result
        limit = request.max_bytes
        if limit is not None and len(response.body) > limit:
            raise AttemptFailure(
                FailureKind.TOO_LARGE, f"answer exceeds the response limit of {limit} bytes"
            )
        return response

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        """Serve the handler's whole answer as a stream of lines."""
        yield _BufferedStream(await self.send(request))

    async def aclose(self) -> None:
        """Nothing to release."""
