"""Run one case in virtual time: through the library, and through the gateway's ASGI app.

Each run builds its product afresh from the case's config (a fraction of a
millisecond), so no breaker, health score, quota or pushback mark leaks from
one case into the next, on one ``VirtualTimeLoop`` and one simulator that
every case of the test shares. A ``Call`` is one call as its caller saw it
(the reply or the error, the HTTP answer at the gateway) next to what was
recorded of it: the ``CallRecord`` of each lane it ran, its access-log lines
and the upstream exchanges it made. The gateway is called as a client on the
OpenAI SDK's defaults calls it (``tests.oracle.sdk``): one ``Call`` per try.
"""

from __future__ import annotations

import asyncio
import io
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from laneway import Laneway
from laneway.accounting.pricer import Pricer
from laneway.app import assemble
from laneway.app.gateway import gateway_over
from laneway.clocks import VirtualClock
from laneway.core.errors import CallFailed
from laneway.core.records import CallRecord
from laneway.core.transport import HttpRequest
from laneway.core.types import Attempt, Usage
from laneway.http.asgi import AsgiTransport
from laneway.metrics import Metrics
from laneway.server.access_log import AccessLog
from laneway.sim import create_app
from tests.oracle import sdk
from tests.oracle.cases import MAIN, Case
from tests.oracle.upstream import Exchange, Scripted
from tests.server.support import Records

MESSAGES = [{"role": "user", "content": "Say hello."}]
GATEWAY = "http://127.0.0.1/v1/chat/completions"


@dataclass
class Call:
    """One call as its caller saw it, and what the product recorded of it."""

    began: float
    ended: float = 0.0
    error: CallFailed | None = None
    attempts: tuple[Attempt, ...] = ()
    usage: Usage | None = None
    cost: Decimal | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    records: list[CallRecord] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)


@dataclass
class Run:
    """Every call of a run (the library's one, or the SDK's tries), and the product's figures."""

    calls: list[Call]
    metrics: Metrics
    pricer: Pricer
    upstream: Scripted
    draws: Draws


class Draws(random.Random):
    """The engine's generator, seeded by the case, keeping each number drawn.

    Each draw is kept with the count of upstream exchanges made before it, so
    ``judge.hold_walk`` can give ``check``'s walk the backoffs a lane's
    jitter drew (the draw after a failed exchange is its retry's backoff).
    """

    def __init__(self, seed: int, upstream: Scripted) -> None:
        self.upstream = upstream
        self.drawn: list[tuple[int, float]] = []
        super().__init__(seed)

    def random(self) -> float:
        """The next number, kept."""
        value = super().random()
        self.drawn.append((len(self.upstream.log), value))
        return value


class Bench:
    """The loop, clock and simulator every case of a test runs on."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.sim = AsgiTransport(create_app(self.clock.now, self.clock.wall))

    def run(self, case: Case) -> tuple[Run, Run]:
        """The case through the library, then through the gateway (fresh state each)."""
        return self.clock.run(self._both(case))

    async def _both(self, case: Case) -> tuple[Run, Run]:
        return await self.library(case), await self.gateway(case)

    async def library(self, case: Case) -> Run:
        upstream, capture = Scripted(self.sim, self.clock, case.faults), Records()
        lw = Laneway.from_settings(
            case.config,
            environ={},
            transport=upstream,
            clock=self.clock,
            observers=[capture],
        )
        draws = lw.engine.loop.rng = Draws(case.seed, upstream)
        call = Call(self.clock.now())
        try:
            await _library_call(lw, case, call)
        except CallFailed as exc:
            call.error, call.attempts = exc, exc.attempts
        call.ended = self.clock.now()
        await lw.aclose()
        call.records, call.exchanges = capture.records, upstream.log
        return Run([call], lw.metrics, lw.pricer, upstream, draws)

    async def gateway(self, case: Case) -> Run:
        upstream, capture, log = (
            Scripted(self.sim, self.clock, case.faults),
            Records(),
            io.StringIO(),
        )
        built = assemble(
            case.config,
            {},
            None,
            transport=upstream,
            clock=self.clock,
            observers=[capture],
            access_log=lambda cost: AccessLog(cost, log),
        )
        draws = built.engine.loop.rng = Draws(case.seed, upstream)
        client = AsgiTransport(gateway_over(case.config, built.engine, {}, metrics=built.metrics))
        calls: list[Call] = []

        async def send(headers: dict[str, str]) -> tuple[int, dict[str, str]]:
            call = Call(self.clock.now())
            seen, lines, requests = len(capture.records), log.tell(), len(upstream.log)
            await _gateway_call(client, case, headers, call)
            await asyncio.sleep(0)  # the access log writes on the loop's next turn
            call.ended = self.clock.now()
            call.records = capture.records[seen:]
            log.seek(lines)
            call.lines = [orjson.loads(line) for line in log.read().splitlines()]
            call.exchanges = upstream.log[requests:]
            calls.append(call)
            return call.status, call.headers

        await sdk.with_retries(send, self.clock, random.Random(case.seed))
        await built.engine.aclose()
        return Run(calls, built.metrics, built.pricer, upstream, draws)


async def _library_call(lw: Laneway, case: Case, call: Call) -> None:
    if case.stream:
        stream = lw.chat_stream(MAIN, MESSAGES)
        try:
            async for _ in stream:
                pass
        finally:
            call.attempts = stream.attempts
        call.usage, call.cost = stream.usage, stream.cost
        return
    reply = await lw.chat(MAIN, MESSAGES)
    call.attempts, call.usage, call.cost = reply.attempts, reply.usage, reply.cost


async def _gateway_call(
    client: AsgiTransport, case: Case, headers: dict[str, str], call: Call
) -> None:
    body: dict[str, Any] = {"model": MAIN, "messages": MESSAGES}
    if case.stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    request = HttpRequest(
        "POST", GATEWAY, {"content-type": "application/json", **headers}, orjson.dumps(body)
    )
    async with client.stream(request) as answer:
        call.status, call.headers = answer.status, dict(answer.headers)
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            call.body = await _events(answer.lines())
        else:
            call.body = orjson.loads(await answer.read())


async def _events(lines: Any) -> dict[str, Any]:
    """A stream read as the SDK reads it: its content, its usage chunk, or its error event."""
    out: dict[str, Any] = {"content": "", "usage": None}
    async for line in lines:
        data = line[5:].strip() if line.startswith(b"data:") else b""
        if not data or data == b"[DONE]":
            continue
        event = orjson.loads(data)
        if "error" in event:
            return {**out, **event}
        if event.get("usage"):
            out["usage"] = event["usage"]
        for choice in event.get("choices") or ():
            out["content"] += (choice.get("delta") or {}).get("content") or ""
    return out
