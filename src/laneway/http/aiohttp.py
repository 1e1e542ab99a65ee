"""The production transport: one pooled keep-alive aiohttp session.

aiohttp was chosen by measurement (``bench/http_stack.py``, recorded in
``docs/benchmarks.md``), and kept where a bare client beat it: pyreqwest, twice
aiohttp's rate alone, saved nothing inside ``laneway serve`` (``bench/transport_ab.py``).
Cancellation of the awaiting task closes the connection, so a cut attempt leaves
nothing behind.

aiohttp's errors are mapped here and nowhere else, each to the attempt
failure the retry policy classifies: a connection that cannot be made or is
dropped before an answer is ``connect``, a body broken off is ``cut``, an
answer that is not HTTP is ``malformed``. The aiohttp error stays chained as
``__cause__`` (``raise ... from exc``), so a traceback shows what the socket said.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager

import aiohttp

from laneway.core.errors import AttemptFailure
from laneway.core.failures import FailureKind
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream
from laneway.http.sse import LineBlocks, lines_of

_CONNECT_ERRORS = aiohttp.ClientConnectionError
"""Refused, reset, unreachable, disconnected: no usable connection (``ClientOSError`` included)."""


READ_CHUNK = 64 * 1024


async def _read_body(response: aiohttp.ClientResponse, limit: int | None) -> bytes:
    """The whole body, or ``too_large`` as soon as it passes ``limit``.

    A declared ``Content-Length`` over the limit fails before reading, and
    an uncompressed one within it is read as the network delivered it
    (aiohttp reads no more than it declares); a chunked or compressed body
    (its length is not what it inflates to) fails at the first chunk past
    the limit, so memory stays bounded. Chunks are joined once, at the end:
    a 2 MB embeddings answer was copied three times (``bytearray`` growth
    and copy-out; ``response.read`` joins twice), and each fresh 2 MB buffer
    costs its page faults as well as its copy.
    """
    declared = response.content_length
    if limit is None:
        return await response.read()
    if declared is not None and declared > limit:
        raise _too_large(limit, declared)
    if declared is not None and response.headers.get("Content-Encoding", "identity") == "identity":
        return b"".join([chunk async for chunk, _ in response.content.iter_chunks()])
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(READ_CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise _too_large(limit, size)
    return b"".join(chunks)


def _too_large(limit: int, seen: int) -> AttemptFailure:
    return AttemptFailure(
        FailureKind.TOO_LARGE,
        f"answer exceeds the response limit of {limit} bytes (max_response_bytes); "
        f"{seen} bytes arrived before reading stopped",
    )


def _not_http(exc: aiohttp.ClientResponseError) -> AttemptFailure:
    """An answer aiohttp could not parse as HTTP (a bad status line or header)."""
    return AttemptFailure(
        FailureKind.MALFORMED, f"upstream answer is not valid HTTP: {exc.message}"
    )


class AiohttpStream:
    """An open upstream answer read line by line."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self._response = response

    async def blocks(self) -> AsyncGenerator[bytes, None]:
        """Yield the body one network read at a time, cut at its last line ending.

        One await per network read (``LineBlocks``), not aiohttp's ``readline``
        per line: a quick upstream's events arrive several to a read, and
        readline's machinery cost more than parsing the event. A broken body
        raises ``cut``.
        """
        framing = LineBlocks()
        try:
            async for data in self._response.content.iter_any():
                block = framing.feed(data)
                if block:
                    yield block
            rest = framing.rest()
            if rest:
                yield rest
        except aiohttp.ClientPayloadError as exc:
            raise AttemptFailure(FailureKind.CUT, f"stream broken off: {exc}") from exc
        except _CONNECT_ERRORS as exc:
            raise AttemptFailure(FailureKind.CUT, f"stream broken off: {exc}") from exc

    def lines(self) -> AsyncIterator[bytes]:
        """Yield lines without endings; a broken body raises ``cut``."""
        return lines_of(self.blocks())

    async def read(self) -> bytes:
        """Read the rest of the body."""
        try:
            return await self._response.read()
        except (aiohttp.ClientPayloadError, _CONNECT_ERRORS) as exc:
            raise AttemptFailure(FailureKind.CUT, f"answer broken off: {exc}") from exc


class AiohttpTransport:
    """``Transport`` over a shared ``aiohttp.ClientSession`` (created lazily in the loop).

    Its cookie jar keeps nothing: the session is shared by every caller, so a cookie one
    upstream answer sets must not ride on another caller's request.
    """

    def __init__(self, limit: int = 1000) -> None:
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._limit, keepalive_timeout=30.0)
            self._session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=True,
                cookie_jar=aiohttp.DummyCookieJar(),
            )
        return self._session

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send and read the whole answer; connect and body failures are classified."""
        try:
            async with self._client().request(
                request.method, request.url, data=request.body, headers=request.headers
            ) as response:
                body = await _read_body(response, request.max_bytes)
                return HttpResponse(response.status, response.headers, body)
        except aiohttp.ClientPayloadError as exc:
            raise AttemptFailure(FailureKind.CUT, f"answer broken off: {exc}") from exc
        except _CONNECT_ERRORS as exc:
            raise AttemptFailure(FailureKind.CONNECT, f"cannot reach upstream: {exc}") from exc
        except aiohttp.ClientResponseError as exc:
            raise _not_http(exc) from exc

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        """Open a streaming answer; the connection is released on exit."""
        try:
            response = await self._client().request(
                request.method, request.url, data=request.body, headers=request.headers
            )
        except _CONNECT_ERRORS as exc:
            raise AttemptFailure(FailureKind.CONNECT, f"cannot reach upstream: {exc}") from exc
        except aiohttp.ClientResponseError as exc:
            raise _not_http(exc) from exc
        try:
            yield AiohttpStream(response)
        finally:
            response.close()

    async def aclose(self) -> None:
        """Close the session and its pooled connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None
