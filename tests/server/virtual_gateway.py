"""The gateway's ASGI app in virtual time: caller, gateway and simulator on one clock.

``VirtualGateway`` builds the engine on a ``VirtualSim`` (its transport and
its ``VirtualClock``) and calls ``Gateway`` through ``AsgiTransport``, as
uvicorn would, so a lane's timeouts, backoff, breaker and health are timers
on the ``VirtualTimeLoop``: a fault row of tens of seconds runs at full scale
in milliseconds, and its times are exact. Sockets are not in the picture:
what needs one (a TCP reset, a refused port, uvicorn itself) is for the
loopback tests. Run the test with ``tests.virtual.in_virtual_time``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import orjson

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.chaos.asking import StreamedAnswer, StreamReading, request_body
from laneway.config.models import LanewayConfig
from laneway.core.transport import HttpRequest
from laneway.http.asgi import AsgiTransport
from tests.virtual import VirtualSim

GRAIN = 6
"""Decimals a virtual time is read to: it is a sum of float waits, and forty waits of
0.01 s must read 0.4 s, not 0.39999999999999997."""
URL = "http://127.0.0.1"
"""Where the caller sends its requests: a loopback name, as the gateway's host check wants."""


class VirtualGateway:
    """A gateway serving ``settings`` over ``vsim``, called in-process on its clock."""

    def __init__(
        self, vsim: VirtualSim, settings: LanewayConfig, environ: Mapping[str, str] | None = None
    ) -> None:
        env = dict(environ or {})
        self.clock = vsim.clock
        engine = build_engine(settings, env, transport=vsim.transport, clock=vsim.clock)
        self.gateway = gateway_over(settings, engine, env)
        self.client = AsgiTransport(self.gateway)

    async def ask(self, model: str, origin: float) -> StreamedAnswer:
        """One streamed chat call as ``chaos.asking.ask`` makes it; ``origin``: the series start."""
        started = self.clock.now()
        reading = StreamReading()
        body = orjson.dumps(request_body(model))
        request = HttpRequest("POST", f"{URL}/v1/chat/completions", {}, body)
        async with self.client.stream(request) as answer:
            if answer.headers.get("content-type", "").startswith("text/event-stream"):
                async for line in answer.lines():
                    if line.startswith(b"data:"):
                        reading.take(line[5:].strip())
            else:
                reading.take_body(answer.status, await answer.read())
        start, elapsed = started - origin, self.clock.now() - started
        return reading.answer(round(start, GRAIN), round(elapsed, GRAIN), answer.status)

    async def ask_series(self, model: str, starts: Sequence[float]) -> list[StreamedAnswer]:
        """Start a call at each of ``starts`` (seconds from now) whatever earlier calls do."""
        origin = self.clock.now()

        async def one(at: float) -> StreamedAnswer:
            await self.clock.sleep(max(0.0, origin + at - self.clock.now()))
            return await self.ask(model, origin)

        return list(await asyncio.gather(*(one(at) for at in starts)))
