"""uvicorn's httptools protocol, telling the gateway the moment a client leaves.

An ASGI application learns of a disconnect only by awaiting ``receive``, so
a plain ASGI app needs a second task per request parked on ``receive`` to
notice one (``DisconnectWatch``'s fallback). That task, its wake-up and its
cancellation cost more CPU per call than the rest of the request plumbing.
This protocol instead hands each request a ``Departure`` in its scope and
fires it from ``connection_lost``, where the transport first knows: no task,
and the call is cancelled in the same loop iteration the socket closed.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DEPARTURE = "laneway.departure"
"""The scope key of a request's ``Departure`` (absent under other servers)."""


class Departure:
    """One request's disconnect signal: cancels the task that is waiting for the answer."""

    __slots__ = ("gone", "task")

    def __init__(self) -> None:
        self.gone = False
        self.task: asyncio.Task[object] | None = None

    def leave(self) -> None:
        """The client left before its answer was complete."""
        self.gone = True
        if self.task is not None:
            self.task.cancel()


class GatewayProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` plus a ``Departure`` per request (uvicorn's ``http=`` class)."""

    def on_headers_complete(self) -> None:
        """Give the request its ``Departure`` before its task first runs."""
        super().on_headers_complete()
        if self.cycle is not None:
            self.cycle.scope[DEPARTURE] = Departure()  # type: ignore[literal-required]

    def connection_lost(self, exc: Exception | None) -> None:
        """Fire the unanswered request's ``Departure``, then let uvicorn clean up."""
        cycle = self.cycle
        super().connection_lost(exc)
        if cycle is not None and cycle.disconnected:
            departure = cycle.scope.get(DEPARTURE)
            if isinstance(departure, Departure):
                departure.leave()
