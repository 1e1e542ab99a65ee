"""A transport that records the JSON bodies sent upstream, and the sim's hit counter."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import aiohttp
import orjson

from laneway.core.transport import HttpRequest, HttpResponse, HttpStream
from laneway.http import AiohttpTransport
from laneway.sim import RunningSim


class SpyTransport:
    """The real aiohttp transport, keeping every request it sends."""

    def __init__(self) -> None:
        self.inner = AiohttpTransport()
        self.requests: list[HttpRequest] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Each request's JSON body, in sending order."""
        return [orjson.loads(request.body) for request in self.requests]

    async def send(self, request: HttpRequest) -> HttpResponse:
        self.requests.append(request)
        return await self.inner.send(request)

    def stream(self, request: HttpRequest) -> AbstractAsyncContextManager[HttpStream]:
        self.requests.append(request)
        return self.inner.stream(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def sim_hits(sim: RunningSim, spec: str) -> int:
    """How many requests the sim served for ``spec``."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{sim.base_url}/_hits", params={"spec": spec}) as response,
    ):
        data = await response.json()
    count: int = data["count"]
    return count
