"""The HTTP port: how the engine reaches an upstream, and nothing more.

Adapters (aiohttp in ``laneway.http``, ``MockTransport`` for tests) implement
``Transport``. Timeouts are not the transport's business: the engine cancels
the awaiting task at the attempt's bound, and adapters must release the
connection when cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import field
from typing import Protocol

from laneway.core.values import value


@value
class HttpRequest:
    """An upstream request, fully built by a provider adapter.

    ``max_bytes`` caps the answer body ``Transport.send`` will read; past it
    the read stops and the attempt fails as ``too_large`` (``None``: no cap).
    """

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    max_bytes: int | None = None


@value
class HttpResponse:
    """A complete upstream answer. Headers are looked up by lower-case name."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class HttpStream(Protocol):
    """An upstream answer whose body arrives as server-sent events, read by block or by line."""

    status: int
    headers: Mapping[str, str]

    def blocks(self) -> AsyncGenerator[bytes, None]:
        """Yield the body one network read at a time, each cut at its last line ending.

        A block is whole lines with their endings (a line split across reads
        waits for the next); a last line without an ending comes alone at the end.
        """
        ...

    def lines(self) -> AsyncIterator[bytes]:
        """Yield body lines without their line endings."""
        ...

    async def read(self) -> bytes:
        """Read the whole remaining body (used for error answers)."""
        ...


class Transport(Protocol):
    """Sends requests upstream. Raises ``AttemptFailure`` kinds ``connect``/``cut``."""

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send and read the whole answer (``too_large`` past ``request.max_bytes``)."""
        ...

    def stream(self, request: HttpRequest) -> AbstractAsyncContextManager[HttpStream]:
        """Send and expose the answer as a stream of lines."""
        ...

    async def aclose(self) -> None:
        """Release pooled connections."""
        ...
