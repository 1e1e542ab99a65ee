"""Connections that never finish a request are closed; over the cap, /healthz still answers.

The tests share a gateway with short limits (the cap's test has one of its
own), and speak raw HTTP/1.1 over asyncio streams, so they control exactly
which bytes are sent and when.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

from laneway.app import build_engine
from laneway.app.gateway import gateway_over
from laneway.config.models import LanewayConfig, ServerConfig
from laneway.http.asgi import AsgiTransport
from laneway.server.asgi import Receive, Scope, Send
from laneway.server.protocol import CONNECTIONS, REFUSAL
from laneway.serving.settings import MAX_CONNECTIONS_CEILING, connection_limits
from laneway.sim import RunningSim, create_app
from tests.helpers import unique_spec
from tests.server.support import (
    CLOCK_GRAIN,
    HELLO,
    RunningGateway,
    config,
    serve_app,
    serve_gateway,
    source,
    wait_until,
)

HEADER_TIMEOUT, BODY_TIMEOUT, KEEPALIVE_TIMEOUT = 0.2, 0.3, 0.2
"""The module gateway's limits (seconds): its sweeper looks every 50 ms."""
SLACK = 2.0
"""Seconds a closure may come after its deadline (the sweep tick plus a busy machine)."""

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture(scope="module")
def gw(sim: RunningSim) -> Iterator[RunningGateway]:
    lanes = {"chat": {"sources": [source(sim, unique_spec(""))]}}
    settings = config(
        lanes,
        header_timeout=HEADER_TIMEOUT,
        body_timeout=BODY_TIMEOUT,
        keepalive_timeout=KEEPALIVE_TIMEOUT,
        max_header_bytes="8KiB",
        max_headers=20,
    )
    with serve_gateway(settings) as running:
        yield running


OPENED: list[asyncio.StreamWriter] = []


@pytest.fixture(autouse=True)
async def close_connections() -> AsyncIterator[None]:
    """Close every connection a test opened, even one that failed half way."""
    yield
    while OPENED:
        OPENED.pop().close()


async def connect(gw: RunningGateway) -> Stream:
    host, port = gw.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    OPENED.append(writer)
    return reader, writer


async def read_answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One whole answer (it has a Content-Length): its head and its body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
    length = next(
        int(line.partition(b":")[2])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    return head, await reader.readexactly(length)


def request(
    path: str, body: bytes = b"", headers: Sequence[str] = (), method: str = "POST"
) -> bytes:
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    if body or method == "POST":
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def until_closed(reader: asyncio.StreamReader, started: float) -> tuple[float, bytes]:
    """Seconds from ``started`` until the server closed, and what it sent before."""
    data = await asyncio.wait_for(reader.read(), timeout=10)
    return time.monotonic() - started, data


async def test_idle_and_partial_connections_are_closed_by_their_timeouts(gw) -> None:
    """Idle, partial-head and partial-body connections all end, each at its own deadline."""
    started = time.monotonic()
    idle = [await connect(gw) for _ in range(3)]
    partial_head = [await connect(gw) for _ in range(3)]
    for _, writer in partial_head:
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    partial_body = [await connect(gw) for _ in range(3)]
    body_started = time.monotonic()
    for _, writer in partial_body:
        writer.write(request("/v1/chat/completions", b"x" * 100)[:-90])
    header_closed = await asyncio.gather(
        *(until_closed(reader, started) for reader, _ in idle + partial_head)
    )
    body_closed = await asyncio.gather(
        *(until_closed(reader, body_started) for reader, _ in partial_body)
    )
    for elapsed, data in header_closed:
        assert data == b"" and HEADER_TIMEOUT - CLOCK_GRAIN <= elapsed < HEADER_TIMEOUT + SLACK
    for elapsed, data in body_closed:
        assert data == b"" and BODY_TIMEOUT - CLOCK_GRAIN <= elapsed < BODY_TIMEOUT + SLACK


async def test_an_idle_keep_alive_connection_is_closed(gw) -> None:
    reader, writer = await connect(gw)
    started = time.monotonic()  # before the request: the idle deadline is after its answer
    writer.write(request("/healthz", method="GET"))
    head, _ = await read_answer(reader)
    assert head.startswith(b"HTTP/1.1 200")
    elapsed, data = await until_closed(reader, started)
    assert data == b"" and KEEPALIVE_TIMEOUT - CLOCK_GRAIN <= elapsed < KEEPALIVE_TIMEOUT + SLACK


async def test_a_body_sent_after_an_early_answer_does_not_keep_the_connection(gw) -> None:
    """Answered before its body was read (404 here), then idle: closed like any idle one."""
    reader, writer = await connect(gw)
    writer.write(request("/nowhere", b"12345")[:-5])
    head, _ = await read_answer(reader)
    assert head.startswith(b"HTTP/1.1 404")
    started = time.monotonic()
    writer.write(b"12345")
    elapsed, data = await until_closed(reader, started)  # kept open, it would time out at 10 s
    assert data == b"" and elapsed < KEEPALIVE_TIMEOUT + SLACK


async def test_a_head_over_max_header_bytes_is_431(gw) -> None:
    reader, writer = await connect(gw)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 10_000)
    _, data = await until_closed(reader, time.monotonic())
    assert data.startswith(b"HTTP/1.1 431 ")
    answer = orjson.loads(data.partition(b"\r\n\r\n")[2])
    assert answer["error"]["code"] == "header_too_large"
    assert "server.max_header_bytes" in answer["error"]["message"]


@pytest.mark.parametrize("piece", [0, 500], ids=["one-write", "many-writes"])
async def test_a_whole_head_over_max_header_bytes_is_431_however_it_is_read(gw, piece) -> None:
    """A 9 KiB head (limit 8 KiB) is 431 in one write, or in many with the last one over it."""
    data = request("/healthz", headers=[f"X-Big: {'a' * 9 * 1024}"], method="GET")
    reader, writer = await connect(gw)
    under = 8000 if piece else 0
    for start in range(0, under, piece or 1):
        writer.write(data[start : min(start + piece, under)])
        await writer.drain()
    writer.write(data[under:])
    _, answer = await until_closed(reader, time.monotonic())
    assert answer.startswith(b"HTTP/1.1 431 ")


async def test_a_body_in_the_same_write_as_its_head_does_not_count_as_head(gw, http) -> None:
    """Only the head counts against max_header_bytes: a 20 KiB body sent with it is read."""
    body = orjson.dumps({"model": "chat", "messages": [{"role": "user", "content": "a" * 20_000}]})
    reader, writer = await connect(gw)
    writer.write(request("/v1/chat/completions", body, ["Content-Type: application/json"]))
    head, _ = await read_answer(reader)
    assert head.startswith(b"HTTP/1.1 200 ")


async def test_a_32_mb_header_is_cut_off_early(gw, http) -> None:
    """The issue's 32 MB header: the server stops reading long before the end, and lives on."""
    _, writer = await connect(gw)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
    chunk, sent = b"a" * 65536, 0
    with pytest.raises(ConnectionError):  # reset once the server has closed
        while sent < 32 * 1024 * 1024:
            writer.write(chunk)
            await writer.drain()
            sent += len(chunk)
    assert sent < 32 * 1024 * 1024
    writer.close()
    async with http.get(f"{gw.url}/healthz") as response:
        assert response.status == 200


async def test_too_many_headers_is_431(gw) -> None:
    reader, writer = await connect(gw)
    extra = [f"X-H{n}: v" for n in range(30)]
    writer.write(request("/healthz", headers=extra, method="GET"))
    _, data = await until_closed(reader, time.monotonic())
    assert data.startswith(b"HTTP/1.1 431 ") and b"more than 20 headers" in data


async def test_a_long_request_id_is_refused_before_telemetry(gw, http) -> None:
    body = {"model": "chat", "messages": HELLO}
    headers = {"X-Request-Id": "r" * 129}
    async with http.post(f"{gw.v1}/chat/completions", json=body, headers=headers) as response:
        answer = await response.json()
    assert response.status == 400 and answer["error"]["param"] == "X-Request-Id"


def chat_body() -> bytes:
    return orjson.dumps({"model": "slow", "messages": HELLO})


async def call(gw: RunningGateway, path: str, body: bytes | None = None) -> tuple[bytes, Any]:
    """One request on a connection of its own: the status line and the decoded answer."""
    reader, writer = await connect(gw)
    close = ["Connection: close"]
    if body is None:
        writer.write(request(path, headers=close, method="GET"))
    else:
        writer.write(request(path, body, close))
    data = await asyncio.wait_for(reader.read(), timeout=10)
    writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], orjson.loads(payload) if payload else None


class HeldUpstream:
    """The simulator in the gateway's own loop (``AsgiTransport``), holding calls until released.

    Busy connections stay busy for as long as the test needs, not for a sleep
    long enough on a loaded machine.
    """

    def __init__(self) -> None:
        self.sim = create_app()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._open: asyncio.Event | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._open is None:
            self._loop, self._open = asyncio.get_running_loop(), asyncio.Event()
        await self._open.wait()
        await self.sim(scope, receive, send)

    def release(self) -> None:
        """Let every held call, and every later one, through (from the test's thread)."""
        assert self._loop is not None and self._open is not None
        self._loop.call_soon_threadsafe(self._open.set)


@contextmanager
def held_gateway(settings: LanewayConfig, upstream: HeldUpstream) -> Iterator[RunningGateway]:
    """``serve_gateway`` of ``settings``, its upstream ``upstream``."""
    engine = build_engine(settings, {}, transport=AsgiTransport(upstream))
    with serve_app(
        gateway_over(settings, engine, {}), connection_limits(settings.server)
    ) as running:
        yield running


async def test_over_the_connection_cap_idle_ones_make_room_and_busy_ones_refuse() -> None:
    """A flood of idle connections cannot lock out /healthz; real work fills the cap honestly."""
    upstream, spec = HeldUpstream(), unique_spec("ok")
    held = {"provider": "openai", "base_url": f"http://held/b/{spec}/v1", "model": "sim-model"}
    lanes = {"slow": {"sources": [held]}}
    with held_gateway(config(lanes, max_connections=4, header_timeout="30s"), upstream) as gw:
        opened = CONNECTIONS.opened
        flood = [await connect(gw) for _ in range(4)]
        for _, writer in flood:
            writer.write(b"GET /healthz HTTP/1.1\r\n")
            await writer.drain()
        await wait_until(lambda: CONNECTIONS.opened >= opened + 4, timeout=5)
        evicted = CONNECTIONS.closed.get("evicted", 0)
        status, answer = await call(gw, "/healthz")
        assert status == b"HTTP/1.1 200 OK" and answer["status"] == "ok"
        assert CONNECTIONS.closed.get("evicted", 0) == evicted + 1
        for _, writer in flood:
            writer.close()

        calls = [asyncio.create_task(call(gw, "/v1/chat/completions", chat_body())) for _ in "abcd"]
        await wait_until(lambda: gw.gateway.in_flight == 4, timeout=5)
        refused = CONNECTIONS.refused
        reader, writer = await connect(gw)
        assert await asyncio.wait_for(reader.read(), timeout=5) == REFUSAL
        writer.close()
        assert CONNECTIONS.refused == refused + 1
        upstream.release()
        for status, answer in await asyncio.gather(*calls):
            assert status == b"HTTP/1.1 200 OK" and answer["model"] == "sim-model"
        assert len(upstream.sim.hit_times(spec)) == 4
        status, _ = await call(gw, "/healthz")
        assert status == b"HTTP/1.1 200 OK"


def test_workers_share_the_connection_cap() -> None:
    assert connection_limits(ServerConfig(max_connections=10), workers=3).max_connections == 3
    assert connection_limits(ServerConfig(max_connections=2), workers=3).max_connections == 1
    assert 1 <= connection_limits(ServerConfig()).max_connections <= MAX_CONNECTIONS_CEILING
