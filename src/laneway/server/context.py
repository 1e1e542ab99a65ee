"""The request context: what the gateway knows of one request, built once at its edge.

The router hands it to the endpoint; every step of the request (the body,
the caller, the lane, the error shapes, the reply) reads and fills this one
object, so nothing is looked up twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

from laneway.server.asgi import Receive, Send
from laneway.server.dialect import OPENAI_CHAT, Dialect
from laneway.server.protocol import Departure


@dataclass(slots=True)
class RequestContext:
    """One request in flight: its channels, headers, and the lane once known.

    ``send`` adds ``X-Request-Id`` to the response head; ``dialect`` gives
    the error shapes of the endpoint (OpenAI's unless it speaks another format).
    """

    receive: Receive
    send: Send
    headers: dict[bytes, bytes]
    departure: Departure | None
    request_id: str
    path: str
    query: bytes
    """The raw query string (``refresh=2``), read only by the routes that take one."""
    lane: str = ""
    dialect: Dialect = OPENAI_CHAT


Handler = Callable[[RequestContext], Awaitable[None]]
"""An endpoint: answers the request of its context (or raises what the gateway maps)."""


class CallsInFlight:
    """Engine calls running now, for ``GET /healthz``; ``with calls:`` counts one.

    Shared by the gateways of successive configs (``serving.generations``), so the
    count covers calls draining on an old one. A plain context manager, not a
    generator: it is entered on every call.
    """

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.count -= 1
