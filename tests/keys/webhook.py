"""A loopback webhook receiver for budget alerts: records each POST's JSON body."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer


@dataclass
class Receiver:
    """What the receiver got; ``status`` is what it answers, ``hold`` keeps it from answering."""

    url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)
    posts: int = 0
    status: int = 200
    hold: asyncio.Event | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        """Wait until ``count`` POSTs arrived (``timeout`` is slack for a loaded host)."""
        async with asyncio.timeout(timeout):
            while self.posts < count:
                self.arrived.clear()
                await self.arrived.wait()


@asynccontextmanager
async def receiver() -> AsyncIterator[Receiver]:
    """A receiver on 127.0.0.1 and a free port, until the block ends."""
    got = Receiver()

    async def alert(request: web.Request) -> web.Response:
        got.posts += 1
        got.bodies.append(orjson.loads(await request.read()))
        got.arrived.set()
        if got.hold is not None:
            await got.hold.wait()
        return web.Response(status=got.status)

    app = web.Application()
    app.router.add_post("/hook", alert)
    app.router.add_post("/hook/{token}", alert)
    async with TestServer(app, host="127.0.0.1") as server:
        got.url = str(server.make_url("/hook"))
        yield got
