"""Closed-loop load from one async HTTP client library; prints one JSON result line.

Run as a separate process per measurement so every candidate starts equally cold and
so candidates that live in another venv (``httpx`` in ``bench/.venv-tmp``) are measured
the same way as those in the project venv. Needs only the stdlib, uvloop and the
client library under test.

    python bench/_client_load.py aiohttp http://127.0.0.1:8000/v1/chat/completions 32 2.5
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import uvloop

from _fixed_asgi import CHAT_COMPLETION, REQUEST_BODY
from _report import percentile

Post = Callable[[], Awaitable[None]]
_HEADERS = {"Content-Type": "application/json"}
_WARMUP_S = 0.3


class BadResponseError(RuntimeError):
    """The upstream answered something other than the fixed completion."""


def _check(status: int, body: bytes) -> None:
    if status != 200 or len(body) != len(CHAT_COMPLETION):
        raise BadResponseError(f"status={status} len={len(body)}")


@asynccontextmanager
async def _aiohttp(url: str, conns: int) -> AsyncIterator[Post]:
    """aiohttp with a pool sized to the concurrency, so no request waits for a socket."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=conns)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def post() -> None:
            async with session.post(url, data=REQUEST_BODY, headers=_HEADERS) as resp:
                _check(resp.status, await resp.read())

        yield post


@asynccontextmanager
async def _httpx_like(module_name: str, url: str, conns: int) -> AsyncIterator[Post]:
    """httpx and httpx2 share one API, so one adapter measures both."""
    module = __import__(module_name)
    limits = module.Limits(max_connections=conns, max_keepalive_connections=conns)
    async with module.AsyncClient(limits=limits, timeout=10.0) as client:

        async def post() -> None:
            resp = await client.post(url, content=REQUEST_BODY, headers=_HEADERS)
            _check(resp.status_code, resp.content)

        yield post


@asynccontextmanager
async def _pyreqwest(url: str, conns: int) -> AsyncIterator[Post]:
    """pyreqwest (Rust's reqwest on tokio, its I/O on the library's own runtime thread)."""
    from pyreqwest.client import ClientBuilder

    builder = ClientBuilder().max_connections(conns).error_for_status(False)
    async with builder.build() as client:

        async def post() -> None:
            request = client.post(url).headers(_HEADERS).body_bytes(REQUEST_BODY).build()
            resp = await request.send()
            _check(resp.status, bytes(await resp.bytes()))

        yield post


def _client(name: str, url: str, conns: int) -> contextlib.AbstractAsyncContextManager[Post]:
    if name == "aiohttp":
        return _aiohttp(url, conns)
    if name == "pyreqwest":
        return _pyreqwest(url, conns)
    if name in ("httpx", "httpx2"):
        return _httpx_like(name, url, conns)
    raise SystemExit(f"unknown client {name!r}")


async def _loop(post: Post, deadline: float, latencies_ns: list[int]) -> None:
    """One closed-loop user: next request only after the previous one finished."""
    clock = time.perf_counter_ns
    while time.perf_counter() < deadline:
        start = clock()
        await post()
        latencies_ns.append(clock() - start)


async def _phase(post: Post, concurrency: int, seconds: float) -> tuple[list[int], float]:
    latencies: list[int] = []
    started = time.perf_counter()
    deadline = started + seconds
    await asyncio.gather(*(_loop(post, deadline, latencies) for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


async def measure(name: str, url: str, concurrency: int, seconds: float) -> dict[str, object]:
    """Warm the pool (connections opened, code paths hot), then measure."""
    async with _client(name, url, concurrency) as post:
        await _phase(post, concurrency, _WARMUP_S)
        latencies, elapsed = await _phase(post, concurrency, seconds)
    micros = [ns / 1000.0 for ns in latencies]
    return {
        "client": name,
        "version": importlib.metadata.version(name),
        "concurrency": concurrency,
        "requests": len(micros),
        "rps": len(micros) / elapsed,
        "p50_us": percentile(micros, 50),
        "p99_us": percentile(micros, 99),
    }


def main(argv: list[str]) -> int:
    """Parse ``NAME URL CONCURRENCY SECONDS``, run under uvloop, print JSON."""
    name, url, concurrency, seconds = argv[0], argv[1], int(argv[2]), float(argv[3])
    result = uvloop.run(measure(name, url, concurrency, seconds))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
