"""Serving the gateway over real loopback HTTP: uvicorn on a thread, an engine on the sim.

Each test module starts one gateway with the lanes it needs; every lane gets
a spec of its own (``unique_spec``), so sim counters and hits are per lane.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig
from laneway.core.records import CallObserver, CallRecord
from laneway.http import AiohttpTransport
from laneway.server import Gateway
from laneway.server.prompt import PromptServer
from laneway.server.protocol import ConnectionLimits
from laneway.serving.settings import connection_limits, uvicorn_config
from laneway.sim import RunningSim
from tests.helpers import sim_url

HELLO = [{"role": "user", "content": "hello"}]
CLOCK_GRAIN = 0.005
"""How early a server deadline may look by ``time.monotonic``: the gateway times connections on
uvloop's clock, read in whole milliseconds and cached per loop iteration, and a timer may run up
to a millisecond early (epoll's timeout granularity)."""


@dataclass
class RunningGateway:
    """A gateway serving on a daemon thread."""

    gateway: Gateway
    url: str

    @property
    def v1(self) -> str:
        return f"{self.url}/v1"


def source(sim: RunningSim, spec: str, **extra: Any) -> dict[str, Any]:
    """A source entry pointing at the sim behaving as ``spec``."""
    return {"provider": "openai", "base_url": sim_url(sim, spec), "model": "sim-model", **extra}


def config(lanes: dict[str, dict[str, Any]], **server: Any) -> LanewayConfig:
    """A config of ``lanes`` (lane bodies) and ``server`` settings."""
    return LanewayConfig.model_validate({"lanes": lanes, "server": server})


@contextmanager
def serve_gateway(
    settings: LanewayConfig,
    environ: Mapping[str, str] | None = None,
    observers: Sequence[CallObserver] = (),
) -> Iterator[RunningGateway]:
    """Serve ``settings`` on 127.0.0.1 and a free port until the block ends."""
    env = dict(environ or {})
    engine = build_engine(settings, env, transport=AiohttpTransport(), observers=observers)
    with serve_app(
        gateway_over(settings, engine, env), connection_limits(settings.server)
    ) as running:
        yield running


@contextmanager
def serve_app(gateway: Gateway, limits: ConnectionLimits | None = None) -> Iterator[RunningGateway]:
    """Serve a built ``gateway`` (lifespan included) until the block ends."""
    settings = uvicorn_config(gateway, host="127.0.0.1", port=0, drain_timeout=1.0, limits=limits)
    server = PromptServer(settings)
    thread = threading.Thread(target=server.run, name="laneway-gateway", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "gateway did not start"
        time.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield RunningGateway(gateway, f"http://127.0.0.1:{port}")
    finally:
        server.stop()
        thread.join(timeout=10)
        assert not thread.is_alive(), "gateway did not stop"


async def post(
    http: aiohttp.ClientSession, url: str, body: Any, **headers: str
) -> tuple[int, Mapping[str, str], Any]:
    """POST JSON (or raw bytes) and return status, headers and the decoded body."""
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    async with http.post(url, data=data, headers=headers) as response:
        return response.status, response.headers, orjson.loads(await response.read())


async def hits(http: aiohttp.ClientSession, sim: RunningSim, spec: str) -> int:
    """How many requests the sim received for ``spec``."""
    async with http.get(f"{sim.base_url}/_hits", params={"spec": spec}) as response:
        count: int = (await response.json())["count"]
        return count


def sse_events(raw: bytes) -> list[Any]:
    """Decode an SSE body: JSON payloads, and ``"[DONE]"`` as a string."""
    events: list[Any] = []
    for block in raw.split(b"\n\n"):
        if block:
            data = block.removeprefix(b"data: ")
            events.append("[DONE]" if data == b"[DONE]" else orjson.loads(data))
    return events


def streamed_text(events: list[Any]) -> str:
    """The content of the chunk events."""
    return "".join(
        (e["choices"][0]["delta"].get("content") or "")
        for e in events
        if isinstance(e, dict) and e.get("choices")
    )


class Records:
    """A call observer that keeps every record (the engine calls it on its loop)."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []

    def observe(self, record: CallRecord) -> None:
        self.records.append(record)


async def wait_until(condition: Callable[[], bool], timeout: float) -> None:
    """Poll ``condition`` until it holds; fail if it does not within ``timeout`` seconds."""
    started = time.perf_counter()
    while not condition():
        assert time.perf_counter() - started < timeout, "condition not met in time"
        await asyncio.sleep(0.005)
