"""The scripted upstream: each source's n-th request is answered by the n-th spec of its script.

``Scripted`` is a ``Transport`` in front of the simulator's ASGI app (served
in-process on the case's ``VirtualClock``): a source's URL names the source
(``/route/<name>/v1``), and each request is passed on to the simulator as
``/b/<spec>/v1`` with the spec its script holds for that request (the last
spec repeats). It logs every exchange: which source, which spec, when it
began and when it ended (the answer read, or the caller gone), so the judge
can hold the call to what the upstream did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from laneway.core.clock import TimeSource
from laneway.core.transport import HttpRequest, HttpResponse, HttpStream
from laneway.http.asgi import AsgiTransport

BASE = "http://sim.virtual"
ROUTE = "/route/"


def source_url(name: str) -> str:
    """The base URL of source ``name`` of a case."""
    return f"{BASE}{ROUTE}{name}/v1"


@dataclass(slots=True)
class Exchange:
    """One upstream request: the source, the spec that answered, when it began and ended."""

    source: str
    spec: str
    began: float
    ended: float | None = None


class Scripted:
    """Routes each source's requests to the simulator by its script; logs the exchanges."""

    def __init__(
        self, sim: AsgiTransport, clock: TimeSource, faults: Mapping[str, tuple[str, ...]]
    ) -> None:
        self._sim = sim
        self._clock = clock
        self._faults = faults
        self.log: list[Exchange] = []
        self._counts: dict[str, int] = {}

    def _route(self, request: HttpRequest) -> tuple[HttpRequest, Exchange]:
        name, _, rest = request.url.partition(ROUTE)[2].partition("/")
        seen = self._counts.get(name, 0)
        self._counts[name] = seen + 1
        script = self._faults[name]
        spec = script[min(seen, len(script) - 1)]
        exchange = Exchange(name, spec, self._clock.now())
        self.log.append(exchange)
        return dataclasses.replace(request, url=f"{BASE}/b/{spec}/{rest}"), exchange

    async def send(self, request: HttpRequest) -> HttpResponse:
        routed, exchange = self._route(request)
        try:
            return await self._sim.send(routed)
        finally:
            exchange.ended = self._clock.now()

    @asynccontextmanager
    async def stream(self, request: HttpRequest) -> AsyncIterator[HttpStream]:
        routed, exchange = self._route(request)
        try:
            async with self._sim.stream(routed) as answer:
                yield answer
        finally:
            exchange.ended = self._clock.now()

    async def aclose(self) -> None:
        """Nothing to release: the simulator outlives the case."""

    def hits(self, names: list[str]) -> list[Exchange]:
        """The exchanges of the sources ``names``, in order."""
        return [exchange for exchange in self.log if exchange.source in names]
